// Scrollback: the lines a screen pushed off its top, oldest first, bounded in lines and bytes.
// ScreenGrid pushes a row as it scrolls off and pops the newest back when the screen grows.
// Single-threaded (the mirror thread's).
//
// A flood pushes a line per LF, so the store allocates nothing per line: the lines live in one
// ring of 32-bit words that grows by doubling up to the byte bound (from 2 MiB on in place,
// inside an array of the bound's size whose pages are touched as lines reach them) and is then
// reused, oldest lines giving way (a line per heap block cost the mirror thread 20-40% of its
// CPU in malloc and page faults on scrolling floods: docs/profiles/scrollback-ring.md). A line is
// stored compactly: one word per cell and one record per run of cells in the same pen
// (docs/profiles/scrollback-ring.md, "compact lines").
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
  // Defaults: 10,000 lines (the most a snapshot request can ask for), and 8 MiB, which holds
  // them at up to ~190 used columns in one pen, or 100 with 25 changes of pen (4 bytes per
  // stored cell, 16 per run of one pen, 32 per line; trailing blank cells are not stored). The
  // older lines go first when either is exceeded.
  std::size_t max_lines = 10'000;
  std::size_t max_bytes = 8u << 20;
};

class Scrollback {
 public:
  explicit Scrollback(ScrollbackLimits limits = {}) : limits_(limits) {}

  // Stores a row as libvterm's screen layer hands it to sb_pushline: each cell's reverse bit
  // as shown (XOR DECSCNM: `reverse_video`), a glyph wide when the next cell continues it.
  // `clusters`: the grid's cluster table (glyphs of several characters); every cell from
  // `zero_from` on is all zero (ScreenGrid::zero_from), so pristine unless in reverse video.
  void push(std::span<const GridCell> row, bool reverse_video,
            const std::vector<std::u32string>& clusters, std::size_t zero_from = SIZE_MAX);
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
  // The lines' share of the ring (their cells, runs, combining characters and any padding
  // between them) and their records: at most max_bytes. The ring itself never exceeds max_bytes
  // either.
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
    char32_t first_char(std::size_t i) const noexcept { return chars_[i]; }
    int width(std::size_t i) const noexcept {
      return i + 1 < cells_ && chars_[i + 1] == kContinuationChar ? 2 : 1;
    }
    // For a glyph: whether characters follow its first (combining marks).
    bool combining(std::size_t i) const noexcept { return counts_ != nullptr && counts_[i] != 0; }
    // Whether the cell is on a DECDWL/DECDHL line.
    bool line_sized(std::size_t i) const noexcept {
      return line_sized_ && (run(i)[1] & attr::kLineMask) != 0;
    }
    // Cells i and j have the same pen exactly when these are equal: one run, or two whose pen
    // bits and colours agree (runs also change with the line's size bits).
    bool same_pen(std::size_t i, std::size_t j) const noexcept {
      const std::size_t length = run_end_ - run_begin_;
      return (i - run_begin_ < length && j - run_begin_ < length) || same_pen_apart(i, j);
    }
    bool default_pen(std::size_t i) const noexcept {
      const char32_t* r = run(i);
      return (r[1] & attr::kPenMask) == 0 && r[2] == 0 && r[3] == 0;
    }
    Pen pen(std::size_t i) const noexcept {
      const char32_t* r = run(i);
      return pen_of(r[1], r[2], r[3]);
    }

