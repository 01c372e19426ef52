// ScreenRenderer (tools/cli_screen_render.hpp): the frame `attach` draws from its local model of
// an actor is what a terminal fed those bytes shows. The terminal here is a MirrorScreen (it
// reads bytes as xterm.js does).
#include <gtest/gtest.h>

#include <string>

#include "engine/term/mirror_screen.hpp"
#include "tools/cli_screen_render.hpp"

namespace backscroll::cli {
namespace {

using term::Cell;
using term::MirrorScreen;

std::string row_text(const MirrorScreen& m, int row) {
  std::string s;
  for (int c = 0; c < m.cols(); ++c) {
    const Cell cell = m.cell(row, c);
    s += cell.kind == Cell::Kind::glyph && cell.chars[0] < 0x80 ? static_cast<char>(cell.chars[0])
         : cell.kind == Cell::Kind::glyph                       ? '?'
                                                                : ' ';
  }
  return s;
}

TEST(ScreenRenderer, DrawsTheActorsCellsInTheirColumns) {
  MirrorScreen actor(12, 3);
  actor.feed("abc\x1b[1;31mred\x1b[m \xe4\xb8\xad!\r\n\x1b[2;4Hmid");
  ScreenRenderer renderer;
  renderer.set_terminal(12, 3);
  MirrorScreen terminal(12, 3);
  terminal.feed(renderer.frame(actor, ""));
  EXPECT_EQ(row_text(terminal, 0), row_text(actor, 0));
  EXPECT_EQ(row_text(terminal, 1), row_text(actor, 1));
  EXPECT_TRUE(terminal.cell(0, 3).pen.bold);
}

// A cell that starts with a zero-width character (one that followed no glyph: a column of its
// own in the model) is drawn as a space: printed as it is, a terminal would join it to the
// glyph before it or not advance, and every later cell of the row would land a column left.
TEST(ScreenRenderer, KeepsColumnsAfterALoneZeroWidthCharacter) {
  MirrorScreen actor(12, 3);
  actor.feed(
      "\x1b[2;1H\xe2\x80\x8b"
      "ab\x1b[m\xcc\x81"
      "cd");
  ASSERT_EQ(actor.cell(1, 0).chars[0], U'\u200b');
  ScreenRenderer renderer;
  renderer.set_terminal(12, 3);
  MirrorScreen terminal(12, 3);
  terminal.feed(renderer.frame(actor, ""));
  EXPECT_EQ(row_text(terminal, 1), " ab cd      ");
}

}  // namespace
}  // namespace backscroll::cli
