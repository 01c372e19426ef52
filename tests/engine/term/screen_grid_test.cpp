// ScreenGrid (the mirror's cells behind libvterm's state layer) holds exactly what libvterm
// 0.1.4's own screen layer holds when both are fed the same calls (ScreenLayerTap receives
// every write and resize the mirror makes to libvterm): every cell of the shown screen, the
// alternate-screen and reverse-video flags, every line pushed to the history, popped back on a
// grow, and kept. Scripted cases cover each path of the grid (row rotation, cell moves inside
// margins, erase-only scrolls, resize push and pop, the hidden main screen, DECSCNM, DECDWL,
// DECSCA); a property covers random streams with random resizes; the recordings of real
// programs are checked byte by byte.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/reference/vterm_reference.hpp"
#include "engine/term/screen_grid.hpp"
#include "tests/corpus/recordings.hpp"

namespace backscroll::testing {
namespace {

using term::MirrorScreen;
using term::ScrollbackLimits;

constexpr std::size_t kHistory = 40;
// A byte limit the tests never reach: the tap models the line limit only.
constexpr ScrollbackLimits kLimits{kHistory, std::size_t{1} << 30};

struct Resize {
  int cols;
  int rows;
};
using Step = std::variant<std::string, Resize>;

// A mirror and a screen layer fed the same calls.
struct Pair {
  ScreenLayerTap tap{kHistory};
  MirrorScreen mirror;
  Pair(int cols, int rows) : mirror(cols, rows, kLimits) { mirror.set_tap(&tap); }

  // Applies the steps; "" when the two agree after every one, else the first difference.
  std::string run(const std::vector<Step>& steps) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (const auto* bytes = std::get_if<std::string>(&steps[i])) mirror.feed(*bytes);
      else mirror.resize(std::get<Resize>(steps[i]).cols, std::get<Resize>(steps[i]).rows);
      if (std::string d = tap.difference(mirror); !d.empty())
        return "after step " + std::to_string(i) + ": " + d;
    }
    return "";
  }
};

std::string numbered_lines(int from, int count) {
  std::string s;
  for (int i = from; i < from + count; ++i) s += "line " + std::to_string(i) + "\r\n";
  return s;
}

