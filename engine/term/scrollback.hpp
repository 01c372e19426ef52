// Scrollback: the lines a screen pushed off its top, oldest first, bounded in lines and bytes.
// ScreenGrid pushes a row as it scrolls off and pops the newest back when the screen grows.
// Single-threaded (the mirror thread's).
//
// A flood pushes a line per LF, so the store allocates nothing per line: the lines' cells live
// in one ring of 32-bit words that grows by doubling up to the byte bound and is then reused in
// place, oldest lines giving way (a line per heap block cost the mirror thread 20-40% of its CPU
// in malloc and page faults on scrolling floods: docs/profiles/scrollback-ring.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "engine/term/grid_cell.hpp"
#include "engine/term/huge_page_array.hpp"
#include "engine/term/screen_cell.hpp"

namespace backscroll::term {

struct ScrollbackLimits {
  // Defaults: 10,000 lines (the most a snapshot request can ask for), and 16 MiB, which holds
  // them at up to ~100 used columns (16 bytes per stored cell, trailing blank cells are not
  // stored). The older lines go first when either is exceeded.
  std::size_t max_lines = 10'000;
  std::size_t max_bytes = 16u << 20;
};

class Scrollback {
 public:
  explicit Scrollback(ScrollbackLimits limits = {}) : limits_(limits) {}

  // Stores a row as libvterm's screen layer hands it to sb_pushline: each cell's reverse bit
  // as shown (XOR DECSCNM: `reverse_video`), a glyph wide when the next cell continues it.
  // `tails`: the grid's tail table (glyphs of more than six characters).
  void push(std::span<const GridCell> row, bool reverse_video,
            const std::vector<std::u32string>& tails);
  // Removes the newest line into `out` (cells past its stored ones read as pristine); false
  // when there is none.
  bool pop(std::span<Cell> out);
  // Drops every line and the ring; pushed() starts again from 0.
  void clear();
  // New bounds: a lower one drops the oldest lines at once, a higher one lets later lines stay.
  void set_limits(ScrollbackLimits limits);
  // Drops every line and the ring (CSI 3 J); pushed() keeps counting.
  void erase_lines();

  std::size_t lines() const { return lines_.size(); }
  // The lines' share of the ring (their cells, combining characters and any padding between
  // them) and their records: at most max_bytes. The ring itself never exceeds max_bytes either.
  std::size_t bytes() const {
    return static_cast<std::size_t>(head_ - tail_) * sizeof(char32_t) +
           lines_.size() * sizeof(LineRecord);
  }
  // Lines pushed since construction or clear(), evicted ones included.
  std::uint64_t pushed() const { return pushed_; }
  // Width the line had when it scrolled off; columns past it read as pristine cells.
  int cols(std::size_t line) const;
  Cell cell(std::size_t line, int col) const;
  // Cells [0, out.size()) of a line at once (cheaper than cell by cell).
  void row(std::size_t line, std::span<Cell> out) const;
  // Only the stored cells of a line, the first n <= out.size(), into out[0, n); returns n. The
  // line's cells from n on are pristine; out[n, ...) is left as it was.
  std::size_t stored_cells(std::size_t line, std::span<Cell> out) const;

  // A line's stored cells read in place, for a reader that goes through a line once (a
  // snapshot drawing it) without a Cell (~150 bytes) per column. Valid until the next push,
  // pop or change of limits.
  class StoredLine {
   public:
    std::size_t size() const noexcept { return cells_; }  // the stored cells
    // 0 for an erased cell, kContinuationChar for a wide glyph's right half, else the glyph's
    // first character.
    char32_t first_char(std::size_t i) const noexcept { return at(i)[0]; }
    int width(std::size_t i) const noexcept { return static_cast<int>(at(i)[1] >> 24 & 3u); }
    // For a glyph: whether characters follow its first (combining marks).
    bool combining(std::size_t i) const noexcept { return (at(i)[1] >> 16 & 0xffu) != 0; }
    // Whether the cell is on a DECDWL/DECDHL line.
    bool line_sized(std::size_t i) const noexcept { return (at(i)[1] & attr::kLineMask) != 0; }
    // Cells i and j have the same pen exactly when these are equal (pack and unpack are
    // one-to-one on what push() stores: every pen bit and both colours' words).
    bool same_pen(std::size_t i, std::size_t j) const noexcept {
      return (at(i)[1] & kPenBits) == (at(j)[1] & kPenBits) && at(i)[2] == at(j)[2] &&
             at(i)[3] == at(j)[3];
    }
    bool default_pen(std::size_t i) const noexcept {
      return (at(i)[1] & kPenBits) == 0 && at(i)[2] == 0 && at(i)[3] == 0;
    }
    Pen pen(std::size_t i) const noexcept;

   private:
    friend class Scrollback;
    // The pen's attribute bits in a cell's second word: bits 0-15 (attr::kPenMask's low part)
    // and attribute bits 16-17, kept in bits 26-27.
    static constexpr std::uint32_t kPenBits = (attr::kPenMask & 0xffffu) | 3u << 26;
    StoredLine(const char32_t* cells, std::size_t n) : cells_words_(cells), cells_(n) {}
    const char32_t* at(std::size_t i) const noexcept { return cells_words_ + i * kCellWords; }
    const char32_t* cells_words_ = nullptr;
    std::size_t cells_ = 0;
  };
  StoredLine stored_line(std::size_t line) const;

 private:
  // A stored cell is kCellWords words: first character (0 erased, kContinuationChar);
  // attributes (attr:: bits 0-15 without kProtected) | count of combining characters << 16 |
  // (width, bits 0-1, with attribute bits 16-17 in bits 2-3) << 24; foreground; background.
  // A line's cells, up to its last cell that is not pristine, are followed by the combining
  // characters of its glyphs, in order, one word each.
  static constexpr std::size_t kCellWords = 4;
  // Ring positions count words from the ring's start, and only grow: a line at position p is
  // at ring_[p % ring_.size()], its words contiguous (a line that would cross the ring's end
  // starts at its beginning instead, the words skipped counted as the line's).
  struct LineRecord {
    std::uint64_t start;  // where the line's words begin, padding included
    std::uint64_t at;     // its first cell
    std::uint32_t cells;
    std::uint32_t extra;  // combining characters after the cells
    int cols;
  };
  // The attr:: bits of a stored cell's second word.
  static std::uint32_t stored_attrs(std::uint32_t packed);
  static void unpack(const char32_t* cell, const char32_t*& extra, Cell& out);
  const char32_t* words(const LineRecord& line) const { return &ring_[line.at % ring_.size()]; }
  // Makes room for a line of `n` words, the oldest lines going first, and appends its record
  // (cells, extra and cols for the caller to set); nullptr when the bounds cannot hold it even
  // alone (every line is dropped then).
  LineRecord* place(std::size_t n);
  // Moves the lines to the start of a ring of `capacity` words (which holds them).
  void relayout(std::size_t capacity);
  void drop_oldest();
  void drop_all();  // every line and the ring
  std::size_t max_words() const { return limits_.max_bytes / sizeof(char32_t); }

  ScrollbackLimits limits_;
  HugePageArray<char32_t> ring_;  // empty until the first line that takes words
  std::uint64_t head_ = 0;        // the next free position
  std::uint64_t tail_ = 0;        // the oldest line's start (head_ without lines)
  std::deque<LineRecord> lines_;
  std::uint64_t pushed_ = 0;
};

}  // namespace backscroll::term
