// A regular expression over terminal text, for `search` and `wait --match`: PCRE2 with JIT,
// UTF-8 with invalid sequences allowed (a stream holds whatever the program wrote), multiline.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "engine/term/compiled_pattern.hpp"
#include "shm/error.hpp"

struct pcre2_real_match_data_8;

namespace backscroll::cli {

class Pattern {
 public:
  // bad_request (a usage error for the CLI) when it does not compile, with where and why.
  static Result<std::unique_ptr<Pattern>> compile(const std::string& pattern, bool ignore_case);
  ~Pattern();
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;

  // The first match in text[from, end), as [start, stop) offsets of `text`.
  std::optional<std::pair<std::size_t, std::size_t>> find(std::string_view text, std::size_t from,
                                                          std::size_t end);
  std::optional<std::pair<std::size_t, std::size_t>> find(std::string_view text) {
    return find(text, 0, text.size());
  }

 private:
  explicit Pattern(term::CompiledPattern code);
  term::CompiledPattern code_;
  pcre2_real_match_data_8* data_;
};

}  // namespace backscroll::cli
