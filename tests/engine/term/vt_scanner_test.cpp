// VtScanner (engine/term/vt_scanner.hpp, docs/vt-scanner.md): clean boundaries and the bound on
// what it holds back, the modes it tracks, the title, unmodelled output, the marks it reports, and
// hostile input. Cases marked "measured" assert what libvterm 0.1.4 was seen to do on this
// machine. The properties check the central promise: however the stream is split into scan()
// calls, the outcome and the clean positions are the same.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/vt_scanner.hpp"

namespace backscroll::testing {
namespace {

using term::CursorStyleSource;
using term::Mark;
using term::MarkKind;
using term::MouseEncoding;
using term::MouseTracking;
using term::TerminalModes;
using term::VtScanner;
using namespace std::string_literals;

// Positions are cursors; starting away from 0 catches a count mistaken for a cursor.
constexpr std::uint64_t kStart = 1000;

VtScanner scanned(std::string_view bytes, std::uint16_t cols = 80, std::uint16_t rows = 24) {
  VtScanner scanner(Cursor{kStart}, cols, rows);
  scanner.scan(bytes);
  return scanner;
}

TerminalModes modes_after(std::string_view bytes) { return scanned(bytes).modes(); }

// Offsets from the start of the stream.
std::uint64_t clean_at(const VtScanner& s) { return value(s.clean_position()) - kStart; }
std::uint64_t feed_at(const VtScanner& s) { return value(s.feed_limit()) - kStart; }

std::string reason_of(std::string_view bytes) {
  const auto reason = scanned(bytes).unmodelled_reason();
  return reason ? std::string(*reason) : std::string("none");
}

std::vector<MarkKind> kinds(const VtScanner& s) {
  std::vector<MarkKind> out;
  for (const Mark& m : s.marks()) out.push_back(m.kind);
  return out;
}

// Everything a scan produces that must not depend on how the stream was split.
struct Outcome {
  TerminalModes modes;
  std::string title;
  std::uint64_t title_changes = 0;
  std::uint64_t bells = 0;
  std::string reason;
  std::uint64_t position = 0;
  std::uint64_t clean = 0;
  std::uint64_t feed = 0;
  std::vector<Mark> marks;
  bool operator==(const Outcome&) const = default;
};

// Appends marks, joining libvterm_skip ranges that a scan boundary cut in two.
void collect(std::vector<Mark>& into, const VtScanner& s) {
  for (const Mark& m : s.marks()) {
    if (m.kind == MarkKind::libvterm_skip && !into.empty() &&
        into.back().kind == MarkKind::libvterm_skip && into.back().end == m.begin) {
      into.back().end = m.end;
      continue;
    }
    into.push_back(m);
  }
}

Outcome outcome_of(const VtScanner& s, std::vector<Mark> marks) {
  const auto reason = s.unmodelled_reason();
  return Outcome{s.modes(),
                 std::string(s.title()),
                 s.title_changes(),
                 s.bells(),
                 reason ? std::string(*reason) : "none",
                 value(s.position()) - kStart,
                 clean_at(s),
                 feed_at(s),
                 std::move(marks)};
}

// Scans `stream` cut at `cuts` (sorted offsets), then one CAN so every held mark is released.
Outcome run_split(std::string_view stream, std::vector<std::size_t> cuts) {
  VtScanner s(Cursor{kStart}, 80, 24);
  std::vector<Mark> marks;
  std::sort(cuts.begin(), cuts.end());
  std::size_t from = 0;
  cuts.push_back(stream.size());
  for (std::size_t cut : cuts) {
    if (cut < from) continue;
    s.scan(stream.substr(from, cut - from));
    collect(marks, s);
    from = cut;
  }
  s.scan("\x18");
  collect(marks, s);
  return outcome_of(s, std::move(marks));
}

Outcome run_whole(std::string_view stream) { return run_split(stream, {}); }

// ---------------------------------------------------------------------------------------------
// Modes

TEST(VtScanner, StartsWithXtermDefaults) {
  const TerminalModes m = modes_after("plain text\r\n");
  EXPECT_EQ(m, TerminalModes{});
  EXPECT_TRUE(m.autowrap);
  EXPECT_TRUE(m.cursor_visible);
}

struct DecModeCase {
  int mode;
  bool TerminalModes::*field;
  bool initial;
};

TEST(VtScanner, SetsAndResetsEveryBooleanDecMode) {
  const DecModeCase cases[] = {
      {1, &TerminalModes::cursor_keys_application, false},
      {5, &TerminalModes::reverse_video, false},
      {6, &TerminalModes::origin, false},
      {7, &TerminalModes::autowrap, true},
      {25, &TerminalModes::cursor_visible, true},
      {66, &TerminalModes::keypad_application, false},
      {69, &TerminalModes::left_right_margin_mode, false},
      {1004, &TerminalModes::focus_reporting, false},
      {2004, &TerminalModes::bracketed_paste, false},
      {47, &TerminalModes::alternate_screen, false},
      {1047, &TerminalModes::alternate_screen, false},
      {1049, &TerminalModes::alternate_screen, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.mode);
    const std::string set = "\x1b[?" + std::to_string(c.mode) + (c.initial ? "l" : "h");
    const std::string reset = "\x1b[?" + std::to_string(c.mode) + (c.initial ? "h" : "l");
    EXPECT_EQ(modes_after(set).*c.field, !c.initial);
    EXPECT_EQ(modes_after(set + reset).*c.field, c.initial);
    EXPECT_EQ(modes_after(set + reset), TerminalModes{});
  }
}

TEST(VtScanner, SetsAndResetsInsertAndNewlineWithAnsiModes) {
  EXPECT_TRUE(modes_after("\x1b[4h").insert);
  EXPECT_FALSE(modes_after("\x1b[4h\x1b[4l").insert);
  EXPECT_TRUE(modes_after("\x1b[20h").linefeed_newline);
  EXPECT_FALSE(modes_after("\x1b[20h\x1b[20l").linefeed_newline);
  // The private and ANSI mode spaces are distinct.
  EXPECT_FALSE(modes_after("\x1b[?4h").insert);
  EXPECT_EQ(modes_after("\x1b[25l\x1b[1h"), TerminalModes{});
}

TEST(VtScanner, KeypadFollowsDeckpamAndDeckpnm) {
  EXPECT_TRUE(modes_after("\x1b=").keypad_application);
  EXPECT_FALSE(modes_after("\x1b=\x1b>").keypad_application);
  EXPECT_FALSE(modes_after("\x1b[?66h\x1b>").keypad_application);
}

TEST(VtScanner, SettingOneMouseTrackingModeReplacesTheOther) {
  EXPECT_EQ(modes_after("\x1b[?9h").mouse_tracking, MouseTracking::x10);
  EXPECT_EQ(modes_after("\x1b[?1000h").mouse_tracking, MouseTracking::normal);
  EXPECT_EQ(modes_after("\x1b[?1000h\x1b[?1002h").mouse_tracking, MouseTracking::button);
  EXPECT_EQ(modes_after("\x1b[?1002h\x1b[?1003h").mouse_tracking, MouseTracking::any);
  EXPECT_EQ(modes_after("\x1b[?1003h\x1b[?1000h").mouse_tracking, MouseTracking::normal);
}

TEST(VtScanner, ResettingAnyMouseTrackingModeTurnsTrackingOff) {
  // xterm's set_mousemode(); libvterm (measured: 1000h 1002h 1000l gives none) and xterm.js agree.
  EXPECT_EQ(modes_after("\x1b[?1002h\x1b[?1002l").mouse_tracking, MouseTracking::off);
  EXPECT_EQ(modes_after("\x1b[?1002h\x1b[?1000l").mouse_tracking, MouseTracking::off);
  EXPECT_EQ(modes_after("\x1b[?1003h\x1b[?9l").mouse_tracking, MouseTracking::off);
}

TEST(VtScanner, MouseEncodingResetOnlyUndoesTheEncodingInEffect) {
  EXPECT_EQ(modes_after("\x1b[?1006h").mouse_encoding, MouseEncoding::sgr);
  EXPECT_EQ(modes_after("\x1b[?1005h\x1b[?1006h").mouse_encoding, MouseEncoding::sgr);
  EXPECT_EQ(modes_after("\x1b[?1006h\x1b[?1015h").mouse_encoding, MouseEncoding::urxvt);
  EXPECT_EQ(modes_after("\x1b[?1006h\x1b[?1006l").mouse_encoding, MouseEncoding::x10);
  // xterm: "a reset is only effective against the matching mode" (libvterm resets any).
  EXPECT_EQ(modes_after("\x1b[?1015h\x1b[?1006l").mouse_encoding, MouseEncoding::urxvt);
  // Encoding and tracking are independent.
  const TerminalModes m = modes_after("\x1b[?1006h\x1b[?1000h\x1b[?1000l");
  EXPECT_EQ(m.mouse_tracking, MouseTracking::off);
  EXPECT_EQ(m.mouse_encoding, MouseEncoding::sgr);
}

TEST(VtScanner, AppliesEveryParameterOfAMultiParameterModeSequence) {
  const VtScanner s = scanned("\x1b[?1;1049;2004;1000;1006h");
  EXPECT_TRUE(s.modes().cursor_keys_application);
  EXPECT_TRUE(s.modes().alternate_screen);
  EXPECT_TRUE(s.modes().bracketed_paste);
  EXPECT_EQ(s.modes().mouse_tracking, MouseTracking::normal);
  EXPECT_EQ(s.modes().mouse_encoding, MouseEncoding::sgr);
  // libvterm 0.1.4 applies only the first parameter (measured): the mirror is told to fix up.
  EXPECT_EQ(kinds(s), (std::vector{MarkKind::enter_alt_1049, MarkKind::mode_fixup}));
  const TerminalModes off = modes_after("\x1b[?1;1049;2004h\x1b[?2004;1;1049l");
  EXPECT_EQ(off, TerminalModes{});
  EXPECT_TRUE(modes_after("\x1b[4;20h").insert);
  EXPECT_TRUE(modes_after("\x1b[4;20h").linefeed_newline);
  EXPECT_EQ(kinds(scanned("\x1b[4;20h")), std::vector{MarkKind::mode_fixup});
}

TEST(VtScanner, MissingAndSubParametersAreNotModes) {
  EXPECT_FALSE(modes_after("\x1b[?;25l").cursor_visible);  // the missing one is skipped
  EXPECT_FALSE(modes_after("\x1b[?25:1l").cursor_visible);
  EXPECT_TRUE(modes_after("\x1b[?1:25l").cursor_visible);  // 25 is a sub-parameter of 1
  EXPECT_TRUE(modes_after("\x1b[?0025h\x1b[?25h").cursor_visible);
}

TEST(VtScanner, IgnoresModeSequencesLibvtermDoesNotDispatch) {
  EXPECT_TRUE(modes_after("\x1b[??25l").cursor_visible);  // two leaders
  EXPECT_TRUE(modes_after("\x1b[?25$l").cursor_visible);  // an intermediate
  EXPECT_TRUE(modes_after("\x1b[>25l").cursor_visible);   // another leader
  EXPECT_TRUE(modes_after("\x1b[?2 5l").cursor_visible);  // intermediate, then a digit: aborted
  EXPECT_TRUE(modes_after("\x1b[1?25l").cursor_visible);  // leader after a digit: aborted
}

TEST(VtScanner, ClampsAbsurdParameters) {
  // 2^32 + 25: libvterm 0.1.4 wraps it to 25 (measured); clamping to 65535 names no mode.
  EXPECT_TRUE(modes_after("\x1b[?4294967321l").cursor_visible);
  EXPECT_EQ(modes_after("\x1b[3;99999999999999999999r").scroll_bottom, 24);
  EXPECT_EQ(modes_after("\x1b[3;99999999999999999999r").scroll_top, 2);
}

// ---------------------------------------------------------------------------------------------
// Scroll region and margins (libvterm 0.1.4's rules, each case measured with DECRQSS)

struct RegionCase {
  const char* bytes;
  std::uint16_t top;
  std::uint16_t bottom;
};

TEST(VtScanner, ScrollRegionFollowsLibvterm) {
  const RegionCase cases[] = {
      {"\x1b[5;10r", 4, 10},
      {"\x1b[5;10r\x1b[r", 0, 0},      // no parameters: full screen
      {"\x1b[5;10r\x1b[10;5r", 0, 0},  // inverted: reset to full screen (xterm would ignore it)
      {"\x1b[5;10r\x1b[7;7r", 6, 7},   // one line is a valid region in libvterm
      {"\x1b[5;100r", 4, 24},          // bottom clamped to the screen
      {"\x1b[30;40r", 0, 0},           // top past the screen: invalid
      {"\x1b[5r", 4, 0},               // bottom missing: to the last row
      {"\x1b[;5r", 0, 5},
      {"\x1b[0;0r", 0, 0},
      {"\x1b[3;7r\x1b[5;0r", 0, 0},  // a 0 bottom is not "default" in libvterm
      {"\x1b[3;7r\x1b[0;10r", 0, 10},
      {"\x1b[1;24r", 0, 0},  // exactly the whole screen is stored as full screen
      {"\x1b[2;24r", 1, 24},
      {"\x1b[24r", 23, 0},
      {"\x1b[3;7r\x1b[5:1;10r", 0, 0},  // sub-parameters count as arguments: 5, 1 is invalid
      {"\x1b[3;7r\x1b[5;10;3r", 4, 10},
      {"\x1b[3;7r\x1b[?5;10r", 2, 7},  // other forms are ignored
      {"\x1b[3;7r\x1b[5;10 r", 2, 7},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.bytes + 1);
    const TerminalModes m = modes_after(c.bytes);
    EXPECT_EQ(m.scroll_top, c.top);
    EXPECT_EQ(m.scroll_bottom, c.bottom);
  }
}

TEST(VtScanner, KnowsHowTheStreamSetTheCursorStyle) {
  auto source = [](std::string_view s) { return scanned(s).modes().cursor_style_source; };
  using enum CursorStyleSource;
  EXPECT_EQ(source("text\x1b[?25l"), none);
  EXPECT_EQ(source("\x1b[1 q"), decscusr);
  EXPECT_EQ(source("\x1b[?12l"), blink_mode);
  EXPECT_EQ(source("\x1b[5 q\x1b[?12l"), decscusr);  // xterm.js ignores ? 12 then
  EXPECT_EQ(source("\x1b[5 q\x1b[0 q"), none);       // each emulator's default
  // libvterm's restores bring back the saved style (xterm.js's do not): its reading again.
  EXPECT_EQ(source("\x1b[5 q\x1b"
                   "8"),
            none);
  EXPECT_EQ(source("\x1b[?1049h\x1b[?12l\x1b[?1049l"), none);
  EXPECT_EQ(source("\x1b"
                   "8\x1b[6 q"),
            decscusr);
}

TEST(VtScanner, ResizeClampsAnExplicitScrollRegionLikeLibvterm) {
  VtScanner s = scanned("\x1b[5;10r");
  s.resize(80, 30);
  EXPECT_EQ(s.modes().scroll_bottom, 10);
  s.resize(80, 8);
  EXPECT_EQ(s.modes().scroll_bottom, 8);
  // Degenerate (top 4 >= bottom 4): libvterm keeps it (measured) and crashes scrolling it; the
  // mirror resets it to the full screen, and so does the scanner.
  s.resize(80, 4);
  EXPECT_EQ(s.modes().scroll_top, 0);
  EXPECT_EQ(s.modes().scroll_bottom, 0);
  s.resize(80, 24);
  EXPECT_EQ(s.modes().scroll_bottom, 0);

  VtScanner full = scanned("\x1b[1;10r", 80, 10);  // the whole screen: stays full
  full.resize(80, 30);
  EXPECT_EQ(full.modes().scroll_bottom, 0);
  VtScanner explicit_bottom = scanned("\x1b[5;24r");  // explicit, though it reaches the edge
  explicit_bottom.resize(80, 30);
  EXPECT_EQ(explicit_bottom.modes().scroll_bottom, 24);
}

TEST(VtScanner, ResizeChangesWhatAScrollRegionMeans) {
  VtScanner s(Cursor{kStart}, 80, 24);
  s.resize(80, 10);
  s.scan("\x1b[5;24r");
  EXPECT_EQ(s.modes().scroll_bottom, 10);
  s.resize(0, 0);  // treated as 1x1
  s.scan("\x1b[1;1r");
  EXPECT_EQ(s.modes().scroll_bottom, 0);
}

TEST(VtScanner, MarginsAreStoredEvenWhileDeclrmmIsOffLikeLibvterm) {
  const TerminalModes off = modes_after("\x1b[3;7s");
  EXPECT_FALSE(off.left_right_margin_mode);
  EXPECT_EQ(off.scroll_left, 2);
  EXPECT_EQ(off.scroll_right, 7);
  const RegionCase cases[] = {
      {"\x1b[?69h\x1b[3;7s\x1b[s", 0, 0},    {"\x1b[?69h\x1b[3;7s\x1b[5;3s", 0, 0},
      {"\x1b[?69h\x1b[3;7s\x1b[5;5s", 4, 5}, {"\x1b[?69h\x1b[5;100s", 4, 80},
      {"\x1b[?69h\x1b[1;80s", 0, 0},         {"\x1b[?69h\x1b[;7s", 0, 7},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.bytes + 1);
    const TerminalModes m = modes_after(c.bytes);
    EXPECT_EQ(m.scroll_left, c.top);
    EXPECT_EQ(m.scroll_right, c.bottom);
  }
  VtScanner s = scanned("\x1b[?69h\x1b[3;70s");
  s.resize(40, 24);
  EXPECT_EQ(s.modes().scroll_right, 40);
}

