// Mirror: VtScanner in front of MirrorScreen, as the mirror thread runs them per actor.
// - The contract holds at any cut, inside escape sequences and UTF-8 characters included: the
//   snapshot is tagged with a clean cursor at or before the cut, and a fresh terminal fed the
//   snapshot and then the raw bytes from that cursor shows what one fed everything shows.
// - How the stream is split into feed() calls changes neither the snapshot nor its cursor.
// - Where libvterm 0.1.4 departs from xterm on a sequence (SM/RM with several parameters, ?47,
//   DECSTR, RIS on the alternate screen, SCOSC/SCORC), the screen follows xterm, like the modes.
// - Resizes apply after the bytes fed before them; reset() gives a fresh terminal at a cursor.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/term/mirror.hpp"
#include "engine/term/reference/vterm_reference.hpp"
#include "engine/term/snapshot_grammar.hpp"

namespace backscroll::testing {
namespace {

using term::Cell;
using term::Mirror;

// Text, colours, wide and combining characters, cursor moves, scroll regions, the alternate
// screen, cursor save/restore, a title and pending wrap, with no sequence where libvterm (the
// reference here) and xterm differ. (DEC graphics through G1 and SO/SI: after ESC ( B, marks
// after an ASCII glyph at the row's end join it in xterm.js and the mirror, not in libvterm.)
const std::string kStream =
    "\x1b]2;mirror test\x07"
    "plain \x1b[1;31mred\x1b[m \xe4\xb8\xad\xe6\x96\x87 e\xcc\x81 \xf0\x9f\x98\x80\r\n"
    "\x1b[38;5;200;48;2;1;2;3mcolour\x1b[m\ttab\r\n"
    "\x1b[2;10r\x1b[?6h\x1b[5;1Hin region\x1b[?6l\x1b[r"
    "\x1b[10;78Habc\x1b[K\x1b[44m\x1b[2K\x1b[m"
    "\x1b[12;80HS\xcc\x8a\xcc\x83\xe4\xb8\xad"
    "\x1b)0\x0elqqk\x0f\x1b"
    "7\x1b[?1049h\x1b[Halt\x1b[?1049l\x1b"
    "8"
    "\x1b[3;3H\x1b[2@\x1b[1P\x1b[2L\x1b[1M\x1b[3X"
    "line\r\nline\r\nline\r\nline\r\nline\r\nline\r\nline\r\nline\r\nline\r\n"
    "x\x1b[5b\x1b[?25l\x1b[?1h\x1b[4 q";

std::unique_ptr<Mirror> fed(const std::string& bytes, const std::vector<std::size_t>& splits = {},
                            int cols = 80, int rows = 24) {
  auto m = std::make_unique<Mirror>(Cursor{0}, static_cast<std::uint16_t>(cols),
                                    static_cast<std::uint16_t>(rows));
  std::size_t at = 0;
  for (std::size_t split : splits) {
    if (split <= at || split > bytes.size()) continue;
    m->feed(std::string_view(bytes).substr(at, split - at));
    at = split;
  }
  m->feed(std::string_view(bytes).substr(at));
  return m;
}

// "" when a fresh reference terminal fed `snapshot` + stream[cursor:] matches one fed `stream`.
std::string contract_difference(const std::string& stream, std::size_t cut, int cols, int rows) {
  const term::MirrorSnapshot s = fed(stream.substr(0, cut), {}, cols, rows)->snapshot();
  if (s.snapshot.fallback_reason) return "fallback: " + *s.snapshot.fallback_reason;
  if (s.cursor > Cursor{cut}) return "tagged past the cut";
  std::string why;
  if (!term::is_safe_snapshot(s.snapshot.bytes, &why)) return "unsafe snapshot: " + why;
  // One write: a plain libvterm joins a combining mark to its glyph only inside one.
  ReferenceTerminal fresh(cols, rows);
  fresh.feed(s.snapshot.bytes + stream.substr(value(s.cursor)));
  ReferenceTerminal whole(cols, rows);
  whole.feed(stream);
  return first_difference(fresh.model(), whole.model());
}

TEST(Mirror, ContractHoldsAtEveryByteOfTheStream) {
  for (std::size_t cut = 0; cut <= kStream.size(); ++cut)
    ASSERT_EQ(contract_difference(kStream, cut, 80, 24), "") << "cut at byte " << cut;
}

RC_GTEST_PROP(Mirror, ContractHoldsAtRandomCutsOfRepeatedStreams, ()) {
  const int copies = *rc::gen::inRange(1, 4);
  std::string stream;
  for (int i = 0; i < copies; ++i) stream += kStream;
  const std::size_t cut = *rc::gen::inRange<std::size_t>(0, stream.size() + 1);
  RC_ASSERT(contract_difference(stream, cut, 80, 24) == "");
}

RC_GTEST_PROP(Mirror, AnySplitGivesTheSameSnapshotAndCursor, ()) {
  const auto splits = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, kStream.size()));
  std::vector<std::size_t> sorted = splits;
  std::sort(sorted.begin(), sorted.end());
  const auto a = fed(kStream)->snapshot();
  const auto b = fed(kStream, sorted)->snapshot();
  RC_ASSERT(a.cursor == b.cursor);
  RC_ASSERT(a.snapshot.bytes == b.snapshot.bytes);
  RC_ASSERT(!a.snapshot.fallback_reason);
}

