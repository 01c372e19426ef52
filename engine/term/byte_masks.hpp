// ByteMasks: 64 bytes of a stream sorted into the classes the look ahead's blocks need
// (PlainScrollScan::blocks()), one bit per byte (bit i is byte i). On colored output the look
// ahead meets a token every ten or so bytes; a byte loop pays a mispredicted branch at most of
// them, the blocks read the masks instead (docs/plain-scroll-skip.md, "Blocks of 64 bytes").
//
// classify_64_wide() takes the 64 bytes in one step with AVX-512BW, where the CPU has it
// (wide_masks_available(), asked once); classify_64_bytewise() is the reference the tests hold
// it to. With 16 bytes per step (SSE2) the masks cost more than the byte loop saved, so a CPU
// without AVX-512BW keeps the byte loop.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace backscroll::term {

struct ByteMasks {
  std::uint64_t esc = 0;        // ESC
  std::uint64_t param = 0;      // a CSI parameter byte: a digit, ':' or ';'
  std::uint64_t separator = 0;  // ':' or ';'
  std::uint64_t cr = 0;
  std::uint64_t lf = 0;
  // What moves the cursor off column 0 in a plain run: a byte from 0x20 (DEL aside, which is a
  // stop) and TAB. Bytes of a sequence are among them; blocks() takes those out.
  std::uint64_t text = 0;
  // What a block does not take: C0 controls other than ESC, CR, LF, TAB and BS, and DEL.
  std::uint64_t stop = 0;

  friend bool operator==(const ByteMasks&, const ByteMasks&) = default;
};

// One byte's classes (each mask 0 or 1).
constexpr ByteMasks classify_byte(std::uint8_t b) noexcept {
  const bool control = b < 0x20;
  ByteMasks m;
  m.esc = b == 0x1b;
  m.param = b >= '0' && b <= ';';
  m.separator = b == ':' || b == ';';
  m.cr = b == '\r';
  m.lf = b == '\n';
  m.text = !control || b == '\t';
  m.stop = (control && b != 0x1b && b != '\r' && b != '\n' && b != '\t' && b != '\b') || b == 0x7f;
  return m;
}

inline ByteMasks classify_64_bytewise(const std::uint8_t* p) noexcept {
  ByteMasks m;
  for (unsigned i = 0; i < 64; ++i) {
    const ByteMasks one = classify_byte(p[i]);
    m.esc |= one.esc << i;
    m.param |= one.param << i;
    m.separator |= one.separator << i;
    m.cr |= one.cr << i;
    m.lf |= one.lf << i;
    m.text |= one.text << i;
    m.stop |= one.stop << i;
  }
  return m;
}

bool wide_masks_available() noexcept;

#if defined(__x86_64__)
// Not LZCNT: clang 14 cannot ask the CPU for it, and where it is missing its encoding runs as
// BSR, another answer. The highest set bit comes from BSR itself.
#define BACKSCROLL_WIDE_MASKS __attribute__((target("avx512bw,popcnt,bmi")))

// The same in one step (AVX-512BW), only where the CPU has it (wide_masks_available()); a caller
// marked BACKSCROLL_WIDE_MASKS has it inlined.
BACKSCROLL_WIDE_MASKS inline ByteMasks classify_64_wide(const std::uint8_t* p) noexcept {
  const __m512i v = _mm512_loadu_si512(p);
  ByteMasks m;
  m.esc = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(0x1b));
  m.param = _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('0')),
                                   _mm512_set1_epi8(';' - '0'));
  // ':' | 1 == ';' | 1 == ';', and no other byte.
  m.separator =
      _mm512_cmpeq_epi8_mask(_mm512_or_si512(v, _mm512_set1_epi8(1)), _mm512_set1_epi8(';'));
  m.cr = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\r'));
  m.lf = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\n'));
  const std::uint64_t control = _mm512_cmple_epu8_mask(v, _mm512_set1_epi8(0x1f));
  const std::uint64_t tab = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\t'));
  const std::uint64_t backspace = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\b'));
  m.text = ~control | tab;
  m.stop = (control & ~(m.esc | m.cr | m.lf | tab | backspace)) |
           _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(0x7f));
  return m;
}
#else
#define BACKSCROLL_WIDE_MASKS
inline ByteMasks classify_64_wide(const std::uint8_t* p) noexcept {
  return classify_64_bytewise(p);
}
#endif

}  // namespace backscroll::term
