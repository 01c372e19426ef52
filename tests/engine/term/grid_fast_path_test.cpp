// The mirror's fast path (engine/term/grid_fast_path.hpp, docs/fast-path.md) is exact: a mirror
// that applies the bytes of full-screen redraws straight to its grid shows, after every feed,
// what one whose libvterm parses every byte shows (term::first_difference: cells, cursor and
// pending wrap, pen, saved cursor, modes, history), and its grid holds what libvterm's own
// screen layer holds when fed the same stream (ScreenLayerTap). Where the fast path stops, in
// the middle of a line or a run of SGRs, libvterm goes on from the state the fast path left:
// the glyph REP repeats, the glyph a combining mark joins, the pending wrap, the pen.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/term/grid_fast_path.hpp"
#include "engine/term/mirror.hpp"
#include "engine/term/mirror_compare.hpp"
#include "engine/term/reference/vterm_reference.hpp"
#include "engine/term/screen_grid.hpp"
#include "engine/term/scrollback.hpp"

namespace backscroll::testing {
namespace {

using term::Mirror;

constexpr term::ScrollbackLimits kLimits{200, std::size_t{1} << 30};

// Two mirrors fed the same steps, one with the fast path; the fast one also taps a libvterm
// screen layer, unless `tapped` is false (libvterm's screen layer writes past a row for a
// glyph wider than it: fuzz/findings/README.md).
struct Pair {
  ScreenLayerTap tap{kLimits.max_lines};
  Mirror fast;
  Mirror slow;
  bool tapped;
  Pair(int cols, int rows, bool with_tap = true)
      : fast(Cursor{0}, static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows),
             kLimits),
        slow(Cursor{0}, static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows),
             kLimits),
        tapped(with_tap) {
    if (tapped) fast.set_tap(&tap);
    slow.set_fast_path(false);
  }

  // "" when both agree (and the grid with the screen layer) after feeding `bytes`.
  std::string feed(std::string_view bytes) {
    fast.feed(bytes);
    slow.feed(bytes);
    return difference();
  }
  std::string resize(int cols, int rows) {
    fast.resize(static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows));
    slow.resize(static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows));
    return difference();
  }
  std::string difference() const {
    if (std::string d = term::first_difference(slow, fast); !d.empty()) return "mirrors: " + d;
    if (!tapped) return "";
    if (std::string d = tap.difference(fast.screen()); !d.empty()) return "screen layer: " + d;
    return "";
  }
};

// Feeds `stream` to a pair in pieces of `piece` bytes; "" when they agree after every piece.
std::string feed_in_pieces(Pair& p, const std::string& stream, std::size_t piece) {
  for (std::size_t at = 0; at < stream.size(); at += piece) {
    if (std::string d = p.feed(std::string_view(stream).substr(at, piece)); !d.empty())
      return "at byte " + std::to_string(at) + ": " + d;
  }
  return "";
}

// A top-like program on the alternate screen: each frame rewrites every row in colour.
std::string redraws(std::size_t bytes, int rows) {
  std::string out = "\x1b[?1049h";
  for (int frame = 0; out.size() < bytes; ++frame) {
    out += "\x1b[H\x1b[7m frame " + std::to_string(frame) + "\x1b[K\x1b[0m";
    for (int r = 2; r <= rows; ++r) {
      out += "\x1b[" + std::to_string(r) + ";1H\x1b[3" + std::to_string(r % 8) + "m" +
             std::to_string(1000 + r) + " user " + std::to_string(frame * 7 % 1000) +
             " S  1.0 process-" + std::to_string(r) + "\x1b[0m\x1b[K";
    }
  }
  return out;
}

TEST(GridFastPath, TakesNearlyAllOfAFullScreenRedrawAndShowsWhatLibvtermShows) {
  const std::string stream = redraws(256 * 1024, 24);
  Pair p(80, 24);
  ASSERT_EQ(feed_in_pieces(p, stream, 4096), "");
  // Only the switch to the alternate screen goes to libvterm.
  EXPECT_GT(p.fast.screen().fast_path_bytes(), stream.size() - 64);
  EXPECT_EQ(p.slow.screen().fast_path_bytes(), 0u);
}

TEST(GridFastPath, ScrollingTextWithColoursAndErasesIsExact) {
  std::string stream;
  for (int i = 0; i < 300; ++i) {
    stream += "\x1b[1;3" + std::to_string(i % 8) + "mline " + std::to_string(i) +
              "\x1b[0m: \x1b[38;5;" + std::to_string(i % 256) + "mtext\x1b[48;2;1;" +
              std::to_string(i % 256) + ";3m bg\x1b[m\x1b[K\r\n";
  }
  Pair p(40, 10);  // lines wrap, the screen scrolls into the history
  EXPECT_EQ(feed_in_pieces(p, stream, 333), "");
  EXPECT_GT(p.fast.screen().fast_path_bytes(), stream.size() * 9 / 10);
}

TEST(GridFastPath, LibvtermRepeatsAndJoinsMarksToTheLastGlyphTheFastPathPrinted) {
  Pair p(20, 5);
  // REP of the fast path's last glyph; a combining mark after it; then both at the row's end.
  EXPECT_EQ(p.feed("\x1b[2;3Habc"), "");
  EXPECT_EQ(p.feed("\x1b[3b"), "");
  EXPECT_EQ(p.feed("x\xcc\x81y"), "");
  EXPECT_EQ(p.feed("\x1b[3;1H0123456789012345678Z"), "");
  EXPECT_EQ(p.feed("\xcc\x81"), "");
  EXPECT_EQ(p.feed("\x1b[2b"), "");
  EXPECT_EQ(p.feed("\x1b[4;19Hqr\x1b[31m"), "");  // a pending wrap, then an SGR: still pending
  EXPECT_TRUE(p.fast.screen().cursor().pending_wrap);
  EXPECT_EQ(p.feed("\xe4\xb8\xad"), "");  // wide text from libvterm wraps first
}

