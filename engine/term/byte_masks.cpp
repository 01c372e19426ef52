#include "engine/term/byte_masks.hpp"

namespace backscroll::term {

#if defined(__x86_64__)
// Every feature BACKSCROLL_WIDE_MASKS compiles for: on a CPU without LZCNT its encoding runs as
// BSR and gives another answer, so AVX-512BW alone is not enough to ask.
bool wide_masks_available() noexcept {
  static const bool available = __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("popcnt") &&
                                __builtin_cpu_supports("lzcnt") && __builtin_cpu_supports("bmi");
  return available;
}
#else
bool wide_masks_available() noexcept { return false; }
#endif

}  // namespace backscroll::term
