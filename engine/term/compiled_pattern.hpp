// A PCRE2 regular expression compiled once, with PCRE2's JIT where the machine has it:
// immutable, so one compiled pattern may be matched from several threads (each with its own
// match data). The status rules' titles and the CLI's `search` and `wait --match` compile theirs
// here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

struct pcre2_real_code_8;

namespace backscroll::term {

using CompiledPattern = std::shared_ptr<const pcre2_real_code_8>;

// Why a pattern does not compile: PCRE2's message, and the offset in the pattern it names.
struct PatternError {
  std::string message;
  std::size_t offset = 0;
};

// `options`: PCRE2's compile options (PCRE2_UTF, PCRE2_CASELESS, ...).
tl::expected<CompiledPattern, PatternError> compile_pattern(std::string_view pattern,
                                                            std::uint32_t options);

}  // namespace backscroll::term