// UTF-8 text (accents, box drawing, CJK, emoji) on the fast path: wide glyphs that do not fit
// in the row's last column go to the next row first, autowrap or not; one that reaches the end
// leaves a pending wrap (autowrap on) or the cursor on it (off).
TEST(GridFastPath, TakesUtf8TextOfOneAndTwoColumns) {
  const std::string line =
      "r\xc3\xa9sum\xc3\xa9 \xe2\x94\x80\xe2\x94\x80 \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac "
      "\xf0\x9f\x9a\x80 \xef\xbc\xa1";
  for (const char* mode : {"\x1b[?7h", "\x1b[?7l"}) {
    for (int cols : {2, 3, 7, 10, 11}) {
      Pair p(cols, 6);
      std::string stream = mode;
      for (int i = 0; i < 20; ++i) stream += line + (i % 3 ? "\r\n" : "\xe4\xb8\xad");
      for (std::size_t piece : {std::size_t{1}, std::size_t{5}, stream.size()}) {
        EXPECT_EQ(feed_in_pieces(p, stream, piece), "")
            << mode << " " << cols << " columns, pieces of " << piece;
      }
      // Most of the three feeds (below 4 columns the pending wrap is rarely known to it).
      if (cols > 3) {
        EXPECT_GT(p.fast.screen().fast_path_bytes(), stream.size());
      }
    }
  }
}

// libvterm's UTF-8 decoder turns U+FFFE and U+FFFF into U+FFFD: the fast path leaves them to
// it (it printed them as they came, so a mirror showed U+FFFE or U+FFFD by where its writes
// began: found by the mirror fuzzer, 2026-12-05, fuzz/corpus/mirror/finding_fast_path_ufffe).
TEST(GridFastPath, LeavesTheNoncharactersLibvtermReplacesToIt) {
  for (std::size_t piece : {std::size_t{1}, std::size_t{4}, std::size_t{64}}) {
    Pair p(10, 3);
    EXPECT_EQ(feed_in_pieces(p,
                             "a\xef\xbf\xbe\xef\xbf\xbf"
                             "b \xe2\x94\x9c\xef\xbf\xbe",
                             piece),
              "")
        << "pieces of " << piece;
    EXPECT_EQ(p.fast.screen().cell(0, 1).chars[0], U'\ufffd');
    EXPECT_EQ(p.fast.screen().cell(0, 2).chars[0], U'\ufffd');
  }
}

// A glyph followed by a mark, or by U+302A-U+302F or U+3099-U+309A (which libvterm joins to the
// glyph and counts two columns each within a write, but joins without the columns when a write
// starts with them), goes to libvterm with them, in one write.
TEST(GridFastPath, LeavesAGlyphToLibvtermWithWhatWouldJoinItAtAWritesStart) {
  for (const char* stream :
       {"X\xe3\x80\xaay", "ab\xe3\x82\x99z", "\xe4\xb8\xad\xcc\x81q", "\xc3\xa9\xcc\x81\xcc\x82q",
        "x\xe4\xb8", "\xe2\x94\x80\xe3\x82\x9a."}) {
    Pair p(20, 4);
    EXPECT_EQ(p.feed(stream), "") << ::testing::PrintToString(std::string(stream));
    EXPECT_EQ(p.feed("\xcc\x81|\x1b[2b"), "") << ::testing::PrintToString(std::string(stream));
  }
}

TEST(GridFastPath, StopsWhereLibvtermMustTakeOverAndGoesOnAfter) {
  Pair p(30, 8);
  const char* steps[] = {
      "\x1b[5;5Hplain \x1b[1;4;7;9;21;3;5mattrs\x1b[22;23;24;25;27;29m off",
      "\x1b[2;8;53mextras\x1b[28;55m\x1b[11mfont\x1b[10m",
      "\x1b[38:5:100mcolon\x1b[38;5mshort\x1b[58;5;3munder\x1b[m",  // left to the rewrites
      "\x1b[?25l\x1b[H\x1b[2J\x1b[?25h",                            // DEC modes between
      "\x1b[3;20r\x1b[20;1Hregion\n\n\n\x1b[r",                     // a scroll region
      "\x1b[4hinsert\x1b[4l\x1b[?6horigin\x1b[?6l",                 // modes rule it out
      "\x1b(0qqq\x1b(Bascii\x1b)0\x0elines\x0f",                    // charsets
      "\x1b[1;30Hx\r\nwrap at the end of the row and on\x1b[K",
      "\x1b[?7lno autowrap past the end of the row\x1b[?7h",
      "\x1b[1;30Hy\n\x1b[1;30Hz\b\x1b[1;30Hw\x1b[K\x1b[1;30Hv\x1b[J",  // at a pending wrap
      "\x1b[99999;99999Hbig\x1b[0;0Hzero\x1b[;7Hmissing\x1b[5`\x1b[2a\x1b[3d\x1b[2e",
      "\x1b[3A\x1b[2B\x1b[4C\x1b[9D\x1b[2E\x1b[F\x1b[7G\x1b[6;6f",
      "\x1b[1K\x1b[2K\x1b[1J\x1b[0J\x1b[3J\x1b[5K\x1b[5J",
      "\x1b[1;2;3;4;5;6;7;8;9;21;22;23;24;25;27;29;30mseventeen\x1b[m",
      "\x1b"
      "7\x1b[10;10Hsaved\x1b"
      "8restored\x1b[s\x1b[u",
      "\xc3\xa9t\xc3\xa9 caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87\x07\x1b]2;title\x07end",
      "\x1b[?1049h\x1b[Halt screen\x1b[?1049l",
      "\x1b#6double\x1b[2;1Hafter line size",  // rules it out for good
  };
  for (const char* step : steps) {
    SCOPED_TRACE(step);
    ASSERT_EQ(p.feed(step), "");
  }
}