// ---------------------------------------------------------------------------------------------
// Character sets

TEST(VtScanner, DesignatesG0AndG1AndShiftsWithSoAndSi) {
  EXPECT_EQ(modes_after("\x1b(0").g0, '0');
  EXPECT_EQ(modes_after("\x1b)0").g1, '0');
  EXPECT_EQ(modes_after("\x1b(A").g0, 'A');
  EXPECT_EQ(modes_after("\x1b(0\x1b(B").g0, 'B');
  EXPECT_TRUE(modes_after("\x0e").shift_out);
  EXPECT_FALSE(modes_after("\x0e\x0f").shift_out);
  EXPECT_EQ(reason_of("\x1b)0\x0eq\x0f\x1b(0q\x1b(B"), "none");
}

TEST(VtScanner, IgnoresDesignationsLibvtermDoesNotKnow) {
  EXPECT_EQ(modes_after("\x1b(0\x1b(K").g0, '0');   // German: libvterm keeps the old set
  EXPECT_EQ(modes_after("\x1b(0\x1b(%5").g0, '0');  // two intermediates
  EXPECT_EQ(modes_after("\x1b-A").g1, 'B');         // 96-character designations
}

TEST(VtScanner, ShiftsInsideSequencesAndStringsStillApplyLikeLibvterm) {
  // libvterm executes C0 controls wherever they appear.
  EXPECT_TRUE(modes_after("\x1b]0;a\x0e"
                          "b\x07")
                  .shift_out);
  EXPECT_TRUE(modes_after("\x1b[1\x0em").shift_out);
  EXPECT_TRUE(modes_after("\x1b(\x0e"
                          "0")
                  .shift_out);
  EXPECT_EQ(modes_after("\x1b(\x0e"
                        "0")
                .g0,
            '0');
}

