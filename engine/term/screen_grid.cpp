// ScreenGrid: libvterm 0.1.4's screen.c rebuilt on rings of rows. Each function names the
// screen.c function whose behaviour it keeps; the quirks kept on purpose are noted where they
// happen (a snapshot must describe what libvterm's screen layer would hold).
#include "engine/term/screen_grid.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace backscroll::term {
namespace {

// libvterm allocates with calloc semantics: a cell it has never written has a zeroed pen,
// whose colours are RGB black (VTermColor type 0), not the default colours.
constexpr GridPen kZeroedPen{pack_color(Color::rgb(0, 0, 0)), pack_color(Color::rgb(0, 0, 0)), 0};

// Erased in the default pen, with no attributes: what every cell from a row's zero_from is.
bool all_zero(const GridCell& g) { return (g.ch | g.fg | g.bg | g.attrs) == 0; }

}  // namespace

ScreenGrid::ScreenGrid(int rows, int cols, Scrollback& history, const LineAttrsSource& lines)
    : rows_(rows),
      cols_(cols),
      history_(history),
      lines_(lines),
      pen_(kZeroedPen),
      state_rows_(rows) {
  // screen_new() and vterm_screen_enable_altscreen(): both buffers erased with the zeroed pen.
  for (Buffer& b : buffers_) realloc_buffer(b, rows, cols);
  recent_clusters_.fill(kNoCluster);
}

GridCell ScreenGrid::blank() const {
  GridCell g{};
  g.fg = pen_.fg;
  g.bg = pen_.bg;
  g.attrs = pen_.attrs & ~attr::kExtraMask;
  return g;
}

// realloc_buffer(): cells keep their (row, col); new ones are erased with the current pen.
void ScreenGrid::realloc_buffer(Buffer& b, int new_rows, int new_cols) const {
  std::vector<GridCell> cells(
      static_cast<std::size_t>(new_rows) * static_cast<std::size_t>(new_cols), blank());
  if (!b.cells.empty()) {
    const int keep_rows = std::min(new_rows, rows_);
    const auto keep_cols = static_cast<std::size_t>(std::min(new_cols, cols_));
    for (int r = 0; r < keep_rows; ++r) {
      const GridCell* from =
          b.cells.data() + static_cast<std::size_t>(b.order[static_cast<std::size_t>(r)]) *
                               static_cast<std::size_t>(cols_);
      std::copy_n(from, keep_cols,
                  cells.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(new_cols));
    }
  }
  b.cells = std::move(cells);
  b.order.resize(static_cast<std::size_t>(new_rows));
  for (std::size_t r = 0; r < b.order.size(); ++r) b.order[r] = static_cast<std::uint32_t>(r);
  measure_zero_from(b);
}

void ScreenGrid::measure_zero_from(Buffer& b) const {
  const std::size_t cols = b.order.empty() ? 0 : b.cells.size() / b.order.size();
  b.zero_from.resize(b.order.size());
  for (std::size_t r = 0; r < b.order.size(); ++r) {
    const GridCell* row = b.cells.data() + r * cols;
    std::size_t end = cols;
    while (end > 0 && all_zero(row[end - 1])) --end;
    b.zero_from[r] = static_cast<std::uint32_t>(end);
  }
}

bool ScreenGrid::zero_from_holds() const {
  for (const Buffer& b : buffers_) {
    for (std::size_t r = 0; r < b.order.size(); ++r) {
      const GridCell* row = b.cells.data() + r * static_cast<std::size_t>(cols_);
      if (!std::all_of(row + b.zero_from[r], row + cols_, all_zero)) return false;
    }
  }
  return true;
}

Cell ScreenGrid::cell_of(int buffer, int row, int col) const {
  if (row < 0 || row >= rows_ || col < 0 || col >= cols_) return Cell{};
  const GridCell* r = row_cells(buffer, row);
  // vterm_screen_get_cell(): wide when the next cell on the row continues it.
  return to_cell(r[col], col + 1 < cols_ && r[col + 1].ch == kContinuationChar, cluster_of(r[col]));
}

void ScreenGrid::append_char(int row, int col, char32_t c) {
  if (row < 0 || row >= rows_ || col < 0 || col >= cols_) return;
  GridCell& cell = row_cells(row)[col];
  if (cell.ch == 0 || cell.ch == kContinuationChar) return;
  std::u32string chars;
  for_each_char(cell, cluster_of(cell), [&](char32_t ch) { chars += ch; });
  if (chars.size() >= static_cast<std::size_t>(Cell::kMaxChars)) return;
  chars += c;
  store_chars(cell, chars);
}

