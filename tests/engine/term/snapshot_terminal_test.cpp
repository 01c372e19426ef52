// SnapshotTerminal's pens (snapshot_terminal.hpp): the SGR a snapshot sets a pen with. It
// starts from a reset, names every attribute and both colours, keeps each SGR to libvterm
// 0.1.4's 16 parameters (a pen may need 22), writes nothing for the pen the terminal has, and
// writes the same bytes for a pen it encoded before (its small cache of recent pens).
#include <gtest/gtest.h>

#include <string>

#include "engine/term/snapshot_terminal.hpp"

namespace backscroll::testing {
namespace {

using term::Color;
using term::Pen;
using term::SnapshotTerminal;
using term::Underline;

Pen every_attribute() {
  Pen p;
  p.bold = p.faint = p.italic = p.blink = p.reverse = p.conceal = p.strike = p.overline = true;
  p.underline = Underline::curly;
  p.font = 1;
  p.fg = Color::rgb(1, 2, 3);
  p.bg = Color::rgb(4, 5, 6);
  return p;
}

std::string written(const Pen& p) {
  SnapshotTerminal t(80, 24);
  t.pen(p);
  return t.out();
}

TEST(SnapshotTerminalPen, NamesEveryAttributeAndSplitsPastSixteenParameters) {
  // 0, nine attributes (4:3 is two parameters) and font 11: 12 parameters; the truecolour
  // foreground's five would make 17, so it starts a second SGR.
  EXPECT_EQ(written(every_attribute()),
            "\x1b[0;1;2;3;4:3;5;7;8;9;53;11m\x1b[38;2;1;2;3;48;2;4;5;6m");
  // Without the font: exactly 16 with the foreground, which then stays in the first SGR.
  Pen p = every_attribute();
  p.font = 0;
  EXPECT_EQ(written(p), "\x1b[0;1;2;3;4:3;5;7;8;9;53;38;2;1;2;3m\x1b[48;2;4;5;6m");
}

TEST(SnapshotTerminalPen, WritesTheShortestFormOfEachColour) {
  Pen p;
  p.fg = Color::indexed(3);
  p.bg = Color::indexed(12);
  EXPECT_EQ(written(p), "\x1b[0;33;104m");
  p.fg = Color::indexed(200);
  p.bg = Color::indexed(0);
  EXPECT_EQ(written(p), "\x1b[0;38;5;200;40m");
  p.underline = Underline::double_;
  p.fg = Color{};
  EXPECT_EQ(written(p), "\x1b[0;4:2;40m");
}

TEST(SnapshotTerminalPen, WritesNothingForThePenItHasAndTheSameBytesForOneItHadBefore) {
  SnapshotTerminal t(80, 24);
  t.pen(Pen{});
  EXPECT_EQ(t.out(), "");  // a fresh terminal has the default pen
  Pen red;
  red.fg = Color::indexed(1);
  t.pen(red);
  t.pen(red);
  EXPECT_EQ(t.out(), "\x1b[0;31m");
  // Past the cache's eight slots and back: each pen's bytes as the first time.
  std::string want = t.out();
  for (int i = 0; i < 10; ++i) {
    Pen p;
    p.fg = Color::rgb(static_cast<std::uint8_t>(i), 0, 0);
    t.pen(p);
    want += "\x1b[0;38;2;" + std::to_string(i) + ";0;0m";
    t.pen(red);
    want += "\x1b[0;31m";
  }
  t.pen(every_attribute());
  t.pen(red);
  t.pen(every_attribute());
  want += written(every_attribute()) + "\x1b[0;31m" + written(every_attribute());
  EXPECT_EQ(t.out(), want);
}

}  // namespace
}  // namespace backscroll::testing
