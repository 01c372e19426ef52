#include "engine/term/plain_text.hpp"

#include <algorithm>
#include <vector>

#include "engine/term/snapshot_terminal.hpp"
#include "engine/term/utf8.hpp"

namespace backscroll::term {
namespace {

// One row of cells as text: glyphs with their combining marks, erased cells as spaces,
// continuation cells skipped (their wide left neighbour covers them), trailing spaces cut (with
// `sgr`, trailing erased cells of the default pen). With `sgr`, an SGR before each change of
// pen, and a reset at the end when the last pen was not the default.
void append_row(std::string& out, const std::vector<Cell>& cells, bool sgr = false) {
  const std::size_t start = out.size();
  std::size_t kept = start;  // end of the text up to the last cell worth keeping
  Pen pen;                   // the default, as a line starts
  Pen kept_pen;              // the pen at `kept`
  for (const Cell& c : cells) {
    if (c.kind == Cell::Kind::continuation) continue;
    if (sgr && !(c.pen == pen)) {
      out += "\x1b[0";
      for_each_sgr_group(c.pen, [&out](std::string_view group, int) {
        out += ';';
        out += group;
      });
      out += 'm';
      pen = c.pen;
    }
    if (c.kind == Cell::Kind::erased) {
      out += ' ';
      if (sgr && !(c.pen == Pen{})) {  // a coloured blank is part of the picture
        kept = out.size();
        kept_pen = pen;
      }
      continue;
    }
    for (int i = 0; i < c.nchars; ++i) append_utf8(out, c.chars[static_cast<std::size_t>(i)]);
    if (!(c.nchars == 1 && c.chars[0] == U' ') || (sgr && !(c.pen == Pen{}))) {
      kept = out.size();
      kept_pen = pen;
    }
  }
  out.resize(kept);
  if (sgr && !(kept_pen == Pen{})) out += "\x1b[0m";
  out += '\n';
}

// append_row() without `sgr` for a history line read in place, when it has no combining marks
// (false, appending nothing, otherwise): the same text, from its stored cells only (the rest
// are erased: blanks at the end, cut).
bool append_stored_row(std::string& out, const Scrollback::StoredLine& line) {
  const std::size_t start = out.size();
  std::size_t kept = start;
  for (std::size_t c = 0; c < line.size(); ++c) {
    const char32_t ch = line.first_char(c);
    if (ch == kContinuationChar) continue;
    if (ch == 0) {
      out += ' ';
      continue;
    }
    if (line.combining(c)) {
      out.resize(start);
      return false;
    }
    append_utf8(out, ch);
    if (ch != U' ') kept = out.size();
  }
  out.resize(kept);
  out += '\n';
  return true;
}

std::string row_text(const std::vector<Cell>& cells, bool sgr) {
  std::string line;
  append_row(line, cells, sgr);
  line.pop_back();  // the '\n'
  return line;
}

}  // namespace

std::string plain_text(const MirrorScreen& screen, std::size_t history_lines, LineReading read) {
  std::string out;
  std::vector<Cell> cells;
  const std::size_t held = screen.scrollback_lines();
  for (std::size_t line = held - std::min(held, history_lines); line < held; ++line) {
    // (Deleting an actor with a full history took ~14 ms of the mirror thread as Cells.)
    if (read == LineReading::in_place && append_stored_row(out, screen.scrollback_line(line)))
      continue;
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

ScreenLines screen_lines(const MirrorScreen& screen, std::size_t history_lines, bool sgr) {
  ScreenLines out;
  std::vector<Cell> cells;
  const std::size_t held = screen.scrollback_lines();
  for (std::size_t line = held - std::min(held, history_lines); line < held; ++line) {
    cells.assign(static_cast<std::size_t>(screen.scrollback_cols(line)), Cell{});
    screen.scrollback_row(line, cells);
    out.history.push_back(row_text(cells, sgr));
  }
  cells.resize(static_cast<std::size_t>(screen.cols()));
  for (int row = 0; row < screen.rows(); ++row) {
    for (int col = 0; col < screen.cols(); ++col) {
      cells[static_cast<std::size_t>(col)] = screen.cell(row, col);
    }
    out.screen.push_back(row_text(cells, sgr));
  }
  return out;
}

}  // namespace backscroll::term