void ScreenGrid::set_chars(int row, int col, std::u32string_view chars) {
  if (row < 0 || row >= rows_ || col < 0 || col >= cols_ || chars.empty()) return;
  GridCell& cell = row_cells(row)[col];
  if (cell.ch == 0 || cell.ch == kContinuationChar) return;
  store_chars(cell, chars.substr(0, static_cast<std::size_t>(Cell::kMaxChars)));
}

void ScreenGrid::store_chars(GridCell& cell, std::u32string_view chars) {
  cell.ch = chars.front();  // not a cluster while the sweep runs
  if (chars.size() == 1) return;
  // Text repeats its clusters (the same accented letters, the same emoji with U+FE0F): the
  // entry made last for the same characters is shared, as a copied cell shares its entry.
  std::uint32_t h = 0;
  for (const char32_t c : chars) h = (h ^ c) * 0x9e3779b1u;
  std::uint32_t& recent = recent_clusters_[h >> (32 - kRecentClusterBits)];
  if (recent < clusters_.size() && clusters_[recent] == chars) {
    cell.ch = kClusterTag | recent;
    return;
  }
  if (clusters_.size() >= 64 + 2 * clusters_alive_) sweep_clusters();
  recent = static_cast<std::uint32_t>(clusters_.size());
  cell.ch = kClusterTag | recent;
  clusters_.emplace_back(chars);
}

void ScreenGrid::store_vterm_chars(GridCell& cell, const std::uint32_t* chars) {
  char32_t cluster[kVtermCellChars];
  std::size_t n = 0;
  for (; n < kVtermCellChars && chars[n] != 0; ++n) cluster[n] = chars[n];
  store_chars(cell, std::u32string_view(cluster, n));  // copied once, into the table
}

void ScreenGrid::sweep_clusters() {
  constexpr std::size_t kUnused = ~std::size_t{0};
  std::vector<std::size_t> moved_to(clusters_.size(), kUnused);
  std::vector<std::u32string> kept;
  for (Buffer& b : buffers_) {
    for (GridCell& g : b.cells) {
      if (!is_cluster(g)) continue;
      std::size_t& to = moved_to[cluster_index(g)];
      if (to == kUnused) {
        to = kept.size();
        kept.push_back(std::move(clusters_[cluster_index(g)]));
      }
      g.ch = kClusterTag | static_cast<char32_t>(to);
    }
  }
  clusters_ = std::move(kept);
  clusters_alive_ = clusters_.size();
  for (std::uint32_t& recent : recent_clusters_) {
    recent = recent < moved_to.size() && moved_to[recent] != kUnused
                 ? static_cast<std::uint32_t>(moved_to[recent])
                 : kNoCluster;
  }
}

// scrollrect() with VTERM_DAMAGE_CELL: vterm_scroll_rect() over moverect_internal() and
// erase_internal(). A scroll by the whole height or width only erases (nothing is pushed).
void ScreenGrid::scroll_rect(GridRect rect, int downward, int rightward) {
  const int height = rect.end_row - rect.start_row;
  // What leaves the region's top is pushed into the history only from row 0 of the main
  // buffer (move_rect), and never by a scroll of the whole height.
  if (downward > 0 && rightward == 0 && rect.start_col == 0 && rect.end_col == cols_ &&
      (active_ == 1 || rect.start_row > 0 || downward >= height))
    dropped_rows_ += static_cast<std::uint64_t>(std::min(downward, height));
  if (std::abs(downward) >= height || std::abs(rightward) >= rect.end_col - rect.start_col) {
    erase(rect, false);
    return;
  }
  if (downward == 1 && rightward == 0 && rect.start_col == 0 && rect.end_col == cols_) {
    // A line feed on the region's bottom row, once per line of a scrolling flood: what
    // move_rect() and the erase below do for it, without their generality.
    if (active_ == 0 && rect.start_row == 0) push_to_history(0);
    std::uint32_t* const order = buffers_[active_].order.data();
    const std::uint32_t top = order[rect.start_row];
    std::memmove(order + rect.start_row, order + rect.start_row + 1,
                 static_cast<std::size_t>(height - 1) * sizeof *order);
    order[rect.end_row - 1] = top;
    erase(GridRect{rect.end_row - 1, rect.end_row, 0, cols_}, false);
    return;
  }
  // Along one axis: a shift by `by` (>= 0 towards the start) moves [start + by, end) to
  // [start, end - by); a negative one moves [start, end + by) to [start - by, end).
  auto split = [](int start, int end, int by, int& dest0, int& dest1, int& src0, int& src1) {
    const int toward = std::max(by, 0);
    const int away = std::max(-by, 0);
    dest0 = start + away;
    dest1 = end - toward;
    src0 = start + toward;
    src1 = end - away;
  };
  GridRect src;
  GridRect dest;
  split(rect.start_col, rect.end_col, rightward, dest.start_col, dest.end_col, src.start_col,
        src.end_col);
  split(rect.start_row, rect.end_row, downward, dest.start_row, dest.end_row, src.start_row,
        src.end_row);
  move_rect(dest, src);
  if (downward > 0) rect.start_row = rect.end_row - downward;
  else if (downward < 0) rect.end_row = rect.start_row - downward;
  if (rightward > 0) rect.start_col = rect.end_col - rightward;
  else if (rightward < 0) rect.end_col = rect.start_col - rightward;
  erase(rect, false);
}

