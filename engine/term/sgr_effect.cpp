#include "engine/term/sgr_effect.hpp"

#include <array>
#include <cstddef>

namespace backscroll::term {
namespace {

// Parameters beyond this are left unmodelled (libvterm keeps 16).
constexpr std::size_t kMaxParams = 16;

// The attribute SGR n switches on, and 20 + n off (0: not one modelled here; 21 is a double
// underline and 22 also ends faint, which libvterm 0.1.4 does not model).
std::uint16_t attribute_part(std::uint32_t p) {
  if (p >= 23 && p <= 29) p -= 20;
  switch (p) {
    case 1: return SgrEffect::kBold;
    case 3: return SgrEffect::kItalic;
    case 4: return SgrEffect::kUnderline;
    case 5: return SgrEffect::kBlink;
    case 7: return SgrEffect::kReverse;
    case 8: return SgrEffect::kConceal;
    case 9: return SgrEffect::kStrike;
    default: return 0;
  }
}

}  // namespace

SgrEffect sgr_effect(std::string_view sgr) noexcept {
  SgrEffect unknown;
  if (sgr.size() < 3 || sgr[0] != '\x1b' || sgr[1] != '[' || sgr.back() != 'm') return unknown;
  const std::string_view body = sgr.substr(2, sgr.size() - 3);
  if (body.empty()) return unknown;  // CSI m: a reset, which the scan handles itself
  std::array<std::uint32_t, kMaxParams> params{};
  std::size_t count = 0;
  std::uint32_t value = 0;
  bool digits = false;
  for (const char c : body) {
    if (c == ';') {
      if (!digits || count == kMaxParams) return unknown;  // an empty parameter means 0: a reset
      params[count++] = value;
      value = 0;
      digits = false;
    } else if (c >= '0' && c <= '9') {
      if (value > 100000) return unknown;
      value = value * 10 + static_cast<std::uint32_t>(c - '0');
      digits = true;
    } else {
      return unknown;
    }
  }
  if (!digits || count == kMaxParams) return unknown;
  params[count++] = value;

  SgrEffect effect{true, 0};
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t p = params[i];
    if (const std::uint16_t part = attribute_part(p); part != 0) {
      effect.parts |= part;
    } else if ((p >= 30 && p <= 37) || p == 39 || (p >= 90 && p <= 97)) {
      effect.parts |= SgrEffect::kForeground;
    } else if ((p >= 40 && p <= 47) || p == 49 || (p >= 100 && p <= 107)) {
      effect.parts |= SgrEffect::kBackground;
    } else if (p == 38 || p == 48) {
      const std::uint16_t colour = p == 38 ? SgrEffect::kForeground : SgrEffect::kBackground;
      // 5;n (an index) or 2;r;g;b, each argument a byte; anything else is left unmodelled.
      if (i + 2 < count && params[i + 1] == 5 && params[i + 2] <= 255) {
        i += 2;
      } else if (i + 4 < count && params[i + 1] == 2 && params[i + 2] <= 255 &&
                 params[i + 3] <= 255 && params[i + 4] <= 255) {
        i += 4;
      } else {
        return unknown;
      }
      effect.parts |= colour;
    } else {
      return unknown;  // 0 (a reset), 2 (faint), fonts, 21, 53, ...: not modelled here
    }
  }
  return effect;
}

}  // namespace backscroll::term
