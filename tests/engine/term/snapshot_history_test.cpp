// A snapshot draws a simple line (LineDrawer::draw_simple) from where it is kept: a history
// line from the history ring (Scrollback::StoredLine), a row of the main or the alternate
// screen from the grid (GridRow). Read as Cells instead (LineReading::as_cells), every line must
// give the same bytes (and the plain text a deleted actor leaves, its history lines read in place
// too): the in-place reads must say exactly what the Cells say (which the snapshot contract tests
// check against libvterm and xterm.js), and a line they call simple must be one the Cells call
// simple. Checked on streams that leave every kind of line: plain and colored text, erased runs in
// a pen, wide characters (at the row's end too), combining marks, double-width lines, lines from a
// wider or narrower terminal, the main screen while the alternate one is active, and the alternate
// screen's rows (rows left pristine among them).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/plain_text.hpp"
#include "engine/term/snapshot_screens.hpp"
#include "engine/term/snapshot_terminal.hpp"
#include "tests/engine/term/line_read_check.hpp"

namespace backscroll::testing {
namespace {

using term::LineReading;
using term::MirrorScreen;

struct Drawn {
  std::string bytes;
  std::size_t lines = 0;
};

Drawn draw(const MirrorScreen& m, std::size_t want, LineReading read) {
  term::SnapshotTerminal t(m.cols(), m.rows());
  Drawn d;
  d.lines = term::write_history_and_main(t, m, want, read);
  d.bytes = t.out();
  return d;
}

// Each main screen row read in place shows the cells main_cell() does, and each row of the
// active screen (the alternate one while it is active) those cell() does.
void expect_rows_read_as_cells(const MirrorScreen& m) {
  for (const bool active : {false, true}) {
    for (int r = 0; r < m.rows(); ++r) {
      SCOPED_TRACE((active ? "active screen row " : "main screen row ") + std::to_string(r));
      const term::GridRow row = active ? m.active_row(r) : m.main_row(r);
      ASSERT_EQ(row.size(), static_cast<std::size_t>(m.cols()));
      term::Cell previous;
      for (int c = 0; c < m.cols(); ++c) {
        const term::Cell want = active ? m.cell(r, c) : m.main_cell(r, c);
        expect_read_as(row, static_cast<std::size_t>(c), want, c > 0 ? &previous : nullptr);
        previous = want;
      }
    }
  }
}

std::string draw_alternate(const MirrorScreen& m, LineReading read) {
  term::SnapshotTerminal t(m.cols(), m.rows());
  term::write_alternate_screen(t, m, /*enter=*/true, read);
  return t.out();
}

void expect_same_bytes(const MirrorScreen& m) {
  expect_rows_read_as_cells(m);
  ASSERT_EQ(term::plain_text(m, SIZE_MAX, LineReading::in_place),
            term::plain_text(m, SIZE_MAX, LineReading::as_cells));
  for (const std::size_t want : {std::size_t{0}, std::size_t{3}, m.scrollback_lines()}) {
    const Drawn in_place = draw(m, want, LineReading::in_place);
    const Drawn as_cells = draw(m, want, LineReading::as_cells);
    ASSERT_EQ(in_place.lines, as_cells.lines);
    ASSERT_EQ(in_place.bytes, as_cells.bytes) << "history lines asked: " << want;
  }
  if (m.alt_screen()) {
    ASSERT_EQ(draw_alternate(m, LineReading::in_place), draw_alternate(m, LineReading::as_cells));
  }
}

// Pieces of output that leave different kinds of cells behind.
const std::vector<std::string>& pieces() {
  static const std::vector<std::string> all{
      "plain text ",
      "x",
      "\r\n",
      "\n",
      "\r",
      "\t",
      "\b",
      "\x1b[31m",
      "\x1b[1;4m",
      "\x1b[2m",
      "\x1b[8m",
      "\x1b[53m",
      "\x1b[7m",
      "\x1b[38;5;208m",
      "\x1b[48;2;10;20;30m",
      "\x1b[44m",
      "\x1b[0m",
      "\x1b[m",
      "\x1b[K",
      "\x1b[1K",
      "\x1b[3X",
      "\x1b[2P",
      "\x1b[2@",
      "\x1b[5G",
      "\x1b[3D",
      "\u4e2d\u6587",      // wide
      "\xf0\x9f\x98\x80",  // a wide emoji
      "e\u0301",           // a combining mark
      "\u00e9t\u00e9 ",    // narrow UTF-8
      "\u200b",            // zero-width
      "\x1b#6",            // DECDWL
      "\x1b#3",            // DECDHL top half
      "\x1b#5",            // single width again
      "\x1b[?5h",          // reverse video
      "\x1b[?5l",
      "\x1b[?7l",  // no autowrap
      "\x1b[?7h",
      "\x1b[4:3m",  // curly underline
      "\x1b[3;9;11m",
      "\x1b[?1049h",  // the alternate screen: the main one is drawn from its copy
      "\x1b[?1049l",
      "\x1b[2;1H",
  };
  return all;
}

RC_GTEST_PROP(SnapshotHistory, LinesReadInPlaceDrawAsTheirCellsDo, ()) {
  const int cols = *rc::gen::inRange(2, 30);
  const int rows = *rc::gen::inRange(2, 6);
  MirrorScreen m(cols, rows);
  const int steps = *rc::gen::inRange(1, 200);
  for (int step = 0; step < steps; ++step) {
    if (*rc::gen::inRange(0, 40) == 0) {
      // Lines from a wider terminal are cut at the new width, from a narrower one padded.
      m.resize(*rc::gen::inRange(2, 30), *rc::gen::inRange(2, 6));
      continue;
    }
    m.feed(*rc::gen::elementOf(pieces()));
  }
  m.feed("\r\n");
  expect_same_bytes(m);
}

TEST(SnapshotHistory, EveryKindOfLineDrawsTheSameReadInPlace) {
  MirrorScreen m(12, 3);
  m.feed(
      "ascii line\r\n"
      "\x1b[31mred\x1b[0m and \x1b[1;44mbold\x1b[m\r\n"
      "\x1b[44m\x1b[K\x1b[0m\r\n"             // a line erased in a colour
      "ab\x1b[42m\x1b[3Xcd\x1b[m\r\n"         // an erased run in a pen between glyphs
      "\u4e2d\u6587\u4e2d\u6587\u4e2d\u6587"  // wide characters up to the row's end
      "\r\n"
      "abcdefghijk\u4e2d\r\n"  // a wide character that wraps
      "cafe\u0301\r\n"         // a combining mark
      "\x1b#6wide line\r\n"
      "\x1b[38;2;1;2;3mtruecolor\x1b[m\r\n");
  m.resize(8, 3);  // the lines before are cut at 8 columns
  m.feed("short\r\n\r\n\r\n");
  m.resize(16, 3);
  m.feed("after growing\r\n\r\n\r\n");
  ASSERT_GE(m.scrollback_lines(), 12u);
  expect_same_bytes(m);
}

TEST(SnapshotHistory, EveryKindOfAlternateScreenRowDrawsTheSameReadInPlace) {
  MirrorScreen m(12, 10);
  m.feed("main screen\r\n\x1b[?1049h");
  m.feed(
      "\x1b[1;1Hascii row"
      "\x1b[2;1H\x1b[31mred\x1b[0m and \x1b[1;44mbold\x1b[m"
      "\x1b[4;1H\x1b[44m\x1b[K\x1b[0m"      // row 3 erased in a colour (row 2 left pristine)
      "\x1b[5;1Hab\x1b[42m\x1b[3Xcd\x1b[m"  // an erased run in a pen between glyphs
      "\x1b[6;1H\u4e2d\u6587\u4e2d\u6587\u4e2d\u6587"
      "\x1b[7;1Hcafe\u0301"  // a combining mark
      "\x1b[8;1H\x1b#6wide"
      "\x1b[10;3H\x1b[38;2;1;2;3mtruecolor\x1b[m");  // row 8 pristine, row 9 starts erased
  ASSERT_TRUE(m.alt_screen());
  const std::string in_place = draw_alternate(m, LineReading::in_place);
  EXPECT_EQ(in_place, draw_alternate(m, LineReading::as_cells));
  EXPECT_NE(in_place.find("truecolor"), std::string::npos);
  expect_same_bytes(m);
}

}  // namespace
}  // namespace backscroll::testing