TEST(Mirror, ReachesEveryCleanBoundaryItIsFed) {
  Mirror m(Cursor{100}, 80, 24);
  m.feed("\x1b[mab");
  EXPECT_EQ(m.parsed(), Cursor{105});  // a prompt's last byte is on the screen at once
  EXPECT_EQ(m.snapshot().cursor, Cursor{105});
  m.feed("\xe4\xb8");
  EXPECT_EQ(m.parsed(), Cursor{105});  // only an unfinished character waits
  m.feed("\xad");
  EXPECT_EQ(m.parsed(), Cursor{108});
  EXPECT_EQ(m.snapshot().cursor, Cursor{108});
  m.feed("\xcc\x81");  // a combining mark in a later write joins the wide glyph
  EXPECT_EQ(m.snapshot().cursor, Cursor{110});
  EXPECT_EQ(m.screen().cell(0, 2).nchars, 2);
}

// A resize right after a prompt (no line end) is a clean boundary too: the snapshot that a
// resizing controller's attach waits for is exact, at the new size.
TEST(Mirror, SnapshotsAtThePromptAfterAResize) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("\x1b[1;32muser@host\x1b[m:~$ ");
  m.resize(100, 30);
  const auto s = m.snapshot();
  ASSERT_FALSE(s.snapshot.fallback_reason) << *s.snapshot.fallback_reason;
  EXPECT_EQ(s.cursor, Cursor{23});
  EXPECT_EQ(s.snapshot.cols, 100);
  EXPECT_EQ(s.snapshot.rows, 30);
}

TEST(Mirror, TagsSnapshotsWithTheCleanCursorBeforeAHeldSequence) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("ok\r\n\x1b[3");
  const auto s = m.snapshot();
  ASSERT_FALSE(s.snapshot.fallback_reason);
  EXPECT_EQ(s.cursor, Cursor{4});
  m.feed("1mred\r\n");
  EXPECT_EQ(m.snapshot().cursor, Cursor{14});
  EXPECT_EQ(m.screen().cell(1, 0).pen.fg, m.screen().cell(1, 2).pen.fg);
}

TEST(Mirror, ASnapshotShowsTheTitleAsOfItsCursor) {
  // An OSC 2 ended by the ESC of a CSI that has not ended yet: the clean cursor is before the
  // OSC (libvterm is held there), so a snapshot tagged with it must not set the title yet; a
  // client replaying from that cursor sets it when it parses the OSC (found by the fuzzer:
  // fuzz/findings/README.md).
  Mirror m(Cursor{0}, 10, 2);
  m.feed(std::string_view("\x00\x1b]2;mirror\x1b[?", 14));
  const auto held = m.snapshot();
  ASSERT_FALSE(held.snapshot.fallback_reason);
  EXPECT_EQ(held.cursor, Cursor{1});
  EXPECT_EQ(m.scanner().title(), "");
  EXPECT_EQ(held.snapshot.bytes.find("mirror"), std::string::npos) << held.snapshot.bytes;
  m.feed("1h");
  const auto after = m.snapshot();
  EXPECT_EQ(after.cursor, Cursor{16});
  EXPECT_EQ(m.scanner().title(), "mirror");
  EXPECT_NE(after.snapshot.bytes.find("\x1b]2;mirror"), std::string::npos) << after.snapshot.bytes;
}

TEST(Mirror, FallsBackInsideASequenceLongerThanItHolds) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("\x1b]2;" + std::string(term::VtScanner::kMaxHoldBytes + 10, 'x'));
  EXPECT_EQ(m.snapshot().snapshot.fallback_reason, "incomplete_sequence");
  m.feed(
      "\x07"
      "after\r\n");
  EXPECT_FALSE(m.snapshot().snapshot.fallback_reason);
}

