// ScreenGrid: the cells of a terminal, driven by libvterm 0.1.4's state layer callbacks, in
// place of libvterm's screen layer (screen.c) and with its exact observable behaviour: the
// same cells, the same lines pushed to and popped from the scrollback, the same quirks. What
// differs is the cost: each buffer is a ring of rows (a row table over one cell array), so a
// scroll of whole rows moves row indices instead of cells, and a line scrolled off is packed
// into the scrollback straight from its cells.
// No libvterm types: MirrorScreen translates the callbacks. Single-threaded.
// Coordinates: 0-based (row, col); rectangles are half-open, as libvterm's VTermRect.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/grid_cell.hpp"
#include "engine/term/scrollback.hpp"

namespace backscroll::term {

struct GridRect {
  int start_row = 0;
  int end_row = 0;
  int start_col = 0;
  int end_col = 0;
};

// A row's DECDWL / DECDHL state, as libvterm's state layer holds it (VTermLineInfo).
struct LineAttrs {
  bool dwl = false;
  int dhl = 0;  // 1 top half, 2 bottom half
};

class ScreenGrid {
 public:
  // Where the grid reads each row's line attributes: the state layer's, which it updates
  // itself (around the callbacks, as screen.c sees them).
  class LineAttrsSource {
   public:
    virtual LineAttrs line_attrs(int row) const = 0;

   protected:
    ~LineAttrsSource() = default;
  };

  // Both buffers start erased with libvterm's zeroed pen (RGB black on black, not the
  // default colours); the terminal's reset erases the main one with the real pen.
  ScreenGrid(int rows, int cols, Scrollback& history, const LineAttrsSource& lines);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  bool alt_active() const { return active_ == 1; }
  bool reverse_video() const { return reverse_video_; }
  // Rows that left the top of a full-width scroll region without entering the history: on the
  // alternate buffer, or from a region that starts below the top row (only a region from row 0
  // of the main buffer pushes its rows into the history). What a look-ahead jump that leaves
  // the history alone waits for (Mirror::screen_exact). Only ever grows.
  std::uint64_t dropped_rows() const { return dropped_rows_; }

  // --- the state layer's callbacks (screen.c's state_cbs) ---
  // chars: up to kVtermCellChars, 0-terminated when fewer. False off the screen.
  // putglyph(): the pen is applied only when there are characters; protection and the line's
  // attributes always. A wide glyph marks the cells it covers as continuations (their pens
  // are left as they were). Inline: called once per character printed.
  bool put_glyph(int row, int col, const std::uint32_t* chars, int width, bool protected_cell,
                 LineAttrs line) {
    if (row < 0 || row >= rows_ || col < 0 || col >= cols_) return false;
    GridCell* r = row_cells(row);
    GridCell& cell = r[col];
    std::uint32_t attrs = cell.attrs;
    if (chars[0] != 0) {
      if (chars[1] == 0) {
        cell.ch = chars[0];
      } else {
        store_vterm_chars(cell, chars);
      }
      attrs = pen_.attrs;
      cell.fg = pen_.fg;
      cell.bg = pen_.bg;
    } else {
      cell.ch = 0;
    }
    cell.attrs = (attrs & attr::kPenMask) | attr::line_bits(line.dwl, line.dhl) |
                 (protected_cell ? attr::kProtected : 0u);
    for (int c = 1; c < width && col + c < cols_; ++c) r[col + c].ch = kContinuationChar;
    written(row, std::min(col + std::max(width, 1), cols_));
    return true;
  }
  // put_glyph() of each byte of text[0, n) (printable ASCII: one column, one character each) at
  // (row, col + i), on a row without line attributes, unprotected. The cells are on the screen.
  void put_ascii(int row, int col, const unsigned char* text, int n) {
    GridCell* cell = row_cells(row) + col;
    const GridCell pen{0, pen_.fg, pen_.bg, pen_.attrs & attr::kPenMask};
    for (int i = 0; i < n; ++i) {
      store_cell(cell[i], pen);
      cell[i].ch = text[i];
    }
    written(row, col + n);
  }
  void scroll_rect(GridRect rect, int downward, int rightward);
  void erase(GridRect rect, bool selective);
  GridPen& pen() { return pen_; }  // setpenattr() writes it
  const GridPen& pen() const { return pen_; }
  void set_alt_screen(bool on) { active_ = on ? 1 : 0; }
  void set_reverse_video(bool on) { reverse_video_ = on; }
  void set_line_attrs(int row, LineAttrs now, LineAttrs before);
  // Adds a character to the glyph at (row, col) of the active buffer, past the six libvterm
  // keeps (MirrorScreen: the seventh and later zero-width characters of a cluster). Ignored on
  // a cell that is not a glyph or already holds Cell::kMaxChars.
  void append_char(int row, int col, char32_t c);
  // The glyph at (row, col) of the active buffer holds `chars` (1..Cell::kMaxChars) instead.
  void set_chars(int row, int col, std::u32string_view chars);
  // The terminal is now new_rows x new_cols; `cursor_row` is the state's cursor before the
  // resize. Returns how far the cursor's row moves (lines pushed on a shrink: negative; lines
  // popped back from the scrollback on a grow: positive).
  int resize(int new_rows, int new_cols, int cursor_row);