TEST(VtScanner, ShiftsToG2AndG3AreUnmodelled) {
  EXPECT_EQ(reason_of("\x1bn"), "charset_shift");
  EXPECT_EQ(reason_of("\x1bo"), "charset_shift");
  EXPECT_FALSE(modes_after("\x0e\x1bn").shift_out);
  EXPECT_TRUE(modes_after("\x1bn\x0e").shift_out);
  // Single shifts matter only once G2 / G3 hold something other than the default.
  EXPECT_EQ(reason_of("\x1bNa\x1bOb"), "none");
  EXPECT_EQ(reason_of("\x1b*0\x1bNa"), "charset_shift");
  EXPECT_EQ(reason_of("\x1b+A\x1bOa"), "charset_shift");
}

// libvterm decodes the character after SS2 / SS3 by G2 / G3 (UTF-8 by default), a snapshot
// (which has no single shift) by GL: they differ where GL holds DEC graphics or UK, at the
// single shift or put there before the next text.
TEST(VtScanner, SingleShiftsWaitingWhileGlHoldsATableAreUnmodelled) {
  EXPECT_EQ(reason_of("\x1b(0\x1bNq"), "charset_shift");
  EXPECT_EQ(reason_of("\x1b)A\x0e\x1bOq"), "charset_shift");
  EXPECT_EQ(reason_of("\x1bN\x1b(0q"), "charset_shift");
  EXPECT_EQ(reason_of("\x1b)0\x1bN\x0eq"), "charset_shift");
  // Text took the shift before the table came, or GL holds US-ASCII (which decodes ASCII as
  // G2's UTF-8 does).
  EXPECT_EQ(reason_of("\x1bNq\x1b(0q"), "none");
  EXPECT_EQ(reason_of("\x1b(B\x1bNq"), "none");
  EXPECT_EQ(reason_of("\x1b)0\x1bN\x0f\x1b(Bq"), "none");
}

// ---------------------------------------------------------------------------------------------
// Resets

const char kEverything[] =
    "\x1b[?1h\x1b=\x1b[?6h\x1b[?7l\x1b[4h\x1b[20h\x1b[?25l\x1b[?5h\x1b[?2004h\x1b[?1004h"
    "\x1b[?1002h\x1b[?1006h\x1b[5;10r\x1b[?69h\x1b[3;7s\x1b(0\x1b)A\x0e\x1b[?1049h"
    "\x1b]2;T\x07";

TEST(VtScanner, HardResetRestoresEveryModeAndKeepsTheTitle) {
  const VtScanner before = scanned(kEverything);
  EXPECT_NE(before.modes(), TerminalModes{});
  const VtScanner s = scanned(kEverything +
                              "\x1bPq\x1b\\\x1b"
                              "c"s);
  EXPECT_EQ(s.modes(), TerminalModes{});
  EXPECT_EQ(s.title(), "T");
  EXPECT_EQ(s.unmodelled_reason(), std::nullopt);  // RIS also forgets the reason
  ASSERT_FALSE(s.marks().empty());
  EXPECT_EQ(s.marks().back().kind, MarkKind::hard_reset);
  EXPECT_EQ(s.marks().back().end, s.position());
  EXPECT_EQ(s.marks().back().modes, TerminalModes{});
}

TEST(VtScanner, SoftResetRestoresWhatXtermJsRestores) {
  const VtScanner s = scanned(kEverything + "\x1b[!p"s);
  TerminalModes expected{};
  // DECSTR leaves these alone:
  expected.linefeed_newline = true;
  expected.reverse_video = true;
  expected.mouse_tracking = MouseTracking::button;
  expected.mouse_encoding = MouseEncoding::sgr;
  expected.left_right_margin_mode = true;
  expected.alternate_screen = true;
  EXPECT_EQ(s.modes(), expected);
  EXPECT_EQ(s.marks().back().kind, MarkKind::soft_reset);
  EXPECT_EQ(modes_after("\x1b[!p"), TerminalModes{});
  EXPECT_EQ(modes_after("\x1b[?25l\x1b[?!p").cursor_visible, false);  // a leader: not DECSTR
}

// ---------------------------------------------------------------------------------------------
// Title

TEST(VtScanner, Osc0AndOsc2SetTheTitleAndOsc1DoesNot) {
  EXPECT_EQ(scanned("\x1b]0;zero\x07").title(), "zero");
  EXPECT_EQ(scanned("\x1b]2;two\x07").title(), "two");
  EXPECT_EQ(scanned("\x1b]2;two\x07\x1b]1;icon\x07").title(), "two");
  EXPECT_EQ(scanned("\x1b]00;lead\x07").title(), "lead");
  EXPECT_EQ(scanned("\x1b]2;a\x07\x1b]2;\x07").title(), "");
  EXPECT_EQ(scanned("\x1b]2;a\x07\x1b]2;\x07").title_changes(), 2u);
  EXPECT_EQ(scanned("\x1b]0abc\x07").title_changes(), 0u);  // no semicolon
  EXPECT_EQ(scanned("\x1b]2\x07").title_changes(), 0u);
}

