// `backscroll search`: the lines of an actor's history that match a regular expression, with
// their cursors (docs/cli.md; docs/recorder.md, "Search"). The raw bytes come from the engine's
// `history` (ring, completed-session cache, transcript), a page at a time; term::PlainLines
// turns them into plain text lines (escape sequences stripped, overwrites applied) and PCRE2 (JIT)
// matches a page's text at once. Memory is bounded by a page and the context lines.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "shm/cursor.hpp"
#include "tools/cli_engine.hpp"

namespace backscroll::cli {

struct SearchArgs {
  std::string actor;
  std::string pattern;         // PCRE2 syntax, UTF-8
  std::optional<Cursor> from;  // default: the oldest byte retained
  std::optional<Cursor> to;    // default: the committed cursor
  std::size_t context = 0;     // lines before and after each match
  bool ignore_case = false;
  bool json = false;
  std::optional<std::size_t> max_count;  // stop after this many matching lines
};

// 0 when a line matched, 1 when none did, 2 for a bad pattern or range, else an error's code.
int run_search(const EngineTarget& engine, const SearchArgs& args);

}  // namespace backscroll::cli
