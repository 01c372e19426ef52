#include "engine/term/compiled_pattern.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace backscroll::term {

tl::expected<CompiledPattern, PatternError> compile_pattern(std::string_view pattern,
                                                            std::uint32_t options) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    return tl::unexpected(PatternError{reinterpret_cast<const char*>(message), offset});
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT (unsupported) it interprets
  return CompiledPattern(code,
                         [](const pcre2_code* c) { pcre2_code_free(const_cast<pcre2_code*>(c)); });
}

}  // namespace backscroll::term