std::string row_text(const MirrorScreen& m, std::size_t history_line) {
  std::string s;
  for (int c = 0; c < m.scrollback_cols(history_line); ++c) {
    const term::Cell cell = m.scrollback_cell(history_line, c);
    if (cell.kind == term::Cell::Kind::glyph && cell.chars[0] < 0x80)
      s += static_cast<char>(cell.chars[0]);
    else if (cell.kind == term::Cell::Kind::erased) s += ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// A grid driven directly, without libvterm's state layer: no row has line attributes.
struct NoLineAttrs final : term::ScreenGrid::LineAttrsSource {
  term::LineAttrs line_attrs(int) const override { return {}; }
};

// Glyphs of several characters keep them in the grid's cluster table: a copied cell shares its
// entry, an overwritten one leaves garbage that a sweep drops, so the table stays within 64 +
// twice the entries alive however often such glyphs are rewritten.
TEST(ScreenGrid, ClusterTableStaysBoundedAndCopiesKeepTheirCharacters) {
  const NoLineAttrs lines;
  term::Scrollback history(kLimits);
  term::ScreenGrid grid(3, 4, history, lines);
  auto long_glyph = [&](int row, int col, char32_t base, int marks) {
    const std::uint32_t chars[7] = {static_cast<std::uint32_t>(base), 0};
    grid.put_glyph(row, col, chars, 1, false, {});
    for (int i = 0; i < marks; ++i) grid.append_char(row, col, U'\u0301');
  };
  long_glyph(0, 0, U'Z', 20);
  grid.scroll_rect(term::GridRect{0, 3, 0, 4}, -1, 0);  // row 0 moves down: a copy
  long_glyph(0, 0, U'Y', 9);
  for (int i = 0; i < 10'000; ++i) long_glyph(2, 3, U'a' + i % 26, 7);
  EXPECT_LE(grid.cluster_entries(), 64u + 2 * 3);
  EXPECT_EQ(grid.cell(1, 0).nchars, 21);
  EXPECT_EQ(grid.cell(1, 0).chars[0], U'Z');
  EXPECT_EQ(grid.cell(0, 0).nchars, 10);
  EXPECT_EQ(grid.cell(2, 3).nchars, 8);
  // Scrolled into the history with all its characters.
  grid.scroll_rect(term::GridRect{0, 3, 0, 4}, 2, 0);
  ASSERT_EQ(history.lines(), 2u);
  EXPECT_EQ(history.cell(1, 0).nchars, 21);
}

// zero_from() is a bound a flood's rows make tight: text raises it to its end, an erase to
// the default pen lowers it to the erase's start, a row scrolled in is blank from column 0, a
// coloured erase raises it to the erase's end, and cells moved along a row carry it with them.
// (That it never falls short of a cell that is not all zero, every test that compares the
// grid with libvterm's screen layer checks: ScreenLayerTap::difference.)
TEST(ScreenGrid, ZeroFromEndsAtTheLastCellWritten) {
  const NoLineAttrs lines;
  term::Scrollback history(kLimits);
  term::ScreenGrid grid(3, 80, history, lines);
  EXPECT_EQ(grid.zero_from(0), 80);  // erased with libvterm's zeroed pen: RGB black, not zero
  grid.pen() = term::GridPen{};
  grid.erase(term::GridRect{0, 3, 0, 80}, false);
  EXPECT_EQ(grid.zero_from(0), 0);
  const std::string text = "2026-12-08 INFO short line";
  grid.put_ascii(2, 0, reinterpret_cast<const unsigned char*>(text.data()),
                 static_cast<int>(text.size()));
  EXPECT_EQ(grid.zero_from(2), static_cast<int>(text.size()));
  const std::uint32_t wide[7] = {0x4e2d, 0};
  grid.put_glyph(2, 30, wide, 2, false, {});
  EXPECT_EQ(grid.zero_from(2), 32);
  grid.erase(term::GridRect{2, 3, 10, 80}, false);  // EL 0 from column 10
  EXPECT_EQ(grid.zero_from(2), 10);
  grid.scroll_rect(term::GridRect{0, 3, 0, 80}, 1, 0);  // a line feed on the bottom row
  EXPECT_EQ(grid.zero_from(1), 10);
  EXPECT_EQ(grid.zero_from(2), 0);
  grid.scroll_rect(term::GridRect{1, 2, 4, 80}, 0, -3);  // ICH 3 at column 4
  EXPECT_EQ(grid.zero_from(1), 13);
  grid.pen().bg = term::pack_color(term::Color::indexed(4));
  grid.erase(term::GridRect{0, 1, 70, 75}, false);
  EXPECT_EQ(grid.zero_from(0), 75);
  EXPECT_TRUE(grid.zero_from_holds());
}

TEST(ScreenGrid, ScrollingTheWholeScreenPushesEachLineOnceInOrder) {
  Pair p(20, 5);
  ASSERT_EQ(p.run({"\x1b[1;31mred\x1b[m\r\n", numbered_lines(0, 30)}), "");
  // 31 lines printed, each followed by CRLF: the cursor ends on row 4 of 5 below 4 of them.
  EXPECT_EQ(p.mirror.pushed_lines(), 27u);
  EXPECT_EQ(row_text(p.mirror, 0), "red");
  EXPECT_EQ(row_text(p.mirror, 26), "line 25");
}

TEST(ScreenGrid, ARegionFromTheTopPushesAndARegionBelowItDoesNot) {
  Pair p(20, 8);
  ASSERT_EQ(p.run({numbered_lines(0, 8), "\x1b[1;4r\x1b[4H\n\n\n"}), "");
  const auto pushed = p.mirror.pushed_lines();
  EXPECT_GT(pushed, 0u);
  ASSERT_EQ(p.run({"\x1b[3;6r\x1b[6H\n\n\n\x1b[r"}), "");
  EXPECT_EQ(p.mirror.pushed_lines(), pushed);
  ASSERT_EQ(p.run({"\x1b[2;7r\x1b[2H\x1bM\x1bM\x1b[3L\x1b[2M\x1b[4T\x1b[2S\x1b[r"}), "");
}

TEST(ScreenGrid, LeftAndRightMarginsMoveCellsInsideTheRowsOnly) {
  Pair p(30, 6);
  ASSERT_EQ(p.run({numbered_lines(0, 5), "abcdefghijklmnopqrstuvwxyz0123",
                   "\x1b[?69h\x1b[5;20s\x1b[2;5r\x1b[3;7H\x1b[2S\x1b[T\x1b[2L\x1b[M",
                   "\x1b[3;8H\x1b[3@\x1b[2P\x1b[4X\x1b[5;19H\n\n\n",
                   "\x1b[1;30s\x1b[?69l\x1b[r\x1b[6H\n\n"}),
            "");
}

TEST(ScreenGrid, ScrollingByTheWholeHeightOnlyErases) {
  Pair p(12, 4);
  ASSERT_EQ(p.run({"a\r\nb\r\nc\r\nd", "\x1b[4S"}), "");
  EXPECT_EQ(p.mirror.pushed_lines(), 0u);  // libvterm erases instead of scrolling
  ASSERT_EQ(p.run({"e\r\nf", "\x1b[3S"}), "");
  EXPECT_EQ(p.mirror.pushed_lines(), 4u);
}

TEST(ScreenGrid, InsertAndDeleteInTheMiddleOfWideGlyphs) {
  Pair p(10, 3);
  ASSERT_EQ(p.run({"\xe7\x95\x8c\xe7\x95\x8c\xe7\x95\x8c\xe7\x95\x8c\xe7\x95\x8c",  // 5 wide
                   "\x1b[1;4H\x1b[@", "\x1b[1;2H\x1b[P", "\x1b[1;9Hx\xe7\x95\x8c",
                   "\x1b[2;1H\x1b[4h\xe7\x95\x8c"
                   "ab\x1b[4l",
                   "\x1b[1;1H\x1b[2b"}),
            "");
}

TEST(ScreenGrid, ShrinkPushesTheRowsAboveTheCursorAndGrowPopsThemBack) {
  Pair p(16, 8);
  ASSERT_EQ(p.run({"\x1b[7m", numbered_lines(0, 6), "\x1b[m\xe7\x95\x8c wide e\xcc\x81", "\x1b[?5h",
                   Resize{16, 3}, Resize{16, 10}, "\x1b[?5l", Resize{9, 4}, Resize{20, 12},
                   Resize{20, 12}, "\x1b[H\x1b[2J", Resize{20, 5}, Resize{7, 9}}),
            "");
  EXPECT_GT(p.tap.popped(), 0u);
}

TEST(ScreenGrid, AShrinkKeepsBlankRowsBelowTheCursor) {
  Pair p(10, 10);
  ASSERT_EQ(p.run({"a\r\nb\r\nc", Resize{10, 5}}), "");
  EXPECT_EQ(p.mirror.pushed_lines(), 0u);
  ASSERT_EQ(p.run({"\x1b[9Hz\x1b[2H", Resize{10, 8}, Resize{10, 3}}), "");
}

TEST(ScreenGrid, TheAlternateScreenPushesNothingAndKeepsTheMainOne) {
  Pair p(20, 5);
  ASSERT_EQ(p.run({numbered_lines(0, 7), "\x1b[44m", "\x1b[?1049h", numbered_lines(100, 20),
                   Resize{25, 7}, "\x1b[?47l", Resize{18, 4}, "\x1b[?1047h", "x\x1b[?1047l",
                   "\x1b[?1049l",
                   "\x1b[?47h\x1b"
                   "c",
                   "after reset", "\x1b[?1049l"}),
            "");
  for (int r = 0; r < p.mirror.rows(); ++r)
    for (int c = 0; c < p.mirror.cols(); ++c)
      EXPECT_EQ(p.mirror.main_cell(r, c), p.mirror.cell(r, c)) << r << "," << c;
}

TEST(ScreenGrid, TheHiddenMainScreenIsWhatReturns) {
  Pair p(12, 4);
  ASSERT_EQ(p.run({"main\r\nscreen", "\x1b[?1049h", "alt text"}), "");
  const term::Cell m = p.mirror.main_cell(0, 0);
  EXPECT_EQ(m.kind, term::Cell::Kind::glyph);
  EXPECT_EQ(m.chars[0], U'm');
  ASSERT_EQ(p.run({Resize{6, 3}, "\x1b[?1049l"}), "");
  EXPECT_EQ(p.mirror.cell(0, 0).chars[0], U'm');
}

TEST(ScreenGrid, ReverseVideoShowsInPushedLinesAndComesBackOnPop) {
  Pair p(10, 3);
  ASSERT_EQ(p.run({"\x1b[?5h", "a\x1b[7mb\x1b[m\r\n", numbered_lines(0, 4), "\x1b[?5l",
                   numbered_lines(4, 2), Resize{10, 8}, "\x1b[?5h", Resize{10, 2}, Resize{10, 9}}),
            "");
}

TEST(ScreenGrid, DoubleWidthLinesEraseTheirRightHalfWithTheOldAttributes) {
  Pair p(12, 5);
  ASSERT_EQ(p.run({"abcdefghijkl\r\nmnopqrstuvwx\r\n", "\x1b[1;1H\x1b#6", "\x1b[2;1H\x1b#3",
                   "\x1b[2;1H\x1b#4", "\x1b[2;1H\x1b#5", "\x1b[3;1Hdouble\x1b#6\r\n",
                   numbered_lines(0, 6), "\x1b#8", "\x1b[2;1H\x1b#6\x1b[3;1H\x1b#3", Resize{8, 3},
                   Resize{14, 6}}),
            "");
}

TEST(ScreenGrid, SelectiveEraseSkipsProtectedCells) {
  Pair p(12, 4);
  ASSERT_EQ(p.run({"ab\x1b[1\"qPROT\x1b[0\"qcd\r\n", "\x1b[1\"qkeep\x1b[2\"qgone", "\x1b[?2J",
                   "\x1b[1;1H\x1b[?0K", "\x1b[2;1H\x1b[2K"}),
            "");
  EXPECT_EQ(p.mirror.cell(0, 2).chars[0], U'P');  // kept by the selective erase
}

TEST(ScreenGrid, ResetAndClearStartOver) {
  Pair p(10, 4);
  ASSERT_EQ(p.run({numbered_lines(0, 9),
                   "\x1b[41m\x1b"
                   "c",
                   numbered_lines(9, 6)}),
            "");
  p.mirror.reset();
  ASSERT_EQ(p.run({"fresh\r\n", numbered_lines(0, 5)}), "");
  EXPECT_EQ(p.mirror.pushed_lines(), 3u);
}

TEST(ScreenGrid, HistoryBeyondItsLimitDropsTheOldestLines) {
  Pair p(10, 3);
  ASSERT_EQ(p.run({numbered_lines(0, 100)}), "");
  EXPECT_EQ(p.mirror.scrollback_lines(), kHistory);
  EXPECT_EQ(row_text(p.mirror, 0), "line " + std::to_string(98 - kHistory));
  ASSERT_EQ(p.run({Resize{10, 50}}), "");  // pops every line kept
  EXPECT_EQ(p.mirror.scrollback_lines(), 0u);
}

TEST(ScreenGrid, RecordingsOfRealProgramsHoldByteForByte) {
  for (const std::string_view name : kRecordings) {
    const std::string bytes = read_recording(name);
    ASSERT_FALSE(bytes.empty()) << name;
    Pair p(80, 24);
    for (std::size_t at = 0; at < bytes.size(); at += 97) {
      p.mirror.feed(std::string_view(bytes).substr(at, 97));
      ASSERT_EQ(p.tap.difference(p.mirror), "") << name << " at byte " << at;
    }
  }
}

// ---- random streams -------------------------------------------------------------------------

// One piece of a stream: text (ASCII, wide, combining, long enough to wrap), controls, and the
// sequences that reach each grid callback, with random arguments; or a resize.
rc::Gen<Step> step() {
  using rc::gen::element;
  using rc::gen::inRange;
  const auto n = [](int lo, int hi) { return *inRange(lo, hi + 1); };
  return rc::gen::exec([n]() -> Step {
    switch (*inRange(0, 12)) {
      case 0: return Resize{n(2, 40), n(1, 14)};
      case 1:
        return std::string(static_cast<std::size_t>(n(1, 50)), static_cast<char>('a' + n(0, 25)));
      case 2:
        return *element<std::string>("\xe7\x95\x8c", "e\xcc\x81", "\xf0\x9f\x98\x80", "\xcc\x81",
                                     "x\xe7\x95\x8c\xe7\x95\x8cy", "\xc3\xa9t\xc3\xa9");
      case 3:
        return *element<std::string>("\r", "\n", "\r\n", "\b", "\t", "\x1bM",
                                     "\x1b"
                                     "D",
                                     "\x1b"
                                     "E",
                                     "\x1b"
                                     "7",
                                     "\x1b"
                                     "8",
                                     "\x1b"
                                     "c");
      case 4: return "\x1b[" + std::to_string(n(0, 16)) + ";" + std::to_string(n(0, 42)) + "H";
      case 5:
        return "\x1b[" + std::to_string(n(0, 20)) +
               *element<std::string>("A", "B", "C", "D", "J", "K", "L", "M", "@", "P", "X", "S",
                                     "T", "b", "G", "d", "E", "F");
      case 6: return "\x1b[" + std::to_string(n(0, 15)) + ";" + std::to_string(n(0, 15)) + "r";
      case 7:
        return *element<std::string>("\x1b[?69h", "\x1b[?69l", "\x1b[r", "\x1b[s", "\x1b[?6h",
                                     "\x1b[?6l", "\x1b[?7l", "\x1b[?7h", "\x1b[4h", "\x1b[4l");
      case 8:
        return "\x1b[?69h\x1b[" + std::to_string(n(0, 30)) + ";" + std::to_string(n(0, 40)) + "s";
      case 9:
        return *element<std::string>("\x1b[?1049h", "\x1b[?1049l", "\x1b[?47h", "\x1b[?47l",
                                     "\x1b[?1047h", "\x1b[?1047l", "\x1b[?5h", "\x1b[?5l");
      case 10:
        return *element<std::string>("\x1b[1;4;7m", "\x1b[m", "\x1b[38;5;200m", "\x1b[48;2;1;2;3m",
                                     "\x1b[3;9;11m", "\x1b[44m", "\x1b[4:3m", "\x1b[27;24m");
      case 11: return *element<std::string>("\x1b#6", "\x1b#3", "\x1b#4", "\x1b#5", "\x1b#8");
      default:
        return *element<std::string>("\x1b[1\"q", "\x1b[0\"q", "\x1b[?0J", "\x1b[?1J", "\x1b[?2J",
                                     "\x1b[?0K", "\x1b[?1K", "\x1b[?2K", "\x1b[3J");
    }
  });
}

RC_GTEST_PROP(ScreenGrid, HoldsWhatLibvtermsScreenLayerHolds, ()) {
  const int cols = *rc::gen::inRange(2, 41);
  const int rows = *rc::gen::inRange(1, 15);
  const auto steps = *rc::gen::container<std::vector<Step>>(step());
  Pair p(cols, rows);
  const std::string d = p.run(steps);
  RC_ASSERT(d == "");
}

}  // namespace
}  // namespace backscroll::testing