// sb_pushline(): the active buffer's row as it scrolls off the top.
void ScreenGrid::push_to_history(int row) {
  history_.push({row_cells(row), static_cast<std::size_t>(cols_)}, reverse_video_, clusters_,
                static_cast<std::size_t>(zero_from(row)));
}

// moverect_internal(): a move to the top-left corner, full width, on the main buffer pushes the
// rows it overwrites to the scrollback first (a scroll region that starts at row 0 included).
// Whole rows move by rotating the row table: the rows overwritten land where the move leaves
// rows behind, which the caller erases next.
void ScreenGrid::move_rect(GridRect dest, GridRect src) {
  if (active_ == 0 && dest.start_row == 0 && dest.start_col == 0 && dest.end_col == cols_) {
    for (int r = 0; r < src.start_row; ++r) push_to_history(r);
  }
  const int downward = src.start_row - dest.start_row;
  if (src.start_col == 0 && src.end_col == cols_ && dest.start_col == 0) {
    auto& order = buffers_[active_].order;
    auto at = [&order](int row) { return order.begin() + row; };
    if (downward > 0) std::rotate(at(dest.start_row), at(src.start_row), at(src.end_row));
    else if (downward < 0) std::rotate(at(src.start_row), at(src.end_row), at(dest.end_row));
    return;
  }
  const auto width = static_cast<std::size_t>(src.end_col - src.start_col);
  auto move_row = [&](int row) {
    std::memmove(row_cells(row) + dest.start_col, row_cells(row + downward) + src.start_col,
                 width * sizeof(GridCell));
    // The cells moved in that are not all zero end where the source's did.
    const int moved_end = static_cast<int>(zero_from_of(row + downward)) - src.start_col;
    if (moved_end > 0) written(row, std::min(dest.end_col, dest.start_col + moved_end));
  };
  if (downward < 0) {
    for (int row = dest.end_row - 1; row >= dest.start_row; --row) move_row(row);
  } else {
    for (int row = dest.start_row; row < dest.end_row; ++row) move_row(row);
  }
}

// erase_internal(): bounded by the state's rows; each cell gets the pen and its row's line
// attributes; a selective erase (DECSED/DECSEL) skips protected cells.
void ScreenGrid::erase(GridRect rect, bool selective) {
  for (int row = rect.start_row; row < state_rows_ && row < rect.end_row; ++row) {
    const LineAttrs line = line_attrs_used_ ? lines_.line_attrs(row) : LineAttrs{};
    const std::uint32_t attrs =
        (pen_.attrs & ~attr::kExtraMask) | attr::line_bits(line.dwl, line.dhl);
    const std::uint32_t fg = pen_.fg;
    const std::uint32_t bg = pen_.bg;
    GridCell* const r = row_cells(row);
    const GridCell erased{0, fg, bg, attrs};
    const auto blank = [&](GridCell& c) { store_cell(c, erased); };
    std::uint32_t& zero_from = zero_from_of(row);
    int end_col = rect.end_col;
    if ((fg | bg | attrs) == 0) {
      // Erasing to all zero: the cells from zero_from on are so already.
      end_col = std::min(end_col, static_cast<int>(zero_from));
      if (!selective && end_col == static_cast<int>(zero_from) && rect.start_col < end_col)
        zero_from = static_cast<std::uint32_t>(rect.start_col);
    } else if (rect.start_col < end_col) {
      zero_from = std::max(zero_from, static_cast<std::uint32_t>(end_col));
    }
    if (selective) {
      for (int col = rect.start_col; col < end_col; ++col)
        if (!(r[col].attrs & attr::kProtected)) blank(r[col]);
    } else {
      for (int col = rect.start_col; col < end_col; ++col) blank(r[col]);
    }
  }
}

