// GridCell: a screen cell as ScreenGrid stores it, and the packed colour and attribute words it
// shares with the scrollback store. Plain data, no libvterm types: what libvterm 0.1.4's screen
// layer keeps per cell (screen.c ScreenCell), laid out for filling and copying (36 bytes). A
// glyph of more than six characters keeps the rest in its grid's tail table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/term/screen_cell.hpp"

namespace backscroll::term {

// chars[0] of the right half of a wide glyph (libvterm's (uint32_t)-1).
inline constexpr char32_t kContinuationChar = 0xffffffffu;
// chars[5] of a glyph of more than six characters: this bit | the index of its characters from
// the sixth on in the grid's tail table (no code point has it).
inline constexpr char32_t kTailTag = 0x80000000u;
inline constexpr std::size_t kInlineChars = 6;  // libvterm's VTERM_MAX_CHARS_PER_CELL

// A colour in one word: kind << 24 | index_or_red << 16 | green << 8 | blue. The default
// colour packs to 0.
constexpr std::uint32_t pack_color(const Color& c) {
  return static_cast<std::uint32_t>(c.kind) << 24 | std::uint32_t{c.index_or_red} << 16 |
         std::uint32_t{c.green} << 8 | c.blue;
}
constexpr Color unpack_color(std::uint32_t v) {
  return Color{static_cast<Color::Kind>(v >> 24), static_cast<std::uint8_t>(v >> 16),
               static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
}

// Attribute bits. The pen's own (what SGR sets) are bits 0-10 (libvterm's) and 15-17 (the
// mirror's: faint, conceal, overline); a cell adds its line's DECDWL / DECDHL state and, in the
// grid only, DECSCA protection.
namespace attr {
inline constexpr std::uint32_t kBold = 1u << 0;
inline constexpr std::uint32_t kItalic = 1u << 1;
inline constexpr std::uint32_t kBlink = 1u << 2;
inline constexpr std::uint32_t kReverse = 1u << 3;
inline constexpr std::uint32_t kStrike = 1u << 4;
inline constexpr int kUnderlineShift = 5;  // 2 bits
inline constexpr int kFontShift = 7;       // 4 bits
inline constexpr std::uint32_t kDwl = 1u << 11;
inline constexpr int kDhlShift = 12;  // 2 bits
inline constexpr std::uint32_t kLineMask = kDwl | 3u << kDhlShift;
inline constexpr std::uint32_t kProtected = 1u << 14;
inline constexpr std::uint32_t kFaint = 1u << 15;
inline constexpr std::uint32_t kConceal = 1u << 16;
inline constexpr std::uint32_t kOverline = 1u << 17;
// The mirror's own pen attributes: libvterm never sets them (setpenattr), and erasing does not
// paint them (xterm.js erases with the background colour only).
inline constexpr std::uint32_t kExtraMask = kFaint | kConceal | kOverline;
inline constexpr std::uint32_t kPenMask = 0x07ff | kExtraMask;

constexpr std::uint32_t line_bits(bool dwl, int dhl) {
  return (dwl ? kDwl : 0u) | (static_cast<unsigned>(dhl) & 3u) << kDhlShift;
}
}  // namespace attr

// The graphic rendition as the grid applies it to cells it writes.
struct GridPen {
  std::uint32_t fg = 0;
  std::uint32_t bg = 0;
  std::uint32_t attrs = 0;  // attr::kPenMask bits only
};

struct GridCell {
  // chars[0]: 0 for an erased cell, kContinuationChar for the right half of a wide glyph,
  // otherwise the glyph's characters up to the first 0 (all six used: no terminator; chars[5]
  // with kTailTag: five here, the rest in the tail table). Past the terminator, and past
  // chars[0] in erased and continuation cells, the values are stale.
  std::array<char32_t, kInlineChars> chars;
  std::uint32_t fg;
  std::uint32_t bg;
  std::uint32_t attrs;
};
// ScreenGrid writes fg and bg with one store of two words.
static_assert(offsetof(GridCell, bg) == offsetof(GridCell, fg) + sizeof(std::uint32_t));

inline void unpack_pen(std::uint32_t a, Pen& p) {
  p.bold = a & attr::kBold;
  p.faint = a & attr::kFaint;
  p.conceal = a & attr::kConceal;
  p.overline = a & attr::kOverline;
  p.italic = a & attr::kItalic;
  p.blink = a & attr::kBlink;
  p.reverse = a & attr::kReverse;
  p.strike = a & attr::kStrike;
  p.underline = static_cast<Underline>(a >> attr::kUnderlineShift & 3u);
  p.font = static_cast<std::uint8_t>(a >> attr::kFontShift & 0xfu);
}

// The pen of a cell's attribute bits and colour words.
inline Pen pen_of(std::uint32_t attrs, std::uint32_t fg, std::uint32_t bg) {
  Pen p;
  unpack_pen(attrs, p);
  p.fg = unpack_color(fg);
  p.bg = unpack_color(bg);
  return p;
}

inline std::uint32_t pack_pen(const Pen& p) {
  return (p.bold ? attr::kBold : 0u) | (p.italic ? attr::kItalic : 0u) |
         (p.blink ? attr::kBlink : 0u) | (p.reverse ? attr::kReverse : 0u) |
         (p.strike ? attr::kStrike : 0u) | (p.faint ? attr::kFaint : 0u) |
         (p.conceal ? attr::kConceal : 0u) | (p.overline ? attr::kOverline : 0u) |
         (static_cast<unsigned>(p.underline) & 3u) << attr::kUnderlineShift |
         (p.font & 0xfu) << attr::kFontShift;
}

// A glyph whose characters from the sixth on are in the tail table (see GridCell).
inline bool has_tail(const GridCell& g) {
  return (g.chars[kInlineChars - 1] & kTailTag) != 0 && g.chars[0] != kContinuationChar &&
         g.chars[0] != 0 && g.chars[1] != 0 && g.chars[2] != 0 && g.chars[3] != 0 &&
         g.chars[4] != 0;
}
inline std::size_t tail_index(const GridCell& g) { return g.chars[kInlineChars - 1] & ~kTailTag; }

// A glyph's characters: the inline ones, then its tail (`tail`: has_tail(g)'s entry).
template <typename Visit>
void for_each_char(const GridCell& g, const std::u32string* tail, Visit&& visit) {
  const std::size_t inline_count = tail ? kInlineChars - 1 : kInlineChars;
  for (std::size_t i = 0; i < inline_count && g.chars[i] != 0; ++i) visit(g.chars[i]);
  if (tail)
    for (char32_t c : *tail) visit(c);
}

// The cell as the mirror reports it; `wide`: the next cell on the row is a continuation;
// `tail`: the tail table's entry when has_tail(g).
inline Cell to_cell(const GridCell& g, bool wide, const std::u32string* tail = nullptr) {
  Cell c;
  if (g.chars[0] == 0) {
    c.kind = Cell::Kind::erased;
  } else if (g.chars[0] == kContinuationChar) {
    c.kind = Cell::Kind::continuation;
  } else {
    c.kind = Cell::Kind::glyph;
    std::size_t n = 0;
    for_each_char(g, tail, [&](char32_t ch) {
      if (n < c.chars.size()) c.chars[n++] = ch;
    });
    c.nchars = static_cast<std::uint8_t>(n);
  }
  c.width = wide ? 2 : 1;
  c.dwl = g.attrs & attr::kDwl;
  c.dhl = static_cast<std::uint8_t>(g.attrs >> attr::kDhlShift & 3u);
  c.pen = pen_of(g.attrs, g.fg, g.bg);
  return c;
}

// How a writer of lines (a snapshot's, the plain text's) reads them: the lines it can where
// they are kept (GridRow, Scrollback::StoredLine: the default), or every line as Cells (what
// the in-place reading is tested against: both give the same bytes).
enum class LineReading { in_place, as_cells };

// A row of grid cells read in place, each cell as to_cell() makes it, for a reader that goes
// through a row once (a snapshot drawing it) without a Cell (~150 bytes) per column; the same reads
// as Scrollback::StoredLine. Valid until the grid changes.
class GridRow {
 public:
  GridRow(const GridCell* cells, std::size_t cols) : cells_(cells), cols_(cols) {}

  std::size_t size() const noexcept { return cols_; }
  char32_t first_char(std::size_t i) const noexcept { return cells_[i].chars[0]; }
  int width(std::size_t i) const noexcept {
    return i + 1 < cols_ && cells_[i + 1].chars[0] == kContinuationChar ? 2 : 1;
  }
  bool line_sized(std::size_t i) const noexcept { return (cells_[i].attrs & attr::kLineMask) != 0; }
  // For a glyph: whether characters follow its first (combining marks).
  bool combining(std::size_t i) const noexcept { return cells_[i].chars[1] != 0; }
  // Pens are equal exactly when these are (unpack_pen reads every kPenMask bit).
  bool same_pen(std::size_t i, std::size_t j) const noexcept {
    const GridCell& a = cells_[i];
    const GridCell& b = cells_[j];
    return ((a.attrs ^ b.attrs) & attr::kPenMask) == 0 && a.fg == b.fg && a.bg == b.bg;
  }
  bool default_pen(std::size_t i) const noexcept {
    return (cells_[i].attrs & attr::kPenMask) == 0 && cells_[i].fg == 0 && cells_[i].bg == 0;
  }
  Pen pen(std::size_t i) const noexcept {
    return pen_of(cells_[i].attrs, cells_[i].fg, cells_[i].bg);
  }
  // is_pristine() of the cell: erased, in the default pen, on a single-width line.
  bool pristine(std::size_t i) const noexcept {
    return first_char(i) == 0 && default_pen(i) && !line_sized(i);
  }

 private:
  const GridCell* cells_;
  std::size_t cols_;
};

}  // namespace backscroll::term