TEST(VtScanner, TitleAcceptsBelAndStAndAnInterruptingEsc) {
  EXPECT_EQ(scanned("\x1b]2;bel\x07").title(), "bel");
  EXPECT_EQ(scanned("\x1b]2;st\x1b\\").title(), "st");
  // As xterm.js and the DEC diagram: an ESC ends the string, which is dispatched.
  const VtScanner s = scanned("\x1b]2;esc\x1b[?25l");
  EXPECT_EQ(s.title(), "esc");
  EXPECT_FALSE(s.modes().cursor_visible);
  EXPECT_EQ(scanned("\x1b]0;a\x1b]0;b\x07").title(), "b");
  // Ended by the ESC of a sequence still open: the title counts from the next clean boundary.
  EXPECT_EQ(scanned("\x1b]2;old\x07\x1b]2;new\x1b[?1").title(), "old");
  EXPECT_EQ(scanned("\x1b]2;old\x07\x1b]2;new\x1b[?1h").title(), "new");
}

TEST(VtScanner, CancelledTitleIsNotApplied) {
  EXPECT_EQ(scanned("\x1b]2;old\x07\x1b]2;new\x18").title(), "old");
  EXPECT_EQ(scanned("\x1b]2;old\x07\x1b]2;new\x1a").title(), "old");
}

TEST(VtScanner, TitleLeavesOutControlCharacters) {
  // C0 inside the string are executed (libvterm), DEL and NUL ignored, C1 code points, bidi
  // controls and line separators dropped; 0x9C is content, not ST, in UTF-8 mode.
  const VtScanner s = scanned(
      "\x1b]2;a\nb\x7f"
      "c\x01"
      "d\xc2\x9b"
      "e\xe2\x80\xae"
      "f\xe2\x80\xa8"
      "g\x9c"
      "h\x07");
  EXPECT_EQ(s.title(),
            "abcde"
            "f"
            "g\xef\xbf\xbdh");
  EXPECT_EQ(s.bells(), 0u);
}

TEST(VtScanner, TitleReplacesInvalidUtf8) {
  EXPECT_EQ(scanned("\x1b]2;\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x07").title(),
            "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(scanned("\x1b]2;\xc0\x80\x07").title(), fffd + fffd);         // overlong lead
  EXPECT_EQ(scanned("\x1b]2;\xe0\x80\x80\x07").title(), fffd);            // overlong 3-byte
  EXPECT_EQ(scanned("\x1b]2;\xed\xa0\x80\x07").title(), fffd);            // surrogate
  EXPECT_EQ(scanned("\x1b]2;\xf4\x90\x80\x80\x07").title(), fffd);        // above U+10FFFF
  EXPECT_EQ(scanned("\x1b]2;a\xe2\x82z\x07").title(), "a" + fffd + "z");  // cut short
  EXPECT_EQ(scanned("\x1b]2;a\xe2\x82\x07").title(), "a" + fffd);         // cut by BEL
  EXPECT_EQ(scanned("\x1b]2;\x80\xff\x07").title(), fffd + fffd);
}

TEST(VtScanner, TitleIsCutAt256BytesOnACharacterBoundary) {
  const std::string ascii(300, 'x');
  EXPECT_EQ(scanned("\x1b]2;" + ascii + "\x07").title(), std::string(256, 'x'));
  // 85 euro signs are 255 bytes; the 86th does not fit, and nothing after it is added.
  std::string euros;
  for (int i = 0; i < 90; ++i) euros += "\xe2\x82\xac";
  const VtScanner s = scanned("\x1b]2;" + euros + "a\x07");
  EXPECT_EQ(s.title().size(), 255u);
  EXPECT_EQ(s.title(), euros.substr(0, 255));
}

TEST(VtScanner, TitleSplitAtEveryByteIsTheSame) {
  const std::string stream = "ab\x1b]0;t\xc3\xaftle \xf0\x9f\x98\x80\x1b\\cd\x1b]2;second\x07";
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    VtScanner s(Cursor{kStart}, 80, 24);
    s.scan(std::string_view(stream).substr(0, cut));
    s.scan(std::string_view(stream).substr(cut));
    EXPECT_EQ(s.title(), "second") << cut;
    EXPECT_EQ(s.title_changes(), 2u) << cut;
  }
  VtScanner bytewise(Cursor{kStart}, 80, 24);
  for (char c : stream.substr(0, stream.find("cd"))) bytewise.scan(std::string_view(&c, 1));
  EXPECT_EQ(bytewise.title(), "t\xc3\xaftle \xf0\x9f\x98\x80");
}

// The events a consumer sees (term::VtEvents): each title set and each bell, in stream order,
// with the cursor just past the byte that caused it, however the stream is split.
struct EventLog final : term::VtEvents {
  std::vector<std::string> seen;
  void on_title(std::string_view title, Cursor after) noexcept override {
    seen.push_back("title " + std::string(title) + " @" + std::to_string(value(after) - kStart));
  }
  void on_bell(Cursor after) noexcept override {
    seen.push_back("bell @" + std::to_string(value(after) - kStart));
  }
};

TEST(VtScanner, ReportsEveryTitleSetAndBellWhereItHappensForAnySplit) {
  // OSC 2 ended by BEL, a bell, OSC 0 ended by ST, a push, the same title again, a pop, an OSC
  // 2 cut by ESC, a BEL ending an OSC 1 (no title, no bell), a bell inside text.
  const std::string stream =
      "\x1b]2;one\x07"
      "\x07"
      "ab\x1b]0;two\x1b\\"
      "\x1b[22t"
      "\x1b]2;two\x07"
      "\x1b[23t"
      "\x1b]2;cut\x1b[m"
      "\x1b]1;icon\x07"
      "x\x07y";
  const std::vector<std::string> expected = {"title one @8",  "bell @9",       "title two @20",
                                             "title two @33", "title two @38", "title cut @47",
                                             "bell @59"};
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    VtScanner scanner(Cursor{kStart}, 80, 24);
    EventLog log;
    scanner.set_events(&log);
    scanner.scan(std::string_view(stream).substr(0, cut));
    scanner.scan(std::string_view(stream).substr(cut));
    EXPECT_EQ(log.seen, expected) << "split at " << cut;
  }
  VtScanner silent(Cursor{kStart}, 80, 24);  // no consumer: counts only
  silent.scan(stream);
  EXPECT_EQ(silent.title_changes(), 5u);
  EXPECT_EQ(silent.bells(), 2u);
}

// Screen switches (attach on the alternate canvas starts again from a snapshot at each one):
// DECSET/DECRST 47, 1047, 1049 wherever they stand among the parameters, and RIS; never other
// modes, 1048, an SM without '?', or a switch inside a string.
struct SwitchLog final : term::VtEvents {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
  void on_title(std::string_view, Cursor) noexcept override {}
  void on_bell(Cursor) noexcept override {}
  void on_screen_switch(Cursor begin, Cursor after) noexcept override {
    seen.emplace_back(value(begin) - kStart, value(after) - kStart);
  }
};

TEST(VtScanner, ReportsEveryScreenSwitchWithItsRangeForAnySplit) {
  const std::string stream =
      "a\x1b[?1049h"  // [1, 9)
      "\x1b[?25;47l"  // [9, 18)
      "\x1b[?1048h\x1b[47h\x1b[?1000h"
      "\x1b]2;\x1b[?1047h"  // the ESC ends the OSC: the switch counts, [43, 51)
      "\x1b"
      "c"                  // [51, 53)
      "\x1bP\x1b[?1049l";  // a DCS cut by ESC as well, [55, 63)
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> expected = {
      {1, 9}, {9, 18}, {43, 51}, {51, 53}, {55, 63}};
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    VtScanner scanner(Cursor{kStart}, 80, 24);
    SwitchLog log;
    scanner.set_events(&log);
    scanner.scan(std::string_view(stream).substr(0, cut));
    scanner.scan(std::string_view(stream).substr(cut));
    EXPECT_EQ(log.seen, expected) << "split at " << cut;
  }
}