// What ncurses programs print for TERM=xterm-256color: sgr0 is `ESC ( B ESC [ m` (G0
// designated US-ASCII again), UTF-8 meters and box drawing come after it, and top pads each row
// to the full width before its `ESC [ K`, which then meets a pending wrap and erases nothing.
TEST(GridFastPath, TakesWhatNcursesPrintsSgr0Utf8AndFullRowsBeforeAnErase) {
  const std::string sgr0 = "\x1b(B\x1b[m";
  std::string frames = sgr0;
  for (int frame = 0; frame < 40; ++frame) {
    frames += "\x1b[H";
    for (int r = 0; r < 8; ++r) {
      std::string row = "\x1b[1m" + std::to_string(frame * 8 + r) + sgr0 +
                        " \xe2\x94\x80\xe2\x96\x88 " + "\x1b[38;5;" + std::to_string(16 + r) +
                        "mcpu" + sgr0;
      // Seven columns besides the number: even rows fill the 20 columns, odd ones stop short.
      const std::size_t used = std::to_string(frame * 8 + r).size() + 7;
      row += std::string(20 - used - static_cast<std::size_t>(r % 2), '.');
      frames += row + "\x1b[K" + (r + 1 < 8 ? "\r\n" : "");
    }
  }
  for (std::size_t piece : {std::size_t{7}, std::size_t{64}, frames.size()}) {
    Pair p(20, 8);
    ASSERT_EQ(feed_in_pieces(p, frames, piece), "") << "pieces of " << piece;
    if (piece == frames.size()) {
      // All but the first designation, which changes G0 and goes to libvterm.
      EXPECT_EQ(p.fast.screen().fast_path_bytes(), frames.size() - 3);
    }
  }
}

// HT moves to the next of libvterm's first tab stops (every eighth column), at most to the
// last column, where it stays; at a pending wrap, or once HTS or TBC changed the stops, libvterm
// takes it (ls -C, diffs of tab-indented code).
TEST(GridFastPath, TakesTabsAtTheFirstTabStops) {
  std::string stream;
  for (int i = 0; i < 60; ++i) {
    stream += "\x1b[3" + std::to_string(i % 8) + "m" +
              std::string(static_cast<std::size_t>(i % 13), 'x') + "\t\x1b[0m" + std::to_string(i) +
              "\t\t" + (i % 5 ? "\r\n" : "");
  }
  for (int cols : {2, 7, 8, 9, 17, 40}) {
    for (std::size_t piece : {std::size_t{3}, stream.size()}) {
      Pair p(cols, 6);
      EXPECT_EQ(feed_in_pieces(p, stream, piece), "") << cols << " columns, pieces of " << piece;
      if (cols == 40 && piece == stream.size()) {
        EXPECT_EQ(p.fast.screen().fast_path_bytes(), stream.size());
      }
    }
  }
  Pair p(20, 4);
  EXPECT_EQ(p.feed("a\tb\x1b[1;4H\x1bH\rx\ty\tz\x1b[3gq\tr"), "");  // stops changed
  EXPECT_EQ(p.feed("\x1b"
                   "c\tafter a reset\t!"),
            "");
}

// How vim and less scroll: a region over all rows but the status line, a line deleted at its
// top (the text moves up, a new line is drawn at its bottom) or inserted (down), SU and SD,
// the region reset. On the main screen a scroll at row 0 pushes the line into the history.
TEST(GridFastPath, TakesScrollRegionsAndLineScrolling) {
  std::string stream = "\x1b[H\x1b[2J";
  for (int i = 0; i < 12; ++i) stream += "line " + std::to_string(i) + "\r\n";
  for (int i = 0; i < 80; ++i) {
    const std::string n = std::to_string(i);
    switch (i % 5) {
      case 0:  // vim's Ctrl-E
        stream += "\x1b[1;11r\x1b[11;1H\r\n\x1b[1;12r\x1b[11;1H\x1b[33mnew " + n + "\x1b[m";
        break;
      case 1:  // vim's Ctrl-Y
        stream += "\x1b[1;11r\x1b[H\x1b[L\x1b[r\x1b[Hback " + n;
        break;
      case 2:
        stream += "\x1b[3;9r\x1b[5;1H\x1b[2M\x1b[4;1H\x1b[3L\x1b[1;30r\x1b[20;1Houtside\x1b[M";
        break;
      case 3: stream += "\x1b[2;10r\x1b[2S\x1b[T\x1b[r\x1b[12;1Hstatus " + n + "\x1b[K"; break;
      default: stream += "\x1b[S\x1b[99M\x1b[0;0r\x1b[5;5r\x1b[9;3r\x1b[12;1H" + n + "\r\n"; break;
    }
  }
  for (std::size_t piece : {std::size_t{5}, std::size_t{61}, stream.size()}) {
    Pair p(20, 12);
    ASSERT_EQ(feed_in_pieces(p, stream, piece), "") << "pieces of " << piece;
    if (piece == stream.size()) {
      EXPECT_EQ(p.fast.screen().fast_path_bytes(), stream.size());
      EXPECT_GT(p.fast.screen().scrollback_lines(), 0u);
    }
  }
}

// `CSI 1 ; rows + 1 r` is a region whose bottom is the last row and stays there when the screen
// grows; `CSI 1 ; rows r` is the whole screen, whose bottom follows. libvterm reads the run's
// DECSTBM again as it came: written back normalised (`CSI 1 ; rows r`), the first became the
// second (found by the mirror fuzzer, 2026-12-05, five inputs in minutes).
TEST(GridFastPath, ARegionEndingOnTheLastRowKeepsItsBottomWhenTheScreenGrows) {
  for (const char* region : {"\x1b[1;6r", "\x1b[1;5r", "\x1b[2;6r", "\x1b[3r", "\x1b[r"}) {
    Pair p(20, 5);
    EXPECT_EQ(p.feed(std::string(region) + "top\r\n"), "") << region;
    EXPECT_EQ(p.resize(20, 9), "") << region;
    // Insert mode rules the fast path out: libvterm's own region scrolls these.
    EXPECT_EQ(p.feed("\x1b[4h\x1b[5;1Hbottom" + std::string(6, '\n') + "end\x1b[4l"), "") << region;
  }
}

