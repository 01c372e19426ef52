#include "tools/cli_screen_render.hpp"

#include <algorithm>

#include "engine/term/utf8.hpp"
#include "engine/term/zero_width.hpp"

namespace backscroll::cli {
namespace {

using term::Cell;
using term::Color;
using term::Pen;

void append_color(std::string& out, const Color& c, bool background) {
  switch (c.kind) {
    case Color::Kind::default_color: return;
    case Color::Kind::indexed:
      if (c.index_or_red < 8) {
        out += ";" + std::to_string((background ? 40 : 30) + c.index_or_red);
      } else if (c.index_or_red < 16) {
        out += ";" + std::to_string((background ? 100 : 90) + c.index_or_red - 8);
      } else {
        out += (background ? ";48;5;" : ";38;5;") + std::to_string(c.index_or_red);
      }
      return;
    case Color::Kind::rgb:
      out += (background ? ";48;2;" : ";38;2;") + std::to_string(c.index_or_red) + ";" +
             std::to_string(c.green) + ";" + std::to_string(c.blue);
      return;
  }
}

// An erased cell shows its background (and reverse), never a line through or under it.
Pen erased_pen(Pen pen) {
  pen.underline = term::Underline::off;
  pen.strike = false;
  pen.blink = false;
  return pen;
}

Cell blank_cell() { return Cell{}; }

}  // namespace

std::string sgr_for(const Pen& pen) {
  std::string out = "\x1b[0";
  if (pen.bold) out += ";1";
  if (pen.italic) out += ";3";
  switch (pen.underline) {
    case term::Underline::off: break;
    case term::Underline::single: out += ";4"; break;
    case term::Underline::double_: out += ";21"; break;
    case term::Underline::curly: out += ";4:3"; break;
  }
  if (pen.blink) out += ";5";
  if (pen.reverse) out += ";7";
  if (pen.strike) out += ";9";
  append_color(out, pen.fg, false);
  append_color(out, pen.bg, true);
  return out + "m";
}

void ScreenRenderer::set_terminal(int cols, int rows) {
  cols_ = std::max(cols, 1);
  rows_ = std::max(rows, 1);
  shown_.assign(static_cast<std::size_t>(cols_) * static_cast<std::size_t>(rows_), blank_cell());
  valid_ = false;
}

Cell ScreenRenderer::wanted(const term::MirrorScreen& screen, std::string_view status, int row,
                            int col) const {
  if (row == status_row_) {
    Cell c;
    c.kind = Cell::Kind::glyph;
    c.nchars = 1;
    const auto i = static_cast<std::size_t>(col);
    const unsigned char ch = i < status.size() ? static_cast<unsigned char>(status[i]) : ' ';
    c.chars[0] = ch >= 0x20 && ch < 0x7f ? ch : '?';
    c.pen.reverse = true;
    return c;
  }
  if (row >= visible_rows_ || col >= visible_cols_) return blank_cell();
  Cell c = screen.cell(row, col);
  if (c.kind == Cell::Kind::glyph && c.width == 2 && col + 1 >= visible_cols_) {
    c.kind = Cell::Kind::erased;  // half a wide glyph cannot be drawn: a blank in its colours
    c.width = 1;
  }
  if (c.kind == Cell::Kind::erased) c.pen = erased_pen(c.pen);
  if (reverse_screen_) c.pen.reverse = !c.pen.reverse;  // DECSCNM
  c.dwl = false;                                        // drawn single-width
  c.dhl = 0;
  return c;
}

void ScreenRenderer::move_to(std::string& out, int row, int col) {
  if (at_ && at_->first == row && at_->second == col) return;
  out += "\x1b[" + std::to_string(row + 1) + ";" + std::to_string(col + 1) + "H";
  at_ = {row, col};
}

void ScreenRenderer::set_pen(std::string& out, const Pen& pen) {
  if (pen_ && *pen_ == pen) return;
  out += sgr_for(pen);
  pen_ = pen;
}

std::string ScreenRenderer::frame(const term::MirrorScreen& screen, std::string_view status) {
  std::string out;
  if (!valid_) {
    // Pen first: the erase paints with it.
    out += "\x1b[0m\x1b[H\x1b[2J";
    pen_ = Pen{};
    at_ = {0, 0};
    std::fill(shown_.begin(), shown_.end(), blank_cell());
    cursor_shown_.reset();
    cursor_hidden_ = false;
    valid_ = true;
  }
  status_row_ = status.empty() ? -1 : rows_ - 1;
  visible_rows_ = std::min(screen.rows(), status.empty() ? rows_ : rows_ - 1);
  visible_cols_ = std::min(screen.cols(), cols_);
  reverse_screen_ = screen.reverse_video();

  bool drew = !out.empty();
  for (int row = 0; row < rows_; ++row) {
    for (int col = 0; col < cols_; ++col) {
      const std::size_t at = static_cast<std::size_t>(row) * cols_ + col;
      Cell want = wanted(screen, status, row, col);
      if (want.kind == Cell::Kind::continuation) {
        shown_[at] = want;  // its glyph, one to the left, drew both columns
        continue;
      }
      if (want == shown_[at]) continue;
      move_to(out, row, col);
      set_pen(out, want.pen);
      // A cell that starts with a zero-width character (one that followed no glyph) would
      // join the glyph before it or not advance the cursor in this terminal: a space keeps the
      // columns in place.
      if (want.kind == Cell::Kind::erased || term::is_zero_width(want.chars[0])) {
        out += ' ';
      } else {
        for (int i = 0; i < want.nchars; ++i) {
          term::append_utf8(out, want.chars[static_cast<std::size_t>(i)]);
        }
      }
      shown_[at] = want;
      const int next = col + (want.kind == Cell::Kind::glyph ? want.width : 1);
      // At the right edge the terminal's cursor waits to wrap: address the next cell anew.
      if (next < cols_) {
        at_ = {row, next};
      } else {
        at_.reset();
      }
      drew = true;
    }
  }

  const term::CursorState cursor = screen.cursor();
  const bool inside = cursor.visible && cursor.row < visible_rows_ && cursor.col < visible_cols_;
  const std::optional<std::pair<int, int>> cursor_at =
      inside ? std::optional(std::pair{cursor.row, cursor.col}) : std::nullopt;
  if (!drew && cursor_at == cursor_shown_ && cursor_hidden_ == !inside) return {};
  if (inside) {
    move_to(out, cursor.row, cursor.col);
    out += "\x1b[?25h";
  } else {
    out += "\x1b[?25l";
  }
  cursor_shown_ = cursor_at;
  cursor_hidden_ = !inside;
  return "\x1b[?2026h" + out + "\x1b[?2026l";
}

}  // namespace backscroll::cli