TEST(VtScanner, TitleStackPushesAndPops) {
  const VtScanner s = scanned(
      "\x1b]2;one\x07\x1b[22;0t\x1b]2;two\x07\x1b[22t\x1b]2;three\x07"
      "\x1b[23;2t");
  EXPECT_EQ(s.title(), "two");
  EXPECT_EQ(scanned("\x1b]2;one\x07\x1b[22;1t\x1b]2;two\x07\x1b[23;1t").title(), "two");  // icon
  EXPECT_EQ(scanned("\x1b]2;one\x07\x1b[23t").title(), "one");  // empty stack
  // At most 10 titles: the oldest falls off.
  std::string pushes;
  for (int i = 0; i < 12; ++i) pushes += "\x1b]2;" + std::to_string(i) + "\x07\x1b[22t";
  std::string pops;
  for (int i = 0; i < 12; ++i) pops += "\x1b[23t";
  EXPECT_EQ(scanned(pushes + "\x1b]2;x\x07" + pops).title(), "2");
}

// ---------------------------------------------------------------------------------------------
// Unmodelled output

TEST(VtScanner, PlainOutputHasNoUnmodelledReason) {
  EXPECT_EQ(reason_of("hello \x1b[1;31mworld\x1b[m\r\n\x1b[2J\x1b[H\x1b]0;t\x07"), "none");
}

TEST(VtScanner, ReportsDcsApcPmAndSos) {
  EXPECT_EQ(reason_of("\x1bPq#0;2;0;0;0#0~~\x1b\\"), "dcs_sixel");
  EXPECT_EQ(reason_of("\x1bP0;1|17/ab\x1b\\"), "dcs");                  // DECUDK
  EXPECT_EQ(reason_of("\x1bPp\x1b\\"), "dcs");                          // ReGIS
  EXPECT_EQ(reason_of("\x1bP1;1{ @?\x1b\\"), "dcs");                    // DECDLD
  EXPECT_EQ(reason_of("\x1bP1$t1;1;1;@;@;@;0;2;@;BBBB\x1b\\"), "dcs");  // DECRSPS
  // Passthrough whose inner ESC ends the DCS (the title is set): not ended by ST.
  EXPECT_EQ(reason_of("\x1bPtmux;\x1b\x1b]0;x\x07\x1b\\"), "dcs");
  EXPECT_EQ(reason_of("\x1b_Gf=100;AAAA\x1b\\"), "apc_graphics");  // kitty graphics
  EXPECT_EQ(reason_of("\x1b_other\x1b\\"), "apc");
  EXPECT_EQ(reason_of("\x1b_\x1b\\"), "apc");
  EXPECT_EQ(reason_of("\x1b^privacy\x1b\\"), "pm");
  EXPECT_EQ(reason_of("\x1bXstring\x1b\\"), "sos");
  // APC payload is text to libvterm 0.1.4 (measured), so the reason comes before the end.
  EXPECT_EQ(reason_of("\x1b_G"), "apc_graphics");
}

TEST(VtScanner, DcsQueriesAndProbesEndedByStAreHarmless) {
  EXPECT_EQ(reason_of("\x1bP$qm\x1b\\"), "none");        // DECRQSS
  EXPECT_EQ(reason_of("\x1bP+q544e\x1b\\"), "none");     // XTGETTCAP
  EXPECT_EQ(reason_of("\x1bPzz\x1b\\"), "none");         // vim's start-up probe
  EXPECT_EQ(reason_of("\x1bPtmux;text\x1b\\"), "none");  // passthrough, not tmux
  EXPECT_EQ(reason_of("\x1bP\x1b\\"), "none");           // empty
  EXPECT_EQ(reason_of("\x1bP$qm\x07"), "dcs");           // BEL: xterm.js keeps going
  EXPECT_EQ(reason_of("\x1bP$qm\x18"), "none");          // cancelled: nothing happened
  EXPECT_EQ(reason_of("\x1bP$qm\x1b[m"), "dcs");
}

TEST(VtScanner, OscsOutsideTheAllowListAreUnmodelled) {
  for (int n : {0,  1,  2,   4,   5,   7,   8,   9,   10,  11,  12,  19,
                22, 52, 104, 105, 110, 111, 112, 119, 133, 633, 777, 1337}) {
    EXPECT_EQ(reason_of("\x1b]" + std::to_string(n) + ";x\x07"), "none") << n;
  }
  EXPECT_EQ(reason_of("\x1b]104\x07"), "none");
  for (int n : {3, 6, 50, 51, 106, 120, 1000, 5113}) {
    EXPECT_EQ(reason_of("\x1b]" + std::to_string(n) + ";x\x07"), "osc_unknown") << n;
  }
  EXPECT_EQ(reason_of("\x1b]Lfoo\x1b\\"), "osc_unknown");
  EXPECT_EQ(reason_of("\x1b];x\x07"), "osc_unknown");
  EXPECT_EQ(reason_of("\x1b]1337;File=inline=1:AAAA\x07"), "osc_image");
  EXPECT_EQ(reason_of("\x1b]1337;SetMark\x07"), "none");
  EXPECT_EQ(reason_of("\x1b]50;font\x18"), "none");  // cancelled
}