// What pagers and tmux print: `less` scrolls back a line with RI on the top row (the screen
// moves down, the new line is drawn there), and tmux draws each pane's row with a CUP, the text
// and ECH for the rest of the pane, then `CSI ? 12 l CSI ? 25 h` around the cursor. RI inside
// and outside a region, from the top row above one, ECH past the row's end and at a pending
// wrap (where libvterm takes it) are here too.
TEST(GridFastPath, TakesWhatPagersAndTmuxPrintReverseIndexEraseCharactersAndTheCursorsBlink) {
  std::string pager = "\x1b[H\x1b[2J";
  for (int i = 0; i < 12; ++i) pager += "line " + std::to_string(i) + "\r\n";
  for (int i = 0; i < 60; ++i) {
    pager += "\x1b[H\x1bMback " + std::to_string(i) + "\x1b[K\x1b[12;1H\x1b[7m:\x1b[m\x1b[K";
  }
  std::string panes = "\x1b[H\x1b[2J";
  for (int i = 0; i < 80; ++i) {
    const int row = 1 + i % 12;
    const std::string text = "out " + std::to_string(i);
    panes += "\x1b[?25l\x1b[" + std::to_string(row) + ";1H\x1b[3" + std::to_string(i % 8) + "m" +
             text + "\x1b[m\x1b[" + std::to_string(9 - static_cast<int>(text.size()) % 9) +
             "X\x1b[" + std::to_string(row) + ";11H|right " + std::to_string(i) + "\x1b[99X" +
             "\x1b[?12l\x1b[?25h";
  }
  std::string regions = "\x1b[H";
  for (int i = 0; i < 40; ++i) {
    regions += "\x1b[4;9r\x1b[4;1H\x1bM\x1bM\x1b[6;1H\x1bMmid " + std::to_string(i) +
               "\x1b[2;1H\x1bM\x1bM\x1bMtop\x1b[r\x1b[H\x1bM\x1b[X\x1b[0X\x1b[?12h";
  }
  for (const std::string& stream : {pager, panes, regions}) {
    for (std::size_t piece : {std::size_t{3}, std::size_t{50}, stream.size()}) {
      Pair p(20, 12);
      ASSERT_EQ(feed_in_pieces(p, stream, piece), "") << "pieces of " << piece;
      if (piece == stream.size()) {
        EXPECT_EQ(p.fast.screen().fast_path_bytes(), stream.size());
      }
    }
  }
  Pair p(20, 6);
  EXPECT_EQ(p.feed("\x1b[2;1H" + std::string(20, 'x') + "\x1bMy"), "");  // RI at a pending wrap
  EXPECT_EQ(p.feed("\x1b[H\x1b[2;1H" + std::string(20, 'x') + "\x1b[3Xz"), "");  // ECH there
  EXPECT_EQ(p.feed("\x1b[H\x1bM\x1b[1;5H\x1b[1;2X\x1b[?12;25l"), "");
}

// Output that ends each coloured span with `CSI 39 m`, `CSI 22 m` or `CSI 49 m` instead of a
// reset (chalk, Node's util.inspect, pygments): the fast path takes all of it in one run, and
// the SGRs it hands libvterm afterwards are only those still setting a part of its pen.
std::string spans_without_resets(int spans) {
  std::string stream = "\x1b[H";
  for (int i = 0; i < spans; ++i) {
    stream += "\x1b[3" + std::to_string(i % 8) + "mab\x1b[39m ";
    if (i % 3 == 0) stream += "\x1b[1mx\x1b[22m";
    if (i % 5 == 0) stream += "\x1b[4" + std::to_string(i % 8) + ";1;3mq\x1b[49m";
    if (i % 7 == 0) stream += "\x1b[38;2;1;2;" + std::to_string(i % 256) + "m\x1b[2mz\x1b[22m";
    if (i % 10 == 9) stream += "\r\n";
  }
  return stream;
}

TEST(GridFastPath, AnSgrLogKeepsOnlyWhatLibvtermStillNeeds) {
  using term::GridFastPath;
  const auto bytes = [](const char* sgr) {
    return std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(sgr),
                                          std::char_traits<char>::length(sgr));
  };
  GridFastPath::SgrLog log;
  log.append(bytes("\x1b[1;33m"), GridFastPath::kPartBold | GridFastPath::kPartForeground);
  log.append(bytes("\x1b[2m"), 0);  // faint: the mirror's own, nothing of libvterm's
  log.append(bytes("\x1b[39m"), GridFastPath::kPartForeground);
  std::string out;
  log.write_to(out);
  EXPECT_EQ(out, "\x1b[1;33m\x1b[39m");  // 1;33 still sets bold
  log.append(bytes("\x1b[22m"), GridFastPath::kPartBold);
  out.clear();
  log.write_to(out);
  EXPECT_EQ(out, "\x1b[39m\x1b[22m");
  log.append(bytes("\x1b[m"), GridFastPath::kAllPenParts);
  out.clear();
  log.write_to(out);
  EXPECT_EQ(out, "\x1b[m");
  for (std::size_t i = 0; i < 10 * GridFastPath::SgrLog::kMaxEntries; ++i)
    log.append(bytes(i % 2 ? "\x1b[31m" : "\x1b[1m"),
               i % 2 ? GridFastPath::kPartForeground : GridFastPath::kPartBold);
  EXPECT_LE(log.size(), GridFastPath::SgrLog::kMaxEntries);
  out.clear();
  log.write_to(out);
  EXPECT_EQ(out, "\x1b[m\x1b[1m\x1b[31m");

  // Thousands of such spans (more than the log holds): the mirrors' pens agree, libvterm's
  // included, fed whole or in 7-byte pieces (of fewer spans: each piece is compared).
  const std::string stream = spans_without_resets(3000);
  for (const auto& [spans, piece] : {std::pair{300, std::size_t{7}}, {3000, stream.size()}}) {
    const std::string part = spans_without_resets(spans);
    Pair p(80, 24);
    EXPECT_EQ(feed_in_pieces(p, part, piece), "") << "pieces of " << piece;
    EXPECT_EQ(p.fast.screen().fast_path_bytes(), part.size());
    EXPECT_EQ(p.feed("\x1b[5bX\x1b[3@"), "");  // REP and ICH, which libvterm applies in its pen
  }
  // Taken in one run, after which libvterm reads only a few SGRs.
  struct NoLineAttrs final : term::ScreenGrid::LineAttrsSource {
    term::LineAttrs line_attrs(int) const override { return {}; }
  } lines;
  term::Scrollback history(kLimits);
  term::ScreenGrid grid(24, 80, history, lines);
  GridFastPath::State s;
  s.rows = 24;
  s.cols = 80;
  s.region_bottom = 24;
  const auto all = std::span<const unsigned char>(
      reinterpret_cast<const unsigned char*>(stream.data()), stream.size());
  EXPECT_EQ(GridFastPath::run(grid, all, s), stream.size());
  std::string written;
  s.sgr_log.write_to(written);
  EXPECT_LE(written.size(), 64u) << written;
}

