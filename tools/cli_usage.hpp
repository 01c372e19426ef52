// What a wrong command line is told (docs/cli.md, "Conventions"): CLI11's parse errors turned
// into one line that names the slip and, where one is likely, the fix: a near-miss command or
// option ("did you mean 'list'?"), `--` before a program's arguments, `-n 5` for tail.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace backscroll::cli {

// Edit distance with swaps: insertions, deletions, substitutions and transpositions of
// neighbours each count 1 ("lsit" is 1 from "list"); bytes, not characters.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate `typed` most likely meant: the closest within an edit distance of 2 (1 for
// words of up to 4 bytes), or the only one `typed` is a prefix of. nullopt when none is close
// or two are equally close.
std::optional<std::string> nearest(std::string_view typed, const std::vector<std::string>& names);

// The commands people may type (hidden diagnostics excluded), in --help order.
std::vector<std::string> visible_commands(const CLI::App& app);

// The message for a parse error of `app` (the top-level app) given `args` (argv without the
// program name), without the "backscroll: usage: " prefix. Every message ends with where to
// look: a suggestion, or "(see 'backscroll CMD --help')".
std::string usage_message(const CLI::App& app, const CLI::ParseError& error,
                          std::span<const std::string> args);

}  // namespace backscroll::cli
