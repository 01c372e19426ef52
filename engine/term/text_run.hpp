// text_run_length: how many bytes from `p` on are text to a terminal's ground state (every byte
// but the C0 controls and DEL: printable ASCII and the bytes of UTF-8 characters). The look
// ahead (plain_scroll_scan.cpp) spends most of a plain flood in such runs; the mirror's fast
// path (grid_fast_path.cpp) in runs of printable ASCII (ascii_run_length).
//
// 16 bytes per step with SSE2, the x86-64 baseline (so no run-time choice is needed there); a
// byte at a time elsewhere. Lines of terminal output are short (tens of bytes), so wider steps
// (AVX2) would gain little over the run's setup.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace backscroll::term {

constexpr bool is_text_byte(std::uint8_t b) noexcept { return b >= 0x20 && b != 0x7f; }

inline std::size_t text_run_length(const std::uint8_t* p, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(0x20);
  const __m128i del = _mm_set1_epi8(0x7f);
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    // A byte stops the run when it is below 0x20 (unsigned: max(b, 0x20) != b) or DEL.
    const __m128i text = _mm_cmpeq_epi8(_mm_max_epu8(v, space), v);
    const __m128i stop =
        _mm_or_si128(_mm_xor_si128(text, _mm_set1_epi8(-1)), _mm_cmpeq_epi8(v, del));
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(stop));
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(mask));
  }
#endif
  while (i < n && is_text_byte(p[i])) ++i;
  return i;
}

// How many bytes from `p` on are printable ASCII (0x20-0x7e), the same way.
inline std::size_t ascii_run_length(const std::uint8_t* p, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i below = _mm_set1_epi8(0x1f);
  const __m128i del = _mm_set1_epi8(0x7f);
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    // Signed: bytes from 0x80 are negative, so "greater than 0x1f" is 0x20-0x7f; DEL aside.
    const __m128i printable = _mm_andnot_si128(_mm_cmpeq_epi8(v, del), _mm_cmpgt_epi8(v, below));
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(printable)) ^ 0xffffu;
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(mask));
  }
#endif
  while (i < n && p[i] >= 0x20 && p[i] < 0x7f) ++i;
  return i;
}

}  // namespace backscroll::term