// ---- random streams -----------------------------------------------------------------------

// Mostly what the fast path takes (ASCII and UTF-8 text, CR, LF, BS, SGRs, moves, erases), with
// what it leaves to libvterm in between: marks, REP, modes, regions, saves, resizes. `joiners`:
// U+302A and U+3099 too, which libvterm joins to the glyph before and counts two columns each
// (no screen layer can check those: see Pair).
rc::Gen<std::string> piece(bool joiners = false) {
  using rc::gen::element;
  using rc::gen::inRange;
  const auto n = [](int lo, int hi) { return std::to_string(*inRange(lo, hi + 1)); };
  return rc::gen::exec([n, joiners]() -> std::string {
    switch (*inRange(0, 18)) {
      case 0:
      case 1:
        return std::string(static_cast<std::size_t>(*inRange(1, 60)),
                           static_cast<char>('a' + *inRange(0, 26)));
      case 2: return *element<std::string>("\r", "\n", "\r\n", "\b", "\t", "\x07");
      case 3: return "\x1b[" + n(0, 30) + ";" + n(0, 90) + *element<std::string>("H", "f");
      case 4:
        return "\x1b[" + n(0, 30) +
               *element<std::string>("A", "B", "C", "D", "E", "F", "G", "`", "a", "d", "e");
      case 5:
        return "\x1b[" + *element<std::string>("", "0", "1", "2", "3") +
               *element<std::string>("K", "J");
      case 6:
        // ncurses' sgr0 designates G0 as US-ASCII before every reset.
        return *element<std::string>("", "", "\x1b(B") + "\x1b[" +
               *element<std::string>(
                   "", "0", "1", "4", "7", "22", "39", "49", "2", "53", "8", "28", "55", "1;2;8;53",
                   "38;5;" + n(0, 255) + ";2", "22;28;55;0;8", "38;5;" + n(0, 255),
                   "48;2;" + n(0, 255) + ";" + n(0, 255) + ";" + n(0, 255),
                   "3" + n(0, 7) + ";4" + n(0, 7), "9" + n(0, 7), "10" + n(0, 7),
                   // Spans that end without a reset, as chalk and pygments print them.
                   "1;3" + n(0, 7), "23;24;25", "3;4;5;7;9", "21", "27;29", "1" + n(0, 9),
                   "38;2;" + n(0, 255) + ";" + n(0, 255) + ";" + n(0, 255) + ";1",
                   // Colour forms the mirror rewrites for libvterm: values past 255, missing
                   // or short ones, unknown modes, the underline colour.
                   "38;5;" + n(250, 400), "48;2;1;" + n(250, 300) + ";3", "38;5;", "38;2;1;;3",
                   "1;38;2;1;2", "48;7;1", "38", "58;5;" + n(0, 9)) +
               "m";
      case 7:
        return *element<std::string>("\xc3\xa9", "\xe4\xb8\xad", "\xcc\x81", "e\xcc\x81",
                                     "\xf0\x9f\x98\x80", "\xe2\x94\x80\xe2\x94\x80");
      case 8: return "\x1b[" + n(0, 20) + "b";
      case 9:
        return *element<std::string>("\x1b[?7l", "\x1b[?7h", "\x1b[4h", "\x1b[4l", "\x1b[?6h",
                                     "\x1b[?6l", "\x1b[?25l", "\x1b[?25h", "\x1b(B", "\x1b(0",
                                     "\x1b[?2026h", "\x1b[?2026l", "\x1b[?25;2026l", "\x1bH",
                                     "\x1b[?12l", "\x1b[?12h", "\x1b[?12;25h", "\x1b[3g", "\x1b[g",
                                     "\x1b"
                                     "c",
                                     "\x1b[20h", "\x1b[20l");
      case 10: return "\x1b[" + n(0, 20) + ";" + n(0, 20) + "r";
      case 11:
        return *element<std::string>(
            "\x1b"
            "7",
            "\x1b"
            "8",
            "\x1bM",
            "\x1b"
            "D",
            "\x1b[s", "\x1b[u",
            // Hyperlinks, with either terminator, and OSCs like them that are not.
            "\x1b]8;;file://h/x\x07", "\x1b]8;id=1;http://e.org/a\x1b\\", "\x1b]8;;\x07",
            "\x1b]8;;\x1b\\", "\x1b]8;;a\nb\x07", "\x1b]8;;\xc3\xa9\x07", "\x1b]8;;x\x1b[m",
            "\x1b]2;title\x07", "\x1b]8;;cut");
      case 12:
        return *element<std::string>("\x1b[?1049h", "\x1b[?1049l", "\x1b[?1047h", "\x1b[?1047l");
      case 13: return "\x1b[" + n(0, 9) + *element<std::string>("L", "M", "@", "P", "X", "S", "T");
      case 14:
        return *element<std::string>("\x1b[4:3m", "\x1b[38;5m", "\x1b[58;5;1m",
                                     "\x1b[1;2;3;4;5;6;7;8;9;1;2;3;4;5;6;7;8m");
      case 15: return "\x1b[" + n(0, 3) + "\x1b[" + n(0, 3) + "H";  // a sequence cut by another
      case 16:
      case 17: {
        // UTF-8 text: one and two columns, marks, C1 controls, cut and malformed sequences.
        std::string text;
        for (int k = *inRange(1, 24); k > 0; --k) {
          if (joiners && *inRange(0, 8) == 0) {
            text += *element<std::string>("\xe3\x80\xaa", "\xe3\x82\x99");
            continue;
          }
          if (*inRange(0, 6) == 0) {
            // Zero-width characters after a glyph: a cell keeps six characters in libvterm,
            // more in the mirror (accents, U+FE0F, ZWJ, ZWSP, a Devanagari sign).
            for (int m = *inRange(1, 9); m > 0; --m) {
              text += *element<std::string>("\xcc\x81", "\xef\xb8\x8f", "\xe2\x80\x8d",
                                            "\xe2\x80\x8b", "\xe0\xa4\xbc");
            }
            continue;
          }
          text += *element<std::string>("\xc3\xa9", "\xe2\x94\x80", "\xe2\x9c\x93", "\xe4\xb8\xad",
                                        "\xf0\x9f\x9a\x80", "\xef\xbc\xa1", "\xcc\x81",
                                        "\xe2\x80\x8b", "\xc2\x85", "\xe4\xb8", "\xff",
                                        "\xed\xa0\x80", "a", " ", "\xc2\xa0");
        }
        return text;
      }
      default: return "#resize";
    }
  });
}