TEST(VtScanner, FirstReasonStaysUntilHardResetOrClear) {
  VtScanner s = scanned("\x1b^a\x1b\\\x1bPq\x1b\\text\x1b[!p");
  EXPECT_EQ(s.unmodelled_reason(), "pm");
  s.scan(
      "\x1b"
      "c");
  EXPECT_EQ(s.unmodelled_reason(), std::nullopt);
  s.scan("\x1b_G\x1b\\");
  EXPECT_EQ(s.unmodelled_reason(), "apc_graphics");
  s.clear_unmodelled();
  EXPECT_EQ(s.unmodelled_reason(), std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// Clean boundaries

TEST(VtScanner, PositionsAreCursorsFromTheGivenStart) {
  VtScanner s(Cursor{kStart}, 80, 24);
  EXPECT_EQ(s.position(), Cursor{kStart});
  EXPECT_EQ(s.clean_position(), Cursor{kStart});
  s.scan("abc");
  EXPECT_EQ(s.position(), Cursor{kStart + 3});
  EXPECT_TRUE(s.at_clean_boundary());
  s.scan("");
  EXPECT_EQ(s.position(), Cursor{kStart + 3});
}

TEST(VtScanner, IsNotCleanInsideAnySequence) {
  const char* partials[] = {"\x1b",      "\x1b(",         "\x1b[",   "\x1b[?",
                            "\x1b[?25",  "\x1b[1;",       "\x1b[1$", "\x1b]",
                            "\x1b]0;ti", "\x1b]0;ti\x1b", "\x1bP",   "\x1bP$q",
                            "\x1b_G",    "\x1b^",         "\x1bX",   "\x1b]0;a\x1b\x07"};
  for (const char* p : partials) {
    SCOPED_TRACE(p + 1);
    const VtScanner s = scanned("ab"s + p);
    EXPECT_FALSE(s.at_clean_boundary());
    EXPECT_EQ(clean_at(s), 2u);
    EXPECT_EQ(feed_at(s), 2u);
  }
}

TEST(VtScanner, IsNotCleanInsideAUtf8Character) {
  // libvterm's lead lengths: up to 6 bytes (5 held).
  const char* partials[] = {
      "\xc3", "\xe2", "\xe2\x82", "\xf0\x9f\x98", "\xf8\x88\x80\x80", "\xfc\x84\x80\x80\x80",
      "\xc0"};
  for (const char* p : partials) {
    const VtScanner s = scanned("ab"s + p);
    EXPECT_FALSE(s.at_clean_boundary()) << std::string(p).size();
    EXPECT_EQ(clean_at(s), 2u);
  }
  const char* wholes[] = {"\xc3\xa9",
                          "\xe2\x82\xac",
                          "\xf0\x9f\x98\x80",
                          "e\xcc\x81",
                          "\xf8\x88\x80\x80\x80",
                          "\xfc\x84\x80\x80\x80\x80",
                          "\x80",
                          "\xff",
                          "\xfe",
                          "\xc3\x80\x80",
                          "\xc0\x80"};
  for (const char* w : wholes) {
    EXPECT_TRUE(scanned("ab"s + w).at_clean_boundary()) << std::string(w).size();
  }
}

TEST(VtScanner, AnyNonContinuationByteEndsAPartialCharacter) {
  for (const char* tail : {"a", "\n", "\x7f", "\x18", "\xc3", "\x1b[m"}) {
    const VtScanner s = scanned("\xe2\x82"s + tail);
    if (std::string(tail) == "\xc3") {
      EXPECT_EQ(clean_at(s), 0u);  // a new lead is pending
    } else {
      EXPECT_TRUE(s.at_clean_boundary()) << tail;
    }
  }
  // Interrupted: an ESC ends it, and a later continuation byte is a stray on its own.
  EXPECT_TRUE(scanned("\xe2\x82\x1b[m\xac").at_clean_boundary());
}

TEST(VtScanner, C1BytesAreNotControlsInUtf8Mode) {
  // 0x9B is not CSI, 0x9D not OSC, 0x90 not DCS: stray continuation bytes, each clean.
  for (const char* b : {"\x9b", "\x9d", "\x90", "\x9b?25l"}) {
    const VtScanner s = scanned(b);
    EXPECT_TRUE(s.at_clean_boundary()) << b;
    EXPECT_TRUE(s.modes().cursor_visible);
  }
  // Inside an OSC, 0x9C is content: the string goes on.
  EXPECT_FALSE(scanned("\x1b]0;x\x9c").at_clean_boundary());
}

TEST(VtScanner, CanAndSubAbortEverySequence) {
  for (const char* seq : {"\x1b", "\x1b[1;2", "\x1b]0;a", "\x1bPq", "\x1b_G", "\x1b]0;a\x1b",
                          "\x1b[?1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1"}) {
    for (const char* abort : {"\x18", "\x1a"}) {
      const VtScanner s = scanned(std::string(seq) + abort + "x");
      EXPECT_TRUE(s.at_clean_boundary()) << seq + 1;
    }
  }
}

TEST(VtScanner, EscStartsANewSequenceFromInsideAnother) {
  EXPECT_FALSE(modes_after("\x1b[1;2\x1b[?25l").cursor_visible);
  EXPECT_FALSE(modes_after("\x1b(\x1b[?25l").cursor_visible);
  EXPECT_FALSE(modes_after("\x1bP\x1b[?25l").cursor_visible);
  EXPECT_FALSE(modes_after("\x1b]0;x\x1b\x1b[?25l").cursor_visible);
  // libvterm enters CSI on '[' even after an escape intermediate.
  EXPECT_FALSE(modes_after("\x1b([?25l").cursor_visible);
  EXPECT_FALSE(scanned("\x1b([").at_clean_boundary());
}

TEST(VtScanner, ByteThatCannotContinueACsiEndsIt) {
  // libvterm (measured): "CSI 1 ? 5 h" ends at '?' and prints "5h"; a byte >= 0x80 ends it too.
  EXPECT_TRUE(scanned("\x1b[1?").at_clean_boundary());
  EXPECT_TRUE(scanned("\x1b[1\xc3").at_clean_boundary());  // the lead is consumed
  EXPECT_TRUE(scanned("\x1b[1\xc3\xa9").at_clean_boundary());
  EXPECT_TRUE(scanned("\x1b[1$0").at_clean_boundary());
}

TEST(VtScanner, HighBytesInEscapeStatesAreIgnored) {
  // libvterm (measured): ESC ( 0x80 0 designates G0.
  EXPECT_EQ(modes_after("\x1b(\x80"
                        "0")
                .g0,
            '0');
  EXPECT_FALSE(scanned("\x1b\xc3\xa9").at_clean_boundary());
}

TEST(VtScanner, ControlsInsideSequencesAreExecuted) {
  const VtScanner s = scanned(
      "\x1b[?2\x07"
      "5l\x1b]0;a\x07\x1b"
      "7\x07");
  EXPECT_FALSE(s.modes().cursor_visible);
  EXPECT_EQ(s.bells(), 2u);  // not the BEL that ended the OSC
  EXPECT_FALSE(modes_after("\x1b[?2\x7f"
                           "5\x00l"s)
                   .cursor_visible);  // DEL, NUL ignored
}

// ---------------------------------------------------------------------------------------------
// The bound on what is held back

TEST(VtScanner, HoldsASequenceUpToTheLimit) {
  const std::string osc = "\x1b]52;c;" + std::string(VtScanner::kMaxHoldBytes - 7, 'A');
  const VtScanner s = scanned("ab" + osc);
  ASSERT_EQ(value(s.position()) - kStart, 2 + VtScanner::kMaxHoldBytes);
  EXPECT_EQ(feed_at(s), 2u);
  EXPECT_EQ(s.oversized_sequences(), 0u);
  const VtScanner more = scanned("ab" + osc + "A");
  EXPECT_EQ(feed_at(more), 3 + VtScanner::kMaxHoldBytes);  // one byte over: fed
  EXPECT_EQ(clean_at(more), 2u);                           // but never clean
  EXPECT_EQ(more.oversized_sequences(), 1u);
}

TEST(VtScanner, OversizedStringKeepsItsEscWithTheNextByte) {
  VtScanner s = scanned("\x1b]52;c;" + std::string(5000, 'A') + "\x1b");
  EXPECT_EQ(feed_at(s), value(s.position()) - kStart - 1);
  s.scan("\\");
  EXPECT_TRUE(s.at_clean_boundary());
  EXPECT_EQ(s.feed_limit(), s.position());
  EXPECT_EQ(s.oversized_sequences(), 1u);
}

TEST(VtScanner, HundredMebibyteUnterminatedOscStaysBounded) {
  VtScanner s(Cursor{kStart}, 80, 24);
  s.scan("$ \x1b]0;");
  const std::string chunk(64 * 1024, 'a');
  Cursor last_feed = s.feed_limit();
  for (int i = 0; i < 1600; ++i) {
    s.scan(chunk);
    ASSERT_GT(s.feed_limit(), last_feed) << i;  // the engine is never stalled
    last_feed = s.feed_limit();
    ASSERT_LE(s.buffered_bytes(), VtScanner::kMaxBufferedBytes);
    ASSERT_EQ(clean_at(s), 2u);
    ASSERT_TRUE(s.marks().empty());
  }
  EXPECT_EQ(s.oversized_sequences(), 1u);
  s.scan("\x07");
  EXPECT_TRUE(s.at_clean_boundary());
  EXPECT_EQ(s.title(), std::string(256, 'a'));
  EXPECT_EQ(s.buffered_bytes(), 0u);
}

TEST(VtScanner, EndlessDcsApcAndCsiStayBounded) {
  for (const char* opener : {"\x1bPq", "\x1b_G", "\x1b[", "\x1b[?1;"}) {
    VtScanner s(Cursor{kStart}, 80, 24);
    s.scan(opener);
    const std::string chunk(64 * 1024, opener[1] == '[' ? '9' : 'x');
    for (int i = 0; i < 64; ++i) {
      s.scan(chunk);
      ASSERT_EQ(s.feed_limit(), s.position());
      ASSERT_LE(s.buffered_bytes(), VtScanner::kMaxBufferedBytes);
    }
    EXPECT_EQ(clean_at(s), 0u);
  }
}

TEST(VtScanner, HundredThousandParametersAreSkippedForLibvterm) {
  VtScanner s(Cursor{kStart}, 80, 24);
  s.scan("\x1b[?25l");
  const std::uint64_t offset = value(s.position()) - kStart;
  std::string params = "\x1b[?";
  for (int i = 0; i < 100'000; ++i) params += "1;";
  params += "25h";
  std::vector<Mark> marks;
  for (std::size_t at = 0; at < params.size(); at += 64 * 1024) {
    s.scan(std::string_view(params).substr(at, 64 * 1024));
    collect(marks, s);
    ASSERT_LE(s.marks().size(), 3u);
    // Everything libvterm may be fed past the 16th parameter is covered by a skip range.
    ASSERT_EQ(marks.back().end, s.feed_limit());
  }
  EXPECT_TRUE(s.at_clean_boundary());
  EXPECT_TRUE(s.modes().cursor_keys_application);  // the first 32 parameters apply
  EXPECT_FALSE(s.modes().cursor_visible);          // the 100,001st does not
  EXPECT_EQ(s.unmodelled_reason(), "csi_overflow");
  // 16 parameters reach libvterm, then a CAN, then nothing of the rest.
  const std::uint64_t sixteenth_separator = offset + 3 + 16 * 2 - 1;
  ASSERT_GE(marks.size(), 3u);
  EXPECT_EQ(marks[0].kind, MarkKind::libvterm_overflow);
  EXPECT_EQ(marks[0].begin, Cursor{kStart + sixteenth_separator});
  EXPECT_EQ(marks[1].kind, MarkKind::libvterm_skip);
  EXPECT_EQ(marks[1].begin, Cursor{kStart + sixteenth_separator});
  EXPECT_EQ(marks[1].end, s.position());
  EXPECT_EQ(marks[2].kind, MarkKind::mode_fixup);
}

TEST(VtScanner, SixteenParametersAreSafeForLibvterm) {
  const VtScanner s = scanned("\x1b[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m");
  EXPECT_TRUE(s.marks().empty());
  EXPECT_EQ(s.unmodelled_reason(), std::nullopt);
  // 17 arguments, also when some are empty or sub-parameters.
  EXPECT_EQ(reason_of("\x1b[;;;;;;;;;;;;;;;;m"), "csi_overflow");
  EXPECT_EQ(reason_of("\x1b[38:2:1:2:3:4:5:6:7:8:9:10:11:12:13:14:15m"), "csi_overflow");
}

TEST(VtScanner, OverflowSkipLeavesExecutedControlsAndTheNextEscToLibvterm) {
  // 17 parameters, a LF inside, then an ESC that ends the CSI and starts another.
  const std::string stream = "\x1b[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;2\n3\x1b[m";
  const VtScanner s = scanned(stream);
  const std::uint64_t sep = stream.find(";2");
  const std::uint64_t lf = stream.find('\n');
  const std::uint64_t esc = stream.rfind('\x1b');
  ASSERT_EQ(s.marks().size(), 3u);
  EXPECT_EQ(s.marks()[0].kind, MarkKind::libvterm_overflow);
  EXPECT_EQ(s.marks()[0].end, Cursor{kStart + sep});
  EXPECT_EQ(s.marks()[1].kind, MarkKind::libvterm_skip);
  EXPECT_EQ(s.marks()[1].begin, Cursor{kStart + sep});
  EXPECT_EQ(s.marks()[1].end, Cursor{kStart + lf});
  EXPECT_EQ(s.marks()[2].begin, Cursor{kStart + lf + 1});
  EXPECT_EQ(s.marks()[2].end, Cursor{kStart + esc});
}

TEST(VtScanner, HeldMarksWaitForTheFeedLimit) {
  VtScanner s(Cursor{kStart}, 80, 24);
  s.scan("\x1b[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1");  // held: libvterm has none of it yet
  EXPECT_TRUE(s.marks().empty());
  s.scan("m");
  EXPECT_EQ(kinds(s), (std::vector{MarkKind::libvterm_overflow, MarkKind::libvterm_skip}));
  for (const Mark& m : s.marks()) EXPECT_LE(m.end, s.feed_limit());
}

// ---------------------------------------------------------------------------------------------
// Save-cursor points and other marks

TEST(VtScanner, MarksSaveCursorPointsJustAfterTheSequence) {
  const std::string stream =
      "ab\x1b"
      "7cd\x1b[sef\x1b[?1048hgh\x1b[?1049hij";
  const VtScanner s = scanned(stream);
  ASSERT_EQ(kinds(s), (std::vector{MarkKind::save_cursor, MarkKind::save_cursor_sco,
                                   MarkKind::save_cursor_1048, MarkKind::enter_alt_1049}));
  EXPECT_EQ(s.marks()[0].begin, Cursor{kStart + 2});
  EXPECT_EQ(s.marks()[0].end, Cursor{kStart + 4});
  EXPECT_EQ(s.marks()[1].end, Cursor{kStart + stream.find("ef")});
  EXPECT_EQ(s.marks()[2].end, Cursor{kStart + stream.find("gh")});
  EXPECT_EQ(s.marks()[3].end, Cursor{kStart + stream.find("ij")});
  EXPECT_FALSE(s.marks()[2].modes.alternate_screen);
  EXPECT_TRUE(s.marks()[3].modes.alternate_screen);
}

TEST(VtScanner, MarksRestoresAndResets) {
  const VtScanner s = scanned(
      "\x1b"
      "8\x1b[u\x1b[?1048l\x1b[?1049l\x1b[!p\x1b"
      "c\x1b[?47h");
  EXPECT_EQ(kinds(s),
            (std::vector{MarkKind::restore_cursor, MarkKind::restore_cursor_sco,
                         MarkKind::restore_cursor_1048, MarkKind::leave_alt_1049,
                         MarkKind::soft_reset, MarkKind::hard_reset, MarkKind::mode_fixup}));
}

TEST(VtScanner, CsiSIsNotASavePointUnderDeclrmm) {
  EXPECT_TRUE(scanned("\x1b[?69h\x1b[s").marks().empty());
  EXPECT_EQ(kinds(scanned("\x1b[?69h\x1b[?69l\x1b[s")), std::vector{MarkKind::save_cursor_sco});
}

TEST(VtScanner, SaveMarksCarryTheModesInEffect) {
  const VtScanner s = scanned(
      "\x1b(0\x1b[?6h\x1b"
      "7\x1b(B\x1b[?6l");
  ASSERT_EQ(s.marks().size(), 1u);
  EXPECT_EQ(s.marks()[0].modes.g0, '0');
  EXPECT_TRUE(s.marks()[0].modes.origin);
  // DECRC restores neither in libvterm 0.1.4 (measured), so it changes no mode here.
  EXPECT_EQ(modes_after("\x1b(0\x1b[?6h\x1b[?25l\x1b"
                        "7\x1b(B\x1b[?6l\x1b[?25h\x1b"
                        "8"),
            TerminalModes{});
}

TEST(VtScanner, MarksAreThoseOfTheLastScan) {
  VtScanner s(Cursor{kStart}, 80, 24);
  s.scan(
      "\x1b"
      "7");
  EXPECT_EQ(s.marks().size(), 1u);
  s.scan("x");
  EXPECT_TRUE(s.marks().empty());
  s.scan("\x1b");
  s.scan("7");
  EXPECT_EQ(kinds(s), std::vector{MarkKind::save_cursor});
  EXPECT_EQ(s.marks()[0].begin, Cursor{kStart + 3});
}

// ---------------------------------------------------------------------------------------------
// Chunking invariance

const char* const kCorpus[] = {
    "plain ascii text\r\n",
    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 e\xcc\x81 \xe6\xbc\xa2\xe5\xad\x97",
    "\x1b[1;31mred\x1b[0m \x1b[38;2;10;20;30mrgb\x1b[m",
    "\x1b[?1;1049;2004h\x1b[?1000;1006h\x1b[5;10r\x1b[?6h\x1b[4h",
    "\x1b"
    "7\x1b[10;10H\x1b"
    "8\x1b[s\x1b[u\x1b[?1048h\x1b[?1048l",
    "\x1b]0;title \xc3\xa9\x07\x1b]2;other\x1b\\\x1b]1;icon\x07",
    "\x1b(0lqqk\x1b(B\x1b)0\x0eq\x0f",
    "\x1bPq#0;2;0;0;0#0~~\x1b\\\x1b_Gf=1;AA\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\",
    "\x1bP$qm\x1b\\\x1b]52;c;aGk=\x07\x1b]8;;http://x\x07link\x1b]8;;\x07",
    "\x1b[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m\n\x1b[m",
    "\xe2\x82\x1b[m\xac\xff\xfe\xc0\x80\xf8\x88\x80\x80\x80\x9b\x9c",
    "\x1b[1\x18x\x1b]0;a\x1a"
    "b\x1b[?2\x07"
    "5l\x1b(\x80"
    "0",
    "\x1b]2;one\x07\x1b[22t\x1b]2;two\x07\x1b[23t\x1b[!p\x1b"
    "c",
    "\x1b\x1b[\x1b]\x1b]0;\x1b\x1b\\\x1b([?25h",
    // ncurses' sgr0 (`ESC ( B ESC [ m`, read whole by a fast path) after a waiting single
    // shift, inside a UTF-8 character, after G0 held a table, and last after a single shift
    // from a G2 that holds one.
    "\x1bN\x1b(B\x1b[mq\xc3\x1b(B\xa9\x1b(0x\x1b(B\x1b[mx\x1b*0\x1bN\x1b(Bq",
};

TEST(VtScanner, SplittingTheCorpusAtEveryOffsetChangesNothing) {
  std::string all;
  for (const char* c : kCorpus) all += c;
  const std::string_view streams[] = {kCorpus[0],  kCorpus[1],  kCorpus[2],  kCorpus[3],
                                      kCorpus[4],  kCorpus[5],  kCorpus[6],  kCorpus[7],
                                      kCorpus[8],  kCorpus[9],  kCorpus[10], kCorpus[11],
                                      kCorpus[12], kCorpus[13], kCorpus[14], all};
  for (std::string_view stream : streams) {
    const Outcome whole = run_whole(stream);
    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
      ASSERT_EQ(run_split(stream, {cut}), whole) << stream << " cut at " << cut;
    }
    std::vector<std::size_t> every(stream.size());
    for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
    ASSERT_EQ(run_split(stream, every), whole) << stream << " byte by byte";
  }
}

// Streams built from the pieces a terminal sees, glued in random order.
rc::Gen<std::string> piece() {
  return rc::gen::oneOf(
      rc::gen::container<std::string>(rc::gen::inRange<char>(0x20, 0x7f)),
      rc::gen::element<std::string>("\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "e\xcc\x81",
                                    "\xe6\xbc\xa2", "\xcc\x81\xcc\x81\xcc\x81", "\xff", "\xc3",
                                    "\xe2\x82", "\x80", "\xc0\x80", "\xf8\x88\x80\x80\x80", "\x9b",
                                    "\x9c"),
      rc::gen::element<std::string>("\r\n", "\t", "\x07", "\x0e", "\x0f", "\x18", "\x1a",
                                    std::string(1, '\0'), "\x7f", "\x08"),
      rc::gen::element<std::string>(
          "\x1b[?1h", "\x1b[?1l", "\x1b[?1049h", "\x1b[?1049l", "\x1b[?1;2004h", "\x1b[?47h",
          "\x1b[?1000h", "\x1b[?1002h", "\x1b[?1003l", "\x1b[?1006h", "\x1b[?1015h", "\x1b[?1006l",
          "\x1b[?25l", "\x1b[?25h", "\x1b[?6h", "\x1b[?7l", "\x1b[4h", "\x1b[20h", "\x1b[5;10r",
          "\x1b[r", "\x1b[10;5r", "\x1b[?69h", "\x1b[3;7s", "\x1b[s", "\x1b[u",
          "\x1b"
          "7",
          "\x1b"
          "8",
          "\x1b=", "\x1b>",
          "\x1b"
          "c",
          "\x1b[!p", "\x1b(0", "\x1b(B", "\x1b)0", "\x1b*0", "\x1bN", "\x1bn", "\x1b[1;31m",
          "\x1b[38;2;1;2;3m", "\x1b[22t", "\x1b[23t", "\x1b]0;title\x07",
          "\x1b]2;t\xc3\xaft\xe2\x82\x1b\\", "\x1b]1;icon\x07", "\x1b]52;c;aGk=\x07",
          "\x1b]1337;File=x\x07", "\x1b]99;x\x07", "\x1bP$qm\x1b\\", "\x1bPq#0\x1b\\",
          "\x1b_Gf=1\x1b\\", "\x1b^x\x1b\\", "\x1b[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m", "\x1b",
          "\x1b[", "\x1b[?", "\x1b]", "\x1b]0;", "\x1bP", "\x1b_", "\x1b(", "\x1b\\"),
      rc::gen::map(rc::gen::inRange<std::size_t>(4000, 9000),
                   [](std::size_t n) { return "\x1b]0;" + std::string(n, 'z'); }),
      rc::gen::map(rc::gen::inRange<std::size_t>(2000, 5000),
                   [](std::size_t n) {
                     std::string csi = "\x1b[";
                     for (std::size_t i = 0; i < n; ++i) csi += i % 700 == 0 ? "\n" : "1;";
                     return csi;
                   }),
      rc::gen::container<std::string>(rc::gen::arbitrary<char>()));
}

RC_GTEST_PROP(VtScanner, AnySplitOfAStreamGivesTheSameOutcome, ()) {
  const auto pieces = *rc::gen::container<std::vector<std::string>>(piece());
  std::string stream;
  for (const auto& p : pieces) stream += p;
  const auto cuts = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, stream.size() + 1));
  RC_ASSERT(run_split(stream, cuts) == run_whole(stream));
}