  // --- reads ---
  // The active buffer's cell, its reverse bit as stored (without DECSCNM).
  Cell cell(int row, int col) const { return cell_of(active_, row, col); }
  // The main buffer's, also while the alternate one is active.
  Cell main_cell(int row, int col) const { return cell_of(0, row, col); }

  // The active buffer's row read in place (GridRow).
  GridRow row(int row) const {
    return GridRow(row_cells(active_, row), static_cast<std::size_t>(cols_), clusters_);
  }
  // The main buffer's row read in place (GridRow).
  GridRow main_row(int row) const {
    return GridRow(row_cells(0, row), static_cast<std::size_t>(cols_), clusters_);
  }
  // Every cell of the active buffer's row from this column on is all zero (erased in the
  // default pen, no attributes): a bound, never below the last cell that is not, kept by every
  // write. A flood's rows are mostly blank past their text, and erasing a row or packing it
  // into the history stops there.
  int zero_from(int row) const {
    const Buffer& b = buffers_[active_];
    return static_cast<int>(b.zero_from[b.order[static_cast<std::size_t>(row)]]);
  }
  // Whether zero_from() holds for every row of both buffers (every cell from it on all zero).
  bool zero_from_holds() const;
  // Entries of the cluster table, alive or not yet swept (bounded: see clusters_).
  std::size_t cluster_entries() const { return clusters_.size(); }

 private:
  struct Buffer {
    std::vector<GridCell> cells;       // rows x cols, in storage order
    std::vector<std::uint32_t> order;  // screen row -> storage row
    // Per storage row: every cell from this column on is all zero (zero_from()). Indexed by
    // storage row, so it moves with the row when a scroll rotates the order.
    std::vector<std::uint32_t> zero_from;
  };
  std::uint32_t& zero_from_of(int row) {
    Buffer& b = buffers_[active_];
    return b.zero_from[b.order[static_cast<std::size_t>(row)]];
  }
  // Cells [.., end_col) of the active buffer's row may now be other than all zero.
  void written(int row, int end_col) {
    std::uint32_t& z = zero_from_of(row);
    z = std::max(z, static_cast<std::uint32_t>(end_col));
  }
  // zero_from of each row of `b` found again by reading its cells.
  void measure_zero_from(Buffer& b) const;

  GridCell* row_cells(int row) { return row_cells(active_, row); }
  GridCell* row_cells(int buffer, int row) {
    Buffer& b = buffers_[buffer];
    return b.cells.data() + static_cast<std::size_t>(b.order[static_cast<std::size_t>(row)]) *
                                static_cast<std::size_t>(cols_);
  }
  const GridCell* row_cells(int buffer, int row) const {
    const Buffer& b = buffers_[buffer];
    return b.cells.data() + static_cast<std::size_t>(b.order[static_cast<std::size_t>(row)]) *
                                static_cast<std::size_t>(cols_);
  }
  Cell cell_of(int buffer, int row, int col) const;
  GridCell blank() const;
  const std::u32string* cluster_of(const GridCell& g) const {
    return is_cluster(g) ? &clusters_[cluster_index(g)] : nullptr;
  }
  // Stores `chars` (1..Cell::kMaxChars) as the characters of `cell`: several in a new cluster
  // entry.
  void store_chars(GridCell& cell, std::u32string_view chars);
  // store_chars() of putglyph()'s characters (2..kVtermCellChars, 0-terminated when fewer):
  // out of line, so that put_glyph() stays small enough to inline.
  void store_vterm_chars(GridCell& cell, const std::uint32_t* chars);
  // Drops the cluster entries no cell refers to (entries are never changed in place: a copied
  // cell shares its entry).
  void sweep_clusters();
  void push_to_history(int row);
  void move_rect(GridRect dest, GridRect src);
  bool row_blank(int row) const;
  void realloc_buffer(Buffer& b, int new_rows, int new_cols) const;

  int rows_;
  int cols_;
  Scrollback& history_;
  const LineAttrsSource& lines_;
  // Whether a row ever had line attributes (set_line_attrs, the state layer's only way to set
  // them): until then every row's are the defaults, and erasing does not ask for them.
  bool line_attrs_used_ = false;
  Buffer buffers_[2];
  int active_ = 0;
  std::uint64_t dropped_rows_ = 0;
  bool reverse_video_ = false;
  GridPen pen_;
  // The state layer's row count, which erasing is bounded by: rows_, except while a resize
  // scrolls the old buffer (the state has the new size by then).
  int state_rows_;
  std::vector<Cell> popped_;  // scratch for lines popped back on a grow
  // The characters of glyphs of more than one (GridCell). Bounded: swept when it reaches 64 +
  // twice the entries alive at the last sweep.
  std::vector<std::u32string> clusters_;
  std::size_t clusters_alive_ = 0;
  // The entry last made for each hash of its characters (kNoCluster: none), for store_chars()
  // to share; swept with the table.
  static constexpr int kRecentClusterBits = 8;
  static constexpr std::uint32_t kNoCluster = ~0u;
  std::array<std::uint32_t, std::size_t{1} << kRecentClusterBits> recent_clusters_;
};

}  // namespace backscroll::term