// Feeds random pieces (and resizes) to a pair, cut at random; asserts they agree throughout.
void check_random_stream(bool joiners) {
  const int cols = *rc::gen::inRange(2, 41);
  const int rows = *rc::gen::inRange(1, 15);
  const auto pieces = *rc::gen::container<std::vector<std::string>>(piece(joiners));
  Pair p(cols, rows, /*with_tap=*/!joiners);
  std::string all;
  for (const std::string& s : pieces) all += s + "|";
  RC_LOG() << cols << "x" << rows << " " << ::testing::PrintToString(all) << "\n";
  std::string pending;  // pieces fed together: splits fall anywhere between them
  for (const std::string& s : pieces) {
    if (s == "#resize") {
      RC_ASSERT(p.feed(pending) == "");
      pending.clear();
      RC_ASSERT(p.resize(*rc::gen::inRange(2, 41), *rc::gen::inRange(1, 15)) == "");
      continue;
    }
    pending += s;
    if (*rc::gen::inRange(0, 3) == 0) {
      const std::size_t cut = *rc::gen::inRange<std::size_t>(0, pending.size() + 1);
      RC_ASSERT(p.feed(std::string_view(pending).substr(0, cut)) == "");
      pending.erase(0, cut);
    }
  }
  RC_ASSERT(p.feed(pending) == "");
  // What later bytes show of the state left: text in the pen, REP, a mark, a wrap.
  RC_ASSERT(p.feed("Xy\x1b[3b\xcc\x81" + std::string(static_cast<std::size_t>(cols), 'w') + "z") ==
            "");
}

RC_GTEST_PROP(GridFastPath, ShowsWhatLibvtermShowsWhateverTheStreamAndItsPieces, ()) {
  check_random_stream(false);
}

// With U+302A and U+3099, which widen the glyph before them: the fast path leaves that glyph to
// libvterm (the mirrors only: libvterm's screen layer overflows on glyphs wider than a row).
RC_GTEST_PROP(GridFastPath, AgreesWithLibvtermOnCharactersThatWidenTheGlyphBefore, ()) {
  check_random_stream(true);
}

// The mirror hands the fast path its bytes before the scanner reads them, and the scanner only
// steps over what it took (VtScanner::skip_fast): the modes it keeps from those bytes (the
// scroll region, the cursor's visibility, the blink mode's reading) must be the ones it keeps
// when it reads every byte, wherever the pieces end.
TEST(GridFastPath, TheScannerKeepsTheModesOfWhatTheFastPathTook) {
  const std::string stream =
      "\x1b(B\x1b[?25l\x1b[3;8r\x1b[5;1Htext\x1bM\x1b[?12h\x1b(B\x1b[1mbold\x1b[m\r\n"
      "\xe2\x94\x80\xe4\xb8\xad\x1b[?2026h\x1b[K";
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, stream.size()}) {
    Pair p(20, 10);
    ASSERT_EQ(feed_in_pieces(p, stream, piece), "") << "pieces of " << piece;
    const term::TerminalModes& modes = p.fast.scanner().modes();
    EXPECT_FALSE(modes.cursor_visible);
    EXPECT_EQ(modes.scroll_top, 2);
    EXPECT_EQ(modes.scroll_bottom, 8);
    EXPECT_EQ(modes.cursor_style_source, term::CursorStyleSource::blink_mode);
    EXPECT_EQ(modes, p.slow.scanner().modes());
    EXPECT_EQ(p.fast.position(), p.slow.position());
    EXPECT_EQ(p.fast.parsed(), Cursor{stream.size()});
    EXPECT_TRUE(p.fast.scanner().at_clean_boundary());
    // All of it but the first `ESC ( B`, which designates G0 (libvterm takes that one).
    if (piece == stream.size()) {
      EXPECT_EQ(p.fast.screen().fast_path_bytes(), stream.size() - 3);
    }
  }
}

// A status line drawn between DECSC and DECRC, as apt draws its progress bar below the lines it
// scrolls: the fast path takes the save, the status line and the restore, and libvterm's slot,
// the mirror's saved cursor (first_difference compares it), the pen after the restore and the
// pending wrap agree with a mirror whose libvterm read every byte.
std::string status_lines(int lines) {
  std::string out =
      "\x1b"
      "7\x1b[1;23r\x1b"
      "8\x1b[1A";
  for (int i = 0; i < lines; ++i) {
    out += "\x1b[1mGet:" + std::to_string(i) + "\x1b[22m http://deb.debian.org pkg" +
           std::to_string(i) + "\r\n";
    if (i % 3 == 0) {
      out +=
          "\x1b"
          "7\x1b[24;0f\x1b[42m\x1b[30mProgress: [" +
          std::to_string(i % 100) + "%]\x1b[49m\x1b[39m [" +
          std::string(static_cast<std::size_t>(i % 40), '#') +
          "]\x1b"
          "8";
    }
  }
  return out;
}

