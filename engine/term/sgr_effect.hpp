// SgrEffect: which parts of the pen an SGR sequence (ESC [ params m, `;` separators only) sets,
// whatever the pen was before it, as libvterm 0.1.4 applies it. The look ahead
// (plain_scroll_scan.hpp) drops an earlier SGR from the pen it rebuilds when a later one sets
// every part the earlier one touched. `known` is false for anything it does not model exactly
// (a reset, faint, fonts, underline styles, colour forms with missing or extra arguments,
// unknown parameters): such an SGR is never dropped and never drops another.
#pragma once

#include <cstdint>
#include <string_view>

namespace backscroll::term {

struct SgrEffect {
  enum Part : std::uint16_t {
    kBold = 1u << 0,
    kItalic = 1u << 1,
    kUnderline = 1u << 2,
    kBlink = 1u << 3,
    kReverse = 1u << 4,
    kConceal = 1u << 5,
    kStrike = 1u << 6,
    kForeground = 1u << 7,
    kBackground = 1u << 8,
  };
  bool known = false;
  std::uint16_t parts = 0;  // when known: the parts it sets

  // Whether applying `later` after this one leaves the pen as applying `later` alone does.
  bool overridden_by(const SgrEffect& later) const noexcept {
    return known && later.known && parts != 0 && (parts & ~later.parts) == 0;
  }
};

// `sgr`: a whole sequence, ESC [ ... m, parameters of digits separated by ';'.
SgrEffect sgr_effect(std::string_view sgr) noexcept;

}  // namespace backscroll::term
