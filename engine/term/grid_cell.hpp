// GridCell: a screen cell as ScreenGrid stores it, and the packed colour and attribute words it
// shares with the scrollback store. Plain data, no libvterm types: what libvterm 0.1.4's screen
// layer keeps per cell (screen.c ScreenCell), in 16 bytes, laid out for filling and copying: an
// 80x24 screen fits a core's L1 data cache, and the loops a parse spends its time in (the
// glyph stores, the erase of a new bottom row, the packing of a row into the history) read and
// write a cell at once. With six characters inline (36 bytes) they touched 2.25 times the
// memory and were 9-33% slower (docs/performance.md, "16-byte grid cells"). A glyph of several
// characters (a base and its combining marks) keeps them in its grid's cluster table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "engine/term/screen_cell.hpp"

namespace backscroll::term {

// GridCell::ch of the right half of a wide glyph (libvterm's (uint32_t)-1).
inline constexpr char32_t kContinuationChar = 0xffffffffu;
// GridCell::ch of a glyph of several characters: this bit | the index of its characters in the
// grid's cluster table (no code point has it; kContinuationChar, which has it too, is not one).
inline constexpr char32_t kClusterTag = 0x80000000u;
// The characters libvterm 0.1.4 keeps per cell (VTERM_MAX_CHARS_PER_CELL): what putglyph()
// hands over at most.
inline constexpr std::size_t kVtermCellChars = 6;

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
  // 0 for an erased cell, kContinuationChar for the right half of a wide glyph, the character of
  // a glyph of one, or kClusterTag | the index of a glyph's characters (two or more) in the
  // grid's cluster table.
  char32_t ch;
  std::uint32_t fg;
  std::uint32_t bg;
  std::uint32_t attrs;
};
static_assert(sizeof(GridCell) == 16);

// `to = from` as one 16-byte store where SSE2 is there. A plain assignment inside a loop was
// assembled again from its four words at every cell by GCC 12 (shifts and ORs into two 64-bit
// stores), a third of the cost of erasing a row.
inline void store_cell(GridCell& to, const GridCell& from) noexcept {
#if defined(__SSE2__)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&to),
                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(&from)));
#else
  to = from;
#endif
}

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

// A glyph of several characters, kept in the cluster table (see GridCell).
constexpr bool is_cluster(char32_t ch) {
  return (ch & kClusterTag) != 0 && ch != kContinuationChar;
}
inline bool is_cluster(const GridCell& g) { return is_cluster(g.ch); }
inline std::size_t cluster_index(const GridCell& g) { return g.ch & ~kClusterTag; }

// A glyph's characters (`cluster`: the cluster table's entry when is_cluster(g)); none for an
// erased or continuation cell.
template <typename Visit>
void for_each_char(const GridCell& g, const std::u32string* cluster, Visit&& visit) {
  if (cluster != nullptr) {
    for (char32_t c : *cluster) visit(c);
  } else if (g.ch != 0 && g.ch != kContinuationChar) {
    visit(g.ch);
  }
}

// The cell as the mirror reports it; `wide`: the next cell on the row is a continuation;
// `cluster`: the cluster table's entry when is_cluster(g).
inline Cell to_cell(const GridCell& g, bool wide, const std::u32string* cluster = nullptr) {
  Cell c;
  if (g.ch == 0) {
    c.kind = Cell::Kind::erased;
  } else if (g.ch == kContinuationChar) {
    c.kind = Cell::Kind::continuation;
  } else {
    c.kind = Cell::Kind::glyph;
    std::size_t n = 0;
    for_each_char(g, cluster, [&](char32_t ch) {
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
  // `clusters`: the grid's cluster table.
  GridRow(const GridCell* cells, std::size_t cols, const std::vector<std::u32string>& clusters)
      : cells_(cells), cols_(cols), clusters_(&clusters) {}

  std::size_t size() const noexcept { return cols_; }
  char32_t first_char(std::size_t i) const noexcept {
    const GridCell& g = cells_[i];
    return is_cluster(g) ? (*clusters_)[cluster_index(g)].front() : g.ch;
  }
  int width(std::size_t i) const noexcept {
    return i + 1 < cols_ && cells_[i + 1].ch == kContinuationChar ? 2 : 1;
  }
  bool line_sized(std::size_t i) const noexcept { return (cells_[i].attrs & attr::kLineMask) != 0; }
  // For a glyph: whether characters follow its first (combining marks).
  bool combining(std::size_t i) const noexcept { return is_cluster(cells_[i]); }
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
  const std::vector<std::u32string>* clusters_;
};

}  // namespace backscroll::term