TEST(GridFastPath, TakesASaveARestoreAndTheStatusLineBetween) {
  // Compared after every piece: 7-byte pieces of 60 lines, then 200 lines whole.
  for (const auto& [lines, piece] : {std::pair{60, std::size_t{7}}, {200, std::size_t{0}}}) {
    const std::string stream = status_lines(lines);
    Pair p(80, 24);
    ASSERT_EQ(feed_in_pieces(p, stream, piece == 0 ? stream.size() : piece), "")
        << "pieces of " << piece;
    ASSERT_TRUE(p.fast.screen().saved_cursor().has_value());
    if (piece == 0) {
      EXPECT_EQ(p.fast.screen().fast_path_bytes(), stream.size());
    }
  }
  // The rules at the edges, each after a run that saved (or not): a restore with no save of
  // the run's own, a DECTCEM or blink change between the two (libvterm takes the restore),
  // the pending wrap kept by a restore in place and ended by one that moves, a pen with
  // extras and SGRs on both sides, two saves, a blink change after a restore (the scanner
  // reads it otherwise then: libvterm takes it), REP and a mark after a restore.
  const std::string edges[] = {
      "\x1b[2;3Hab\x1b"
      "8x",
      "\x1b[1;31;2m\x1b[3;3H\x1b"
      "7\x1b[?25l\x1b[5;5Hq\x1b"
      "8y",
      "\x1b[3;3H\x1b"
      "7\x1b[?12h\x1b[5;5Hq\x1b"
      "8y\x1b[?12l",
      "\x1b[1;75H\x1b[4mabcdef\x1b"
      "7\x1b[m\x1b"
      "8\x1b[31mz",
      "\x1b[1;75Habcdef\x1b"
      "7\x1b[2;1H\x1b"
      "8z",
      "\x1b[1;75Habcdef\x1b"
      "7\x1b[2;1Hq\x1b"
      "8\x1b[Kz",
      "\x1b[2;8;53;38;2;1;2;3m\x1b"
      "7\x1b[22;28;44mq\x1b"
      "8r\x1b[7ms\x1b"
      "7\x1b[m\x1b"
      "8t",
      "\x1b[33m\x1b"
      "7\x1b[1m\x1b"
      "7\x1b[m\x1b[3;3H\x1b"
      "8u\x1b[5;5H\x1b"
      "8v",
      "\x1b[3;3H\x1b"
      "7\x1b[?12h\x1b[5;5H\x1b"
      "8\x1b[?12l\x1b[?12h",
      "\x1b[?12h\x1b[3;3H\x1b"
      "7\x1b[5;5Hq\x1b"
      "8y",
      "\x1b[3;3H\x1b"
      "7\x1b[5;5H\x1b"
      "8\x1b[?12h",
      "\x1b[3;3Hx\x1b"
      "7\x1b[5;5Hq\x1b"
      "8\x1b[3b\xcc\x81",
      "\x1b[?25l\x1b"
      "7\x1b[?25h\x1b[2;2H\x1b[?25l\x1b"
      "8\x1b[?25h\x1b"
      "8",
  };
  for (const std::string& edge : edges) {
    for (std::size_t piece : {std::size_t{1}, std::size_t{3}, edge.size()}) {
      Pair p(80, 24);
      EXPECT_EQ(p.feed("\x1b"
                       "7\x1b[m"),
                "");  // a slot saved before, at home
      EXPECT_EQ(feed_in_pieces(p, edge, piece), "")
          << ::testing::PrintToString(edge) << " in " << piece;
      EXPECT_EQ(p.fast.scanner().modes(), p.slow.scanner().modes())
          << ::testing::PrintToString(edge);
    }
  }
}

// ncurses draws boxes in DEC graphics (`ESC ( 0`, the line characters, `ESC ( B`), which the
// fast path leaves to libvterm: libvterm reads up to the next ESC and the fast path goes on
// after the box. Until 2026-12-07 it read the rest of the feed.
TEST(GridFastPath, GoesOnAfterABoxDrawnInDecGraphics) {
  std::string stream;
  const std::string box = "\x1b(0lqqqk\x1b(B";  // libvterm's share of each frame
  constexpr int kFrames = 40;
  for (int frame = 0; frame < kFrames; ++frame) {
    stream += "\x1b[1;1H" + box + "\x1b[m\x1b[2;1H";
    for (int row = 2; row <= 20; ++row)
      stream += "\x1b[" + std::to_string(row) + ";3H\x1b[3" + std::to_string(row % 8) + "m" +
                std::to_string(frame * row) + "\x1b(B\x1b[m\x1b[K";
  }
  for (std::size_t piece : {std::size_t{5}, stream.size()}) {
    Pair p(40, 24);
    ASSERT_EQ(feed_in_pieces(p, stream, piece), "") << "pieces of " << piece;
    if (piece == stream.size()) {
      EXPECT_EQ(p.fast.screen().fast_path_bytes(), stream.size() - kFrames * box.size());
    }
  }
  // Insert mode too, and a mode that lasts (origin mode) still hands libvterm all of a feed.
  Pair p(40, 24);
  EXPECT_EQ(p.feed("\x1b[4hab\x1b[4l\x1b[3;3Hcd\x1b[1mef"), "");
  EXPECT_EQ(p.fast.screen().fast_path_bytes(), 14u);  // from the CUP on
  EXPECT_EQ(p.feed("\x1b[?6h\x1b[3;3Hcd\x1b[?6l\x1b[1mef"), "");
  EXPECT_EQ(p.fast.screen().fast_path_bytes(), 14u);
}

