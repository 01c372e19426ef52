// Screen cells as the mirror reports them: plain data with no libvterm types, so the snapshot
// writer, tests and tools can read a screen without including <vterm.h>.
// Used on the mirror thread (MirrorScreen fills them, build_snapshot reads them).
// Coordinates elsewhere are 0-based (row, col) on the screen; history lines are indexed oldest
// first.
#pragma once

#include <array>
#include <cstdint>

namespace backscroll::term {

// A colour as libvterm 0.1.4 stores it: the terminal default (SGR 39/49), one of 256 palette
// entries (SGR 30-37, 90-97, 38;5;n: all the same "indexed" kind), or 24-bit RGB (38;2;r;g;b).
struct Color {
  enum class Kind : std::uint8_t { default_color, indexed, rgb };
  Kind kind = Kind::default_color;
  std::uint8_t index_or_red = 0;  // palette index, or red
  std::uint8_t green = 0;
  std::uint8_t blue = 0;

  static constexpr Color indexed(std::uint8_t i) { return {Kind::indexed, i, 0, 0}; }
  static constexpr Color rgb(std::uint8_t r, std::uint8_t g, std::uint8_t b) {
    return {Kind::rgb, r, g, b};
  }
  bool operator==(const Color&) const = default;
};

enum class Underline : std::uint8_t { off = 0, single = 1, double_ = 2, curly = 3 };

// The graphic rendition: what libvterm 0.1.4 models, and faint, conceal and overline, which it
// lacks and the mirror keeps itself (xterm.js shows them; MirrorScreen tracks their SGRs).
struct Pen {
  bool bold = false;
  bool faint = false;     // SGR 2 (off: 22)
  bool conceal = false;   // SGR 8 (off: 28)
  bool overline = false;  // SGR 53 (off: 55)
  bool italic = false;
  bool blink = false;
  bool reverse = false;
  bool strike = false;
  Underline underline = Underline::off;
  std::uint8_t font = 0;  // SGR 10-19 select font 0-9
  Color fg;
  Color bg;

  bool operator==(const Pen&) const = default;
};

// One screen cell. libvterm distinguishes an erased cell (no character, but a pen: erasing
// paints the background colour, "BCE") from a printed space, and marks the right half of a
// wide character as a continuation cell.
struct Cell {
  enum class Kind : std::uint8_t { erased, glyph, continuation };
  // A base and up to 31 zero-width characters joined to it (xterm.js keeps any number; libvterm
  // 0.1.4 six, VTERM_MAX_CHARS_PER_CELL: the mirror adds the rest itself, docs/snapshot.md).
  static constexpr int kMaxChars = 32;

  Kind kind = Kind::erased;
  std::uint8_t nchars = 0;  // glyph: how many of `chars` are used (1..kMaxChars)
  std::uint8_t width = 1;   // 2 when the next cell is a continuation cell
  bool dwl = false;         // on a DECDWL/DECDHL line
  std::uint8_t dhl = 0;     // DECDHL half: 1 top, 2 bottom
  std::array<char32_t, kMaxChars> chars{};
  Pen pen;

  bool operator==(const Cell& o) const {
    if (kind != o.kind || width != o.width || dwl != o.dwl || dhl != o.dhl) return false;
    if (kind == Kind::continuation) return true;  // only its left neighbour is drawn
    if (!(pen == o.pen)) return false;
    if (kind == Kind::erased) return true;
    if (nchars != o.nchars) return false;
    for (int i = 0; i < nchars; ++i)
      if (chars[i] != o.chars[i]) return false;
    return true;
  }
};

// A cell nothing has touched since the screen was reset: erased with the default pen.
inline bool is_pristine(const Cell& c) {
  return c.kind == Cell::Kind::erased && c.pen == Pen{} && !c.dwl && c.dhl == 0;
}

}  // namespace backscroll::term
