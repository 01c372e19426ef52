#include "engine/term/snapshot_screens.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

namespace backscroll::term {
namespace {

// A line of Cells with the reads LineDrawer::draw_simple() makes (as Scrollback::StoredLine and
// GridRow have them).
class CellLine {
 public:
  explicit CellLine(std::span<const Cell> cells) : cells_(cells) {}
  std::size_t size() const noexcept { return cells_.size(); }
  char32_t first_char(std::size_t i) const noexcept {
    const Cell& c = cells_[i];
    return c.kind == Cell::Kind::erased         ? 0
           : c.kind == Cell::Kind::continuation ? kContinuationChar
                                                : c.chars[0];
  }
  int width(std::size_t i) const noexcept { return cells_[i].width; }
  bool line_sized(std::size_t i) const noexcept { return cells_[i].dwl || cells_[i].dhl != 0; }
  bool combining(std::size_t i) const noexcept { return cells_[i].nchars > 1; }
  bool same_pen(std::size_t i, std::size_t j) const noexcept {
    return cells_[i].pen == cells_[j].pen;
  }
  bool default_pen(std::size_t i) const noexcept { return cells_[i].pen == Pen{}; }
  const Pen& pen(std::size_t i) const noexcept { return cells_[i].pen; }

 private:
  std::span<const Cell> cells_;
};

// Draws lines on rows of pristine cells of the fresh terminal; its scratch vectors are reused
// across lines.
class LineDrawer {
 public:
  LineDrawer(SnapshotTerminal& t, const MirrorScreen& m) : t_(t), m_(m) {}

  // Draws cells [0, W) of a line on a row of pristine cells, cursor at the row's start.
  // `cells` holds the line (W cells), pristine from `used` on (a history line's stored cells
  // end there: the common lines need not look past them). `truncated`: a history line from a
  // wider terminal; a wide character cut in two at the last column is left out.
  void draw_line(std::vector<Cell>& cells, bool truncated, std::size_t used) {
    const int W = m_.cols();
    if (truncated && cells[static_cast<std::size_t>(W - 1)].width == 2) {
      Cell blank;
      cells[static_cast<std::size_t>(W - 1)] = blank;
    }
    // Past `used`, pristine cells are simple and draw_simple() draws nothing there (nor on a
    // line of pristine cells).
    if (draw_simple(CellLine(std::span(cells).first(std::min(used, cells.size()))))) return;
    must_draw_.assign(static_cast<std::size_t>(W), false);
    made_continuation_.assign(static_cast<std::size_t>(W), false);
    draw_leading_continuations(cells);
    const bool last_done = draw_wide_in_last_column(cells);

    // Pass 1: every cell, left to right.
    int c = 0;
    while (c < W) {
      const Cell& cell = cells[static_cast<std::size_t>(c)];
      if (cell.kind != Cell::Kind::continuation && cell.width == 2) make_stale_halves(cells, c);
      switch (cell.kind) {
        case Cell::Kind::continuation:
          if (!made_continuation_[static_cast<std::size_t>(c)]) {
            t_.fail("unreproducible_cells", "stray continuation cell");
          }
          ++c;
          break;
        case Cell::Kind::erased: c = draw_erased(cells, c); break;
        case Cell::Kind::glyph: c = draw_glyph(cells, c, last_done); break;
      }
    }
  }