RC_GTEST_PROP(VtScanner, CleanPositionAndFeedLimitDependOnlyOnTheBytesScanned, ()) {
  const auto pieces = *rc::gen::container<std::vector<std::string>>(piece());
  std::string stream;
  for (const auto& p : pieces) stream += p;
  // The reference: one byte at a time, recording after each byte.
  VtScanner bytewise(Cursor{kStart}, 80, 24);
  std::vector<Cursor> clean{bytewise.clean_position()};
  std::vector<Cursor> feed{bytewise.feed_limit()};
  for (char c : stream) {
    bytewise.scan(std::string_view(&c, 1));
    clean.push_back(bytewise.clean_position());
    feed.push_back(bytewise.feed_limit());
  }
  auto cuts = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, stream.size() + 1));
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(stream.size());
  VtScanner s(Cursor{kStart}, 80, 24);
  std::size_t from = 0;
  Cursor last_feed = s.feed_limit();
  for (std::size_t cut : cuts) {
    s.scan(std::string_view(stream).substr(from, cut - from));
    from = cut;
    RC_ASSERT(s.clean_position() == clean[cut]);
    RC_ASSERT(s.feed_limit() == feed[cut]);
    RC_ASSERT(s.clean_position() <= s.feed_limit());
    RC_ASSERT(s.feed_limit() <= s.position());
    RC_ASSERT(s.feed_limit() >= last_feed);
    RC_ASSERT(s.buffered_bytes() <= VtScanner::kMaxBufferedBytes);
    for (const Mark& m : s.marks()) RC_ASSERT(m.end <= s.feed_limit());
    last_feed = s.feed_limit();
  }
}