// A glyph and the zero-width characters after it go into its cell together, as libvterm joins
// them within a write (NFD accents, U+FE0F after an emoji, ZWJ sequences, Devanagari signs), on
// rows that wrap, with autowrap on and off, wherever the pieces end: until 2026-12-07 the fast
// path left every such glyph and the rest of its line to libvterm (~30 ms/MB in process).
TEST(GridFastPath, TakesAGlyphWithTheZeroWidthCharactersAfterIt) {
  const std::string line =
      "e\xcc\x81"
      "cole caf\xc3\xa9 \xe2\x9c\x94\xef\xb8\x8f ok \xe2\x9a\xa0\xef\xb8\x8f "
      "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9 \xe0\xa4\xa8\xe0\xa4\xbc\xe0\xa4\xae "
      "\xe4\xb8\xad\xcc\x81\xcc\x82 a\xcc\x81\xcc\x82\xcc\x83\xcc\x84\xcc\x85";
  for (const char* mode : {"\x1b[?7h", "\x1b[?7l"}) {
    for (int cols : {2, 3, 9, 40}) {
      std::string stream = std::string(mode) + "\x1b[H";
      for (int i = 0; i < 12; ++i) stream += line + (i % 4 ? "\r\n" : "");
      for (std::size_t piece : {std::size_t{1}, std::size_t{7}, stream.size()}) {
        Pair p(cols, 6);
        EXPECT_EQ(feed_in_pieces(p, stream, piece), "")
            << mode << " " << cols << " columns, pieces of " << piece;
        if (piece == stream.size()) {
          EXPECT_EQ(p.fast.screen().fast_path_bytes(), stream.size() - 5)
              << mode << " " << cols << " columns";  // all but the DECAWM
        }
      }
    }
  }
  Pair p(20, 4);
  // Five marks fill the cell's six characters; a sixth goes to libvterm with its glyph, and the
  // mirror keeps it beyond libvterm's six.
  const std::string five = "\xcc\x81\xcc\x82\xcc\x83\xcc\x84\xcc\x85";
  ASSERT_EQ(p.feed("x" + five + "y"), "");
  EXPECT_EQ(p.fast.screen().cell(0, 0).nchars, 6);
  EXPECT_EQ(p.fast.screen().fast_path_bytes(), 12u);
  ASSERT_EQ(p.feed("\r\nx" + five + "\xcc\x86y"), "");
  EXPECT_EQ(p.fast.screen().cell(1, 0).nchars, 7);
  EXPECT_EQ(p.fast.screen().fast_path_bytes(), 14u);
  // Marks split across feeds count on from those the fast path joined: the seventh character
  // is the mirror's again. REP repeats the glyph with its marks.
  ASSERT_EQ(p.feed("\r\nq\xcc\x81\xcc\x82"), "");
  ASSERT_EQ(p.feed("\xcc\x83\xcc\x84\xcc\x85\xcc\x86\x1b[2b"), "");
  EXPECT_EQ(p.fast.screen().cell(2, 0).nchars, 7);
  EXPECT_EQ(p.fast.screen().cell(2, 1).nchars, 6);
  // At the row's end (a pending wrap), then marks in the next feed.
  ASSERT_EQ(p.feed("\x1b[4;20H\xe2\x9c\x94\xef\xb8\x8f"), "");
  EXPECT_TRUE(p.fast.screen().cursor().pending_wrap);
  ASSERT_EQ(p.feed("\xe2\x80\x8d"), "");
  EXPECT_EQ(p.fast.screen().cell(3, 19).nchars, 3);
  ASSERT_EQ(p.feed("|"), "");
  // Marks after ASCII where GL holds the US-ASCII table: libvterm decodes them apart, so the
  // glyph goes to libvterm with them.
  std::size_t before = p.fast.screen().fast_path_bytes();
  ASSERT_EQ(p.feed("\x1b(B\x1b[1;1Hab\xcc\x81"
                   "c"),
            "");
  EXPECT_EQ(p.fast.screen().fast_path_bytes(), before + 6 + 1);  // the CUP and the a
  EXPECT_EQ(p.fast.screen().cell(0, 1).nchars, 2);
  // So does a glyph whose marks U+302A follows.
  Pair q(20, 4);
  ASSERT_EQ(q.feed("aX\xcc\x81\xe3\x80\xaay"), "");
  EXPECT_EQ(q.fast.screen().fast_path_bytes(), 1u);
  // A mark cut by the feed's end joins the glyph when the feed after it completes it.
  ASSERT_EQ(q.feed("\r\nab\xcc\x81\xcc"), "");
  ASSERT_EQ(q.feed("\x82!"), "");
  EXPECT_EQ(q.fast.screen().cell(1, 1).nchars, 3);
}

// Hyperlinks (`ESC ] 8 ; params ; URI`, ended by BEL or ST) change nothing libvterm, the
// tokenizer or the scanner keeps: the fast path takes them. Until 2026-12-07 each one handed
// libvterm the bytes up to the next ESC (`ls --hyperlink`: 36% on the fast path, 17 ms/MB in
// process). A control or a byte from 0x80 inside, an ESC that does not end it, or its end not
// fed yet leaves it to libvterm; a mark after one follows no glyph.
TEST(GridFastPath, TakesHyperlinks) {
  std::string stream;
  for (int i = 0; i < 40; ++i) {
    const std::string name = "file-" + std::to_string(i);
    const bool st = i % 3 == 0;
    stream += "-rw-r--r-- 1 root root 42 Dec  7 \x1b[0m\x1b[01;34m\x1b]8;;file://host/tmp/" + name +
              (st ? "\x1b\\" : "\x07") + name + "\x1b]8;;" + (st ? "\x1b\\" : "\x07") +
              "\x1b[0m\r\n";
  }
  for (int cols : {20, 80}) {
    for (std::size_t piece : {std::size_t{1}, std::size_t{13}, stream.size()}) {
      Pair p(cols, 6);
      ASSERT_EQ(feed_in_pieces(p, stream, piece), "") << cols << " columns, pieces of " << piece;
      if (piece == stream.size()) {
        EXPECT_EQ(p.fast.screen().fast_path_bytes(), stream.size());
      }
    }
  }
  Pair p(20, 4);
  for (const char* step : {"a\x1b]8;;x\ny\x07"
                           "b",
                           "c\x1b]8;;\xc3\xa9\x07"
                           "d",
                           "e\x1b]8;;x\x1b[mf", "g\x1b]8;;\x07\xcc\x81h",
                           "\x1b[4;20Hi\x1b]8;;\x1b\\\xcc\x81j", "k\x1b]8;;cut", "\x07l"}) {
    SCOPED_TRACE(::testing::PrintToString(std::string(step)));
    ASSERT_EQ(p.feed(step), "");
  }
}

// A wide glyph that fills a two-column row leaves the pending wrap in column 0, and CR keeps it
// there (libvterm drops it only when the cursor moves).
TEST(GridFastPath, CarriageReturnKeepsAWrapPendingInColumnZero) {
  Pair p(2, 3);
  EXPECT_EQ(p.feed("\x1b[H\xe4\xb8\xad\rx"), "");
  EXPECT_EQ(p.feed("\x1b[3;1H\xe4\xb8\xad\r\x1b[1m\xe4\xb8\xad\r"), "");
}

}  // namespace
}  // namespace backscroll::testing