   private:
    friend class Scrollback;
    StoredLine() = default;
    // The run holding cell i: the last whose first cell is at or before it. Readers go left
    // to right, looking back at the start of the run they are in, so the run last found is
    // remembered (cells [run_begin_, run_end_)) and its neighbours are tried first.
    const char32_t* run(std::size_t i) const noexcept {
      if (i - run_begin_ >= run_end_ - run_begin_) select_run(near_run(i));
      return runs_ + run_index_ * kRunWords;
    }
    std::size_t near_run(std::size_t i) const noexcept;
    void select_run(std::size_t r) const noexcept;
    // same_pen() of cells not both in the run last found.
    bool same_pen_apart(std::size_t i, std::size_t j) const noexcept;
    // The combining characters, in order (null when there are none).
    const char32_t* extra() const noexcept {
      return counts_ == nullptr ? nullptr
                                : reinterpret_cast<const char32_t*>(counts_) + count_words(cells_);
    }
    const char32_t* chars_ = nullptr;
    const char32_t* runs_ = nullptr;
    const std::uint8_t* counts_ = nullptr;  // combining characters per cell; null: none
    std::size_t cells_ = 0;
    std::size_t runs_count_ = 0;
    bool line_sized_ = false;  // a run has DECDWL/DECDHL bits
    // run()'s memory (it reads on one thread, as the class does).
    mutable std::size_t run_index_ = 0;
    mutable std::size_t run_begin_ = 0;
    mutable std::size_t run_end_ = 0;
  };
  StoredLine stored_line(std::size_t line) const;

 private:
  // A stored line, in ring words: its cells' first characters (0 erased, kContinuationChar),
  // one word each; its runs, kRunWords each: the first cell, the attribute bits as shown
  // (attr:: pen and line bits), foreground, background, a run starting wherever one of them
  // changes (so the first at cell 0, and two runs in a row always differ); then, only when a
  // glyph has combining characters: a byte per cell counting them (words rounded up), and
  // those characters in order, one word each. A glyph's width is not stored: it is 2 exactly
  // when the next cell continues it.
  static constexpr std::size_t kRunWords = 4;
  // Ring positions count words from the ring's start, and only grow: a line at position p is
  // at ring_[p % capacity_], its words contiguous (a line that would cross the ring's end
  // starts at its beginning instead, the words skipped counted as the line's).
  struct LineRecord {
    std::uint64_t start;  // where the line's words begin, padding included
    std::uint64_t at;     // its first cell
    std::uint32_t cells;
    std::uint32_t runs;
    std::uint32_t extra;  // combining characters after the counts
    int cols;
  };
  static std::size_t count_words(std::size_t cells) { return (cells + 3) / 4; }
  static std::size_t line_words(const LineRecord& l) {
    return l.cells + l.runs * kRunWords + (l.extra > 0 ? count_words(l.cells) + l.extra : 0);
  }
  StoredLine view(const LineRecord& l) const;
  static void unpack(const StoredLine& v, std::size_t col, const char32_t* run,
                     const char32_t*& extra, Cell& c);
  const char32_t* words(const LineRecord& line) const { return &ring_[line.at % capacity_]; }
  // Makes room for a line of `n` words, the oldest lines going first, and appends its record
  // (cells, runs, extra and cols for the caller to set); nullptr when the bounds cannot hold it
  // even alone (every line is dropped then).
  LineRecord* place(std::size_t n);
  // Moves the lines to the start of a ring of `capacity` words (which holds them), in a fresh
  // array: from 2 MiB on, one of max_words() (the ring then grows in it without moving).
  void relayout(std::size_t capacity);
  void drop_oldest();
  void drop_all();  // every line and the ring
  std::size_t max_words() const { return limits_.max_bytes / sizeof(char32_t); }

  ScrollbackLimits limits_;
  HugePageArray<char32_t> ring_;  // empty until the first line that takes words
  std::size_t capacity_ = 0;      // the ring's words: the first capacity_ of ring_
  std::uint64_t head_ = 0;        // the next free position
  std::uint64_t tail_ = 0;        // the oldest line's start (head_ without lines)
  std::deque<LineRecord> lines_;
  std::uint64_t pushed_ = 0;
  // push()'s line as it is packed, before it is copied into the ring: the grid's row is read
  // once, and the ring written once, sequentially.
  std::vector<char32_t> chars_scratch_;
  std::vector<char32_t> runs_scratch_;
  std::vector<std::uint8_t> counts_scratch_;
  std::vector<char32_t> extra_scratch_;
};

}  // namespace backscroll::term
