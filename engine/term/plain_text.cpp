#include "engine/term/plain_text.hpp"

#include <algorithm>
#include <vector>

#include "engine/term/utf8.hpp"

namespace backscroll::term {
namespace {

// One row of cells as text: glyphs with their combining marks, erased cells as spaces,
// continuation cells skipped (their wide left neighbour covers them), trailing spaces cut.
void append_row(std::string& out, const std::vector<Cell>& cells) {
  const std::size_t start = out.size();
  std::size_t kept = start;  // end of the text up to the last glyph that is not a space
  for (const Cell& c : cells) {
    if (c.kind == Cell::Kind::continuation) continue;
    if (c.kind == Cell::Kind::erased) {
      out += ' ';
      continue;
    }
    for (int i = 0; i < c.nchars; ++i) append_utf8(out, c.chars[static_cast<std::size_t>(i)]);
    if (!(c.nchars == 1 && c.chars[0] == U' ')) kept = out.size();
  }
  out.resize(kept);
  out += '\n';
}

}  // namespace

std::string plain_text(const MirrorScreen& screen, std::size_t history_lines) {
  std::string out;
  std::vector<Cell> cells;
  const std::size_t held = screen.scrollback_lines();
  for (std::size_t line = held - std::min(held, history_lines); line < held; ++line) {
    cells.assign(static_cast<std::size_t>(screen.scrollback_cols(line)), Cell{});
    screen.scrollback_row(line, cells);
    append_row(out, cells);
  }
  // The screen's rows, without the empty ones below its last text.
  std::string rows;
  std::size_t last_text = 0;
  cells.resize(static_cast<std::size_t>(screen.cols()));
  for (int row = 0; row < screen.rows(); ++row) {
    for (int col = 0; col < screen.cols(); ++col) {
      cells[static_cast<std::size_t>(col)] = screen.main_cell(row, col);
    }
    append_row(rows, cells);
    if (rows.size() > 1 && rows[rows.size() - 2] != '\n') last_text = rows.size();
  }
  out.append(rows, 0, last_text);
  return out;
}

}  // namespace backscroll::term