// The mirror's side of the contract: feed libvterm [fed, feed_limit()) minus the skip ranges,
// with a CAN at each overflow mark. Scanning what it fed must find no CSI that overflows
// libvterm's arguments, however the stream was split.
RC_GTEST_PROP(VtScanner, MirrorFeedNeverHandsLibvtermAnOverflowingCsi, ()) {
  const auto pieces = *rc::gen::container<std::vector<std::string>>(piece());
  std::string stream;
  for (const auto& p : pieces) stream += p;
  auto cuts = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, stream.size() + 1));
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(stream.size());
  VtScanner s(Cursor{kStart}, 80, 24);
  std::string fed_bytes;
  std::uint64_t fed = 0;  // offset into `stream`
  auto feed_to = [&](std::uint64_t to) {
    RC_ASSERT(to >= fed);
    fed_bytes.append(stream, fed, to - fed);
    fed = to;
  };
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    s.scan(std::string_view(stream).substr(from, cut - from));
    from = cut;
    for (const Mark& m : s.marks()) {
      if (m.kind == MarkKind::libvterm_overflow) {
        feed_to(value(m.begin) - kStart);
        fed_bytes += '\x18';
      } else if (m.kind == MarkKind::libvterm_skip) {
        feed_to(value(m.begin) - kStart);
        fed = value(m.end) - kStart;
      }
    }
    feed_to(value(s.feed_limit()) - kStart);
  }
  VtScanner check(Cursor{kStart}, 80, 24);
  check.scan(fed_bytes);
  for (const Mark& m : check.marks()) RC_ASSERT(m.kind != MarkKind::libvterm_overflow);
}

}  // namespace
}  // namespace backscroll::testing