  // A simple line: erased cells one column wide and glyphs of one printable character as wide
  // as the width table makes it (one column, or two followed by exactly one continuation
  // cell), on a single-width line (most lines of most output, UTF-8 and CJK text included),
  // drawn in runs of one pen: glyphs copied as they are (SnapshotTerminal::print_run), erased
  // cells erased as draw_line() erases them; false, drawing nothing, for any other line (its
  // combining marks, controls, stale halves or a wide character cut at the row's end take
  // draw_line()'s per-cell passes). `line`: Cells (CellLine) or a line read where it is kept
  // (Scrollback::StoredLine, GridRow), without a Cell (~150 bytes) per column: unpacking every
  // column first was most of the time to build a snapshot. A history line from a wider
  // terminal is cut at the row's end.
  template <typename Line>
  bool draw_simple(const Line& line) {
    const std::size_t n = std::min(line.size(), static_cast<std::size_t>(m_.cols()));
    auto glyph = [&](std::size_t c) {
      return line.first_char(c) != 0 && line.first_char(c) != kContinuationChar;
    };
    for (std::size_t c = 0; c < n; ++c) {
      if (line.line_sized(c)) return false;
      const char32_t ch = line.first_char(c);
      const int width = line.width(c);
      if (ch == 0) {
        if (width != 1) return false;
        continue;
      }
      if (ch == kContinuationChar || line.combining(c)) return false;
      if (ch < 0x7f) {
        if (ch < 0x20 || width != 1) return false;
        continue;
      }
      if (ch < 0xa0 || m_.glyph_width(ch) != width) return false;
      if (width == 1) continue;
      if (width != 2 || c + 1 >= n || line.first_char(c + 1) != kContinuationChar) return false;
      if (c + 2 < n && line.first_char(c + 2) == kContinuationChar) return false;
      ++c;  // its continuation
    }
    std::size_t c = 0;
    while (c < n) {
      std::size_t end = c + 1;
      if (line.first_char(c) == 0) {
        while (end < n && line.first_char(end) == 0 && line.same_pen(end, c)) ++end;
        if (!line.default_pen(c))
          t_.erase_run(static_cast<int>(c), static_cast<int>(end), line.pen(c));
        c = end;
        continue;
      }
      chars_.clear();
      widths_.clear();
      end = c;
      do {
        chars_.push_back(line.first_char(end));
        widths_.push_back(static_cast<std::uint8_t>(line.width(end)));
        end += static_cast<std::size_t>(line.width(end));
      } while (end < n && glyph(end) && line.same_pen(end, c));
      t_.move_to(static_cast<int>(c));
      t_.pen(line.pen(c));
      t_.print_run(chars_, widths_);
      c = end;
    }
    return true;
  }

 private:
  // Pass 0: continuation cells at the start of the row (a DCH moved them there) are made
  // one column to the right and shifted into place with DCH, before anything else is drawn.
  void draw_leading_continuations(const std::vector<Cell>& cells) {
    const int W = m_.cols();
    if (cells[0].kind != Cell::Kind::continuation) return;
    int m = 1;
    while (m < W - 1 && cells[static_cast<std::size_t>(m)].kind == Cell::Kind::continuation) ++m;
    if (m >= W - 1) {
      t_.fail("unreproducible_cells", "row of continuation cells");
      return;
    }
    for (int t = m - 1; t >= 0; --t) {  // cells 1..m become continuations
      t_.move_to(t);
      t_.print_stand_in(W);
    }
    t_.move_to(0);
    t_.pen(Pen{});
    t_.csi("P");
    for (int t = 0; t < m; ++t) made_continuation_[static_cast<std::size_t>(t)] = true;
  }

  // A wide character alone in the last column (an ICH pushed it there): printed one column
  // to the left and pushed there the same way. True when it did.
  bool draw_wide_in_last_column(const std::vector<Cell>& cells) {
    const int W = m_.cols();
    if (W < 2) return false;
    const Cell& last = cells[static_cast<std::size_t>(W - 1)];
    const Cell& prev = cells[static_cast<std::size_t>(W - 2)];
    if (last.kind != Cell::Kind::glyph || m_.glyph_width(last.chars[0]) != 2) return false;
    if (prev.kind == Cell::Kind::glyph && m_.glyph_width(prev.chars[0]) == 2 && prev.width == 1) {
      t_.fail("unreproducible_cells", "two half-overwritten wide characters at the end");
      return false;
    }
    t_.move_to(W - 2);
    t_.pen(last.pen);
    t_.print(last.chars.data(), last.nchars, 2, W);
    t_.move_to(W - 2);
    t_.csi("@");
    must_draw_[static_cast<std::size_t>(W - 2)] = true;  // now erased in this pen
    return true;
  }