// setlineinfo(): the row's cells take the new attributes; a row that becomes double width loses
// its right half, erased while the state still holds the old attributes (so those are what
// the erased cells get).
void ScreenGrid::set_line_attrs(int row, LineAttrs now, LineAttrs before) {
  if (now.dwl == before.dwl && now.dhl == before.dhl) return;
  line_attrs_used_ = true;
  if (row < 0 || row >= rows_) return;
  GridCell* r = row_cells(row);
  const std::uint32_t bits = attr::line_bits(now.dwl, now.dhl);
  for (int col = 0; col < cols_; ++col) r[col].attrs = (r[col].attrs & ~attr::kLineMask) | bits;
  if (bits != 0) written(row, cols_);
  if (now.dwl) erase(GridRect{row, row + 1, cols_ / 2, cols_}, false);
}

// vterm_screen_is_eol() from column 0.
bool ScreenGrid::row_blank(int row) const {
  const GridCell* r = row_cells(active_, row);
  return std::all_of(r, r + cols_, [](const GridCell& g) { return g.ch == 0; });
}

// resize(): on the main buffer, a shrink first scrolls up the rows below the new bottom that
// are not blank (up to the cursor's), pushing as many lines; both buffers keep their cells at
// the same (row, col); a grow pops lines back from the scrollback into the top rows.
int ScreenGrid::resize(int new_rows, int new_cols, int cursor_row) {
  const int old_rows = rows_;
  int delta = 0;
  state_rows_ = new_rows;
  if (active_ == 0 && new_rows < old_rows) {
    int row = old_rows - 1;
    for (; row >= new_rows; --row)
      if (!row_blank(row) || cursor_row == row) break;
    const int first_blank = row + 1;
    if (first_blank > new_rows) {
      scroll_rect(GridRect{0, old_rows, 0, cols_}, first_blank - new_rows, 0);
      delta -= first_blank - new_rows;
    }
  }
  for (Buffer& b : buffers_) realloc_buffer(b, new_rows, new_cols);
  rows_ = new_rows;
  cols_ = new_cols;
  if (active_ == 0 && new_rows > old_rows) {
    popped_.resize(static_cast<std::size_t>(cols_));
    for (int n = new_rows - old_rows; n > 0; --n) {
      if (!history_.pop(popped_)) break;
      scroll_rect(GridRect{0, rows_, 0, cols_}, -1, 0);
      // vterm_screen_set_cell() for each cell, stepping by width: characters, pen (reverse
      // XOR DECSCNM, as the line was stored as shown), colours; the line attributes and
      // protection stay the erase's.
      GridCell* r = row_cells(0);
      for (int col = 0; col < cols_;) {
        const Cell& from = popped_[static_cast<std::size_t>(col)];
        GridCell& to = r[col];
        if (from.kind == Cell::Kind::continuation) {
          to.ch = kContinuationChar;
        } else if (from.kind == Cell::Kind::glyph && from.nchars > 0) {
          store_chars(to, std::u32string_view(from.chars.data(), from.nchars));
        } else {
          to.ch = 0;
        }
        std::uint32_t pen_bits = pack_pen(from.pen);
        if (reverse_video_) pen_bits ^= attr::kReverse;
        to.attrs = (to.attrs & ~attr::kPenMask) | pen_bits;
        to.fg = pack_color(from.pen.fg);
        to.bg = pack_color(from.pen.bg);
        const bool wide = from.width == 2 && col + 1 < cols_;
        if (wide) r[col + 1].ch = kContinuationChar;
        col += wide ? 2 : 1;
      }
      written(0, cols_);
      ++delta;
    }
  }
  return delta;
}

}  // namespace backscroll::term
