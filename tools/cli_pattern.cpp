#include "tools/cli_pattern.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace backscroll::cli {

Result<std::unique_ptr<Pattern>> Pattern::compile(const std::string& pattern, bool ignore_case) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  const std::uint32_t options =
      PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE | (ignore_case ? PCRE2_CASELESS : 0);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    return fail(Errc::bad_request, "bad pattern at offset " + std::to_string(offset) + ": " +
                                       reinterpret_cast<const char*>(message));
  }
  auto p = std::unique_ptr<Pattern>(new Pattern(code));
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT (unsupported) it interprets
  return p;
}

Pattern::Pattern(pcre2_code* code)
    : code_(code), data_(pcre2_match_data_create_from_pattern(code, nullptr)) {}

Pattern::~Pattern() {
  pcre2_match_data_free(data_);
  pcre2_code_free(code_);
}

std::optional<std::pair<std::size_t, std::size_t>> Pattern::find(std::string_view text,
                                                                 std::size_t from,
                                                                 std::size_t end) {
  const int rc =
      pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), end, from, 0, data_, nullptr);
  if (rc < 0) return std::nullopt;  // no match (or a resource limit: treated as none)
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data_);
  return std::pair<std::size_t, std::size_t>(ovector[0], ovector[1]);
}

}  // namespace backscroll::cli
