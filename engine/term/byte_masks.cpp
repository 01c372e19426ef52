#include "engine/term/byte_masks.hpp"

namespace backscroll::term {

#if defined(__x86_64__)
// Every feature BACKSCROLL_WIDE_MASKS compiles for.
bool wide_masks_available() noexcept {
  static const bool available = __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi");
  return available;
}
#else
bool wide_masks_available() noexcept { return false; }
#endif

}  // namespace backscroll::term