TEST(Mirror, FallsBackWithTheScannersReasonForGraphics) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("\x1bPq#0;2;0;0;0#0~~\x1b\\\r\n");
  const auto reason = m.snapshot().snapshot.fallback_reason;
  ASSERT_TRUE(reason);
  EXPECT_EQ(*reason, std::string(*m.scanner().unmodelled_reason()));
}

TEST(Mirror, AppliesEveryParameterOfAModeSequence) {
  Mirror m(Cursor{0}, 80, 24);
  // libvterm alone applies only ?25: origin mode would stay off and X land at the cursor.
  m.feed("\x1b[5;10r\x1b[20;20H\x1b[?25;6hX\r\n");
  EXPECT_EQ(m.screen().cell(4, 0).chars[0], U'X');
  EXPECT_TRUE(m.scanner().modes().origin);
  EXPECT_EQ(term::split_mode_sequence("\x1b[?25;6h"), "\x1b[?25h\x1b[?6h");
  EXPECT_EQ(term::split_mode_sequence("\x1b[4;\r20l"), "\r\x1b[4l\x1b[20l");
  EXPECT_EQ(term::split_mode_sequence("\x1b[?1006:2;47h"), "\x1b[?1006h\x1b[?1047h");
  EXPECT_EQ(term::split_mode_sequence("\x1b[31m"), "");
}

TEST(Mirror, Mode47SwitchesToTheAlternateScreen) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("main\r\n\x1b[?47halt\r\n");
  EXPECT_TRUE(m.screen().alt_screen());
  EXPECT_TRUE(m.scanner().modes().alternate_screen);
  m.feed("\x1b[?47l\r\n");
  EXPECT_FALSE(m.screen().alt_screen());
  EXPECT_EQ(m.screen().cell(0, 0).chars[0], U'm');
}

TEST(Mirror, SoftResetFollowsXterm) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("\x1b[31m\x1b[4h\x1b[?7l\x1b[?25l\x1b[3;5r\x1b[?6h\x1b[2;4H");
  const auto before = m.screen().cursor();
  m.feed("\x1b[!pA\r\n");
  EXPECT_FALSE(m.scanner().modes().insert);
  EXPECT_FALSE(m.scanner().modes().origin);
  EXPECT_TRUE(m.screen().autowrap());
  EXPECT_TRUE(m.screen().cursor().visible);
  const Cell a = m.screen().cell(before.row, before.col);
  EXPECT_EQ(a.chars[0], U'A');
  EXPECT_EQ(a.pen, term::Pen{});
  EXPECT_FALSE(m.snapshot().snapshot.fallback_reason);
}

TEST(Mirror, HardResetLeavesTheAlternateScreen) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed(
      "\x1b[?1049hfull screen\x1b"
      "c");
  EXPECT_FALSE(m.screen().alt_screen());
  EXPECT_FALSE(m.scanner().modes().alternate_screen);
  EXPECT_FALSE(m.snapshot().snapshot.fallback_reason);
}

TEST(Mirror, ScoSaveAndRestoreMoveTheCursorBack) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("ab\x1b[s\x1b[5;5H\x1b[uX\r\n");
  EXPECT_EQ(m.screen().cell(0, 2).chars[0], U'X');
  m.feed("cd\x1b[sY\r\n");  // the save does not move the cursor
  EXPECT_EQ(m.screen().cell(1, 2).chars[0], U'Y');
}

TEST(Mirror, ResizeAppliesAfterTheBytesBeforeIt) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("\x1b[24;1Hbottom\x1b[3");  // a sequence cut by the resize
  m.resize(40, 10);
  m.feed("1mred\r\n");
  EXPECT_EQ(m.screen().cols(), 40);
  EXPECT_EQ(m.screen().rows(), 10);
  const auto s = m.snapshot();
  ASSERT_FALSE(s.snapshot.fallback_reason);
  EXPECT_EQ(s.snapshot.cols, 40);
  EXPECT_EQ(s.cursor, Cursor{23});
}

TEST(Mirror, ResetGivesAFreshTerminalAtTheCursor) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("\x1b]2;old\x07\x1b[?1049h\x1b[31mtext\x1b[?1h\r\n");
  m.reset(Cursor{5000});
  EXPECT_EQ(m.position(), Cursor{5000});
  EXPECT_EQ(m.scanner().title(), "");
  EXPECT_FALSE(m.screen().alt_screen());
  EXPECT_FALSE(m.scanner().modes().cursor_keys_application);
  m.feed("new\r\n");
  const auto s = m.snapshot();
  EXPECT_EQ(s.cursor, Cursor{5005});
  EXPECT_EQ(m.screen().cell(0, 0).chars[0], U'n');
}

}  // namespace
}  // namespace backscroll::testing
