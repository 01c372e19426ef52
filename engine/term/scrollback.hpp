// Scrollback: the lines a screen pushed off its top, oldest first, bounded in lines and bytes.
// ScreenGrid pushes a row as it scrolls off and pops the newest back when the screen grows.
// Single-threaded (the mirror thread's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "engine/term/grid_cell.hpp"
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
  void clear();
  // New bounds: a lower one drops the oldest lines at once, a higher one lets later lines stay.
  void set_limits(ScrollbackLimits limits);
  // Drops every line (CSI 3 J); pushed() keeps counting.
  void erase_lines();

  std::size_t lines() const { return lines_.size(); }
  std::size_t bytes() const { return bytes_; }
  // Lines pushed since construction or clear(), evicted ones included.
  std::uint64_t pushed() const { return pushed_; }
  // Width the line had when it scrolled off; columns past it read as pristine cells.
  int cols(std::size_t line) const;
  Cell cell(std::size_t line, int col) const;
  // Cells [0, out.size()) of a line at once (cheaper than cell by cell).
  void row(std::size_t line, std::span<Cell> out) const;

 private:
  // A stored cell in 16 bytes: first character (0 erased, kContinuationChar), attributes
  // (attr:: bits 0-15 without kProtected), count of combining characters kept in
  // StoredLine::extra, width (bits 0-1) with attribute bits 16-17 (bits 2-3), colours.
  struct PackedCell {
    char32_t ch;
    std::uint16_t attrs;
    std::uint8_t nextra;
    std::uint8_t width_high;
    std::uint32_t fg;
    std::uint32_t bg;
  };
  struct StoredLine {
    std::vector<PackedCell> cells;  // up to the last cell that is not pristine
    std::vector<char32_t> extra;
    int cols = 0;
    std::size_t bytes() const;
  };
  static void unpack(const StoredLine& l, std::size_t col, std::size_t extra_at, Cell& out);
  void trim();  // the oldest lines out until both limits hold

  ScrollbackLimits limits_;
  std::deque<StoredLine> lines_;
  std::size_t bytes_ = 0;
  std::uint64_t pushed_ = 0;
};

}  // namespace backscroll::term
