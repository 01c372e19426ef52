// UTF-8 encoding and decoding of one code point, for the mirror thread's parts (mirror screen,
// snapshot writer) and their tests. append_utf8's caller passes a valid scalar value (libvterm's
// cells hold them).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace backscroll::term {

inline void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

struct Utf8Char {
  char32_t value;
  std::size_t length;  // bytes
};

// The length of the sequence a lead byte starts (2 to 4), 0 for a byte that starts none (ASCII,
// a continuation byte, an overlong lead 0xC0/0xC1, 0xF5 and above).
constexpr std::size_t utf8_sequence_length(unsigned char lead) {
  return lead >= 0xc2 && lead < 0xe0   ? 2
         : lead >= 0xe0 && lead < 0xf0 ? 3
         : lead >= 0xf0 && lead < 0xf5 ? 4
                                       : 0;
}

// The character `bytes` starts with, when it is a complete, well-formed sequence of two to
// four bytes (no overlong form, no surrogate, at most U+10FFFF); nullopt otherwise (ASCII too).
inline std::optional<Utf8Char> decode_utf8(std::span<const unsigned char> bytes) {
  if (bytes.empty()) return std::nullopt;
  const unsigned char lead = bytes[0];
  const std::size_t length = utf8_sequence_length(lead);
  if (length == 0 || bytes.size() < length) return std::nullopt;
  char32_t value = lead & (0x7fu >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((bytes[i] & 0xc0) != 0x80) return std::nullopt;
    value = (value << 6) | (bytes[i] & 0x3fu);
  }
  constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kMin[length] || value > 0x10ffff || (value >= 0xd800 && value < 0xe000))
    return std::nullopt;
  return Utf8Char{value, length};
}

// Checks a string a byte at a time: printable ASCII, and well-formed UTF-8 characters from U+00A0
// (no C0 or C1 control, no DEL): what the look ahead lets a title or a mark carry.
class Utf8Check {
 public:
  // False at the first byte that makes the string fail (the check is then over).
  constexpr bool take(unsigned char b) {
    if (need_ == 0) {
      if (b >= 0x20 && b < 0x7f) return true;
      const std::size_t length = utf8_sequence_length(b);
      if (length == 0) return false;
      need_ = static_cast<unsigned char>(length - 1);
      min_ = length == 2 ? 0xa0 : length == 3 ? 0x800 : 0x10000;
      value_ = b & (0x7fu >> length);
      return true;
    }
    if ((b & 0xc0) != 0x80) return false;
    value_ = (value_ << 6) | (b & 0x3fu);
    if (--need_ > 0) return true;
    return value_ >= min_ && value_ <= 0x10ffff && (value_ < 0xd800 || value_ >= 0xe000);
  }
  // No character is cut short.
  constexpr bool complete() const { return need_ == 0; }
  constexpr void reset() { need_ = 0; }

 private:
  unsigned char need_ = 0;  // continuation bytes still to come
  char32_t min_ = 0;        // the least value the character's length may encode here
  char32_t value_ = 0;
};

}  // namespace backscroll::term
