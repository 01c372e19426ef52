#include "tools/cli_pattern.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace backscroll::cli {

Result<std::unique_ptr<Pattern>> Pattern::compile(const std::string& pattern, bool ignore_case) {
  auto code = term::compile_pattern(pattern, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE |
                                                 (ignore_case ? PCRE2_CASELESS : 0u));
  if (!code) {
    return fail(Errc::bad_request, "bad pattern at offset " + std::to_string(code.error().offset) +
                                       ": " + code.error().message);
  }
  return std::unique_ptr<Pattern>(new Pattern(std::move(*code)));
}

Pattern::Pattern(term::CompiledPattern code)
    : code_(std::move(code)), data_(pcre2_match_data_create_from_pattern(code_.get(), nullptr)) {}

Pattern::~Pattern() { pcre2_match_data_free(data_); }

std::optional<std::pair<std::size_t, std::size_t>> Pattern::find(std::string_view text,
                                                                 std::size_t from,
                                                                 std::size_t end) {
  const int rc = pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(text.data()), end, from, 0,
                             data_, nullptr);
  if (rc < 0) return std::nullopt;  // no match (or a resource limit: treated as none)
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data_);
  return std::pair<std::size_t, std::size_t>(ovector[0], ovector[1]);
}

}  // namespace backscroll::cli