  // More continuation cells after the wide cell c's own (stale right halves): each is made by a
  // wide character printed just left of it, right to left, before cell c is drawn.
  void make_stale_halves(const std::vector<Cell>& cells, int c) {
    const int W = m_.cols();
    const auto uc = static_cast<std::size_t>(c);
    int m = 1;
    while (c + 1 + m < W &&
           cells[uc + 1 + static_cast<std::size_t>(m)].kind == Cell::Kind::continuation)
      ++m;
    for (int t = m - 1; t >= 1; --t) {
      t_.move_to(c + t);
      t_.print_stand_in(W);
      made_continuation_[uc + 1 + static_cast<std::size_t>(t)] = true;
    }
  }

  // The erased cell c and those after it in its pen; returns the next column to draw.
  int draw_erased(const std::vector<Cell>& cells, int c) {
    const int W = m_.cols();
    const Cell& cell = cells[static_cast<std::size_t>(c)];
    const auto uc = static_cast<std::size_t>(c);
    if (cell.width == 2) {
      t_.move_to(c);
      t_.print_stand_in(W);
      made_continuation_[uc + 1] = true;
      t_.move_to(c);
      t_.pen(cell.pen);
      t_.erase_chars(1);
      return c + 2;
    }
    if (is_pristine(cell) && !must_draw_[uc]) return c + 1;
    int end = c + 1;
    while (end < W) {
      const Cell& n = cells[static_cast<std::size_t>(end)];
      if (n.kind != Cell::Kind::erased || n.width != 1 || !(n.pen == cell.pen)) break;
      ++end;
    }
    t_.erase_run(c, end, cell.pen);
    return end;
  }

  // The glyph in cell c; returns the next column to draw. `last_done`: the last column's wide
  // character is drawn already (draw_wide_in_last_column).
  int draw_glyph(const std::vector<Cell>& cells, int c, bool last_done) {
    const int W = m_.cols();
    const Cell& cell = cells[static_cast<std::size_t>(c)];
    const auto uc = static_cast<std::size_t>(c);
    const int w0 = m_.glyph_width(cell.chars[0]);
    if (w0 == 0) {
      draw_lone(cell, c);
      return c + cell.width;
    }
    if (w0 == cell.width) {
      t_.move_to(c);
      t_.pen(cell.pen);
      t_.print(cell.chars.data(), cell.nchars, w0, W);
      if (w0 == 2) made_continuation_[uc + 1] = true;
      return c + w0;
    }
    if (w0 == 2) {  // a wide character whose right half was overwritten
      if (c + 1 >= W) {
        // Drawn first (above); in history, a wider terminal's leftover is left out.
        if (!last_done) t_.fail("unreproducible_cells", "wide character in the last column");
        return c + 1;
      }
      t_.move_to(c);
      t_.pen(cell.pen);
      t_.print(cell.chars.data(), cell.nchars, 2, W);
      must_draw_[uc + 1] = true;  // the print made it a continuation
      return c + 1;
    }
    // A narrow glyph over the left half of a wide one.
    t_.move_to(c);
    t_.print_stand_in(W);
    made_continuation_[uc + 1] = true;
    t_.move_to(c);
    t_.pen(cell.pen);
    t_.print(cell.chars.data(), cell.nchars, 1, W);
    return c + 2;
  }

  // A cell whose first character is zero-width (a lone one: after a sequence or a control,
  // xterm.js and the mirror give it a column), printed after a sequence.
  void draw_lone(const Cell& cell, int c) {
    const int W = m_.cols();
    if (cell.nchars > 1) {
      // Several in one cell: libvterm's own lone glyph (marks after a glyph at the row's end
      // that the mirror could not join); printed after a sequence, each would take a column.
      t_.fail("unreproducible_cells", "zero-width characters without a glyph");
      return;
    }
    if (cell.width == 2) {
      t_.move_to(c);
      t_.print_stand_in(W);
      made_continuation_[static_cast<std::size_t>(c) + 1] = true;
    }
    t_.pen(cell.pen);
    t_.move_to_with_sequence(c);
    t_.print(cell.chars.data(), cell.nchars, 1, W);
  }

  SnapshotTerminal& t_;
  const MirrorScreen& m_;
  std::vector<bool> must_draw_;
  std::vector<bool> made_continuation_;
  std::vector<char32_t> chars_;  // draw_simple()'s run of glyphs
  std::vector<std::uint8_t> widths_;
};

}  // namespace

std::size_t write_history_and_main(SnapshotTerminal& t, const MirrorScreen& m, std::size_t want,
                                   LineReading read) {
  const std::size_t total = m.scrollback_lines();
  // On one row libvterm 0.1.4 erases instead of scrolling a line off: nothing reaches its
  // history, so none is drawn (a snapshot carries up to N lines).
  const std::size_t n = m.rows() > 1 ? std::min(want, total) : 0;
  const std::size_t first = total - n;
  const int rows = m.rows();
  const int W = m.cols();
  LineDrawer lines(t, m);
  std::vector<Cell> cells(static_cast<std::size_t>(W));
  std::size_t dirty = 0;  // cells [dirty, W) are pristine
  std::string& out = t.out();
  out.reserve(out.size() + (n + static_cast<std::size_t>(rows)) * static_cast<std::size_t>(W + 8));
  t.section("history");
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) t.newline();
    const std::size_t line = first + i;
    if (read == LineReading::in_place && lines.draw_simple(m.scrollback_line(line)))
      continue;  // (`cells` untouched: still pristine from `dirty` on)
    const std::size_t used = m.scrollback_stored_cells(line, cells);
    // Only what the previous line left past this one's cells is made pristine again.
    if (dirty > used)
      std::fill(cells.begin() + static_cast<std::ptrdiff_t>(used),
                cells.begin() + static_cast<std::ptrdiff_t>(dirty), Cell{});
    lines.draw_line(cells, m.scrollback_cols(line) > W, used);
    dirty = used;
  }
  t.section("main screen");
  for (int r = 0; r < rows; ++r) {
    if (n > 0 || r > 0) t.newline();
    if (read == LineReading::in_place && lines.draw_simple(m.main_row(r))) continue;
    for (int c = 0; c < W; ++c) cells[static_cast<std::size_t>(c)] = m.main_cell(r, c);
    lines.draw_line(cells, false, cells.size());
  }
  return n;
}

void write_alternate_screen(SnapshotTerminal& t, const MirrorScreen& m, bool enter,
                            LineReading read) {
  t.section("alternate screen");
  t.pen(Pen{});
  if (enter) t.csi("?1047h");  // libvterm: switch and erase, no cursor save (the slot is set above)
  LineDrawer lines(t, m);
  std::vector<Cell> cells(static_cast<std::size_t>(m.cols()));
  for (int r = 0; r < m.rows(); ++r) {
    // Read where the grid keeps it: unpacking every cell first (a Cell is ~150 bytes) was most
    // of the time to draw a full-screen program's screen.
    const GridRow row = m.active_row(r);
    std::size_t c = 0;
    while (c < row.size() && row.pristine(c)) ++c;
    if (c == row.size()) continue;
    t.cup(r, 0);
    if (read == LineReading::in_place && lines.draw_simple(row)) continue;
    for (int col = 0; col < m.cols(); ++col) cells[static_cast<std::size_t>(col)] = m.cell(r, col);
    lines.draw_line(cells, false, cells.size());
  }
}

}  // namespace backscroll::term
