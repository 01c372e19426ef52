// The mirror's look ahead (docs/plain-scroll-skip.md): PlainScrollScan finds where scrolling
// text can no longer be seen, and Mirror::skip_ahead() jumps there.
// - The scan: targets only at line starts whose column is known to be 0 and whose first glyph
//   is printable ASCII that no combining mark can follow; the run ends at any byte that is not
//   plain (cursor motion, modes, other controls, SGR forms it does not reduce); the pen list is
//   the run's SGRs reduced (a reset drops what came before, a repeat moves to the end); titles,
//   marks and input modes (settings) are kept whole for the jump to replay.
// - Exactness: a mirror that jumps ends in the observable state of one that parsed every byte
//   (screen, history, pen, cursor, pending wrap, last glyph, modes; first_difference() and the
//   snapshot bytes, the title and every event the scanner reports, with its cursor), with the
//   jump at every kind of boundary: wide characters, wrapping at the
//   last column, tabs, CR without LF, a bare LF, an SGR cut by a feed, colours erased by LF and
//   EL (background colour erase), and probes after the stream that show the pen and last glyph.
// - No jump where it would not be exact: the cursor outside the scroll region, origin mode. On
//   the alternate screen and in a region below the top row, jumps that leave the history alone;
//   in a region, jumps that leave the rows outside it alone.
// - After a jump, snapshots draw only exact history lines; the mirror thread waits for the lines
//   a snapshot draws, and every snapshot it gives during a flood is a full parse's.
// - The mirror thread jumps through a flood in its ring and answers with the same snapshot; a
//   request while it re-parses the lines after a jump gets the exact snapshot held from before
//   the jump; after a flood (coasting or not) it catches up to a full parse with its whole
//   history.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/mirror_thread.hpp"
#include "engine/term/mirror.hpp"
#include "engine/term/mirror_compare.hpp"
#include "engine/term/plain_scroll_scan.hpp"
#include "engine/term/reference/event_log.hpp"
#include "engine/term/sgr_effect.hpp"
#include "tests/engine/test_ring.hpp"

namespace backscroll::testing {
namespace {

using term::LookAheadOptions;
using term::Mirror;
using term::PlainScrollScan;
using term::ScrollbackLimits;

// --- the scan --------------------------------------------------------------------------------

PlainScrollScan scanned(std::string_view bytes, Cursor start = Cursor{0}) {
  PlainScrollScan scan(0);  // a target at every line
  scan.restart(start);
  scan.scan(bytes);
  return scan;
}

std::string lines(int n, std::string_view prefix = "line ") {
  std::string out;
  for (int i = 0; i < n; ++i) out += std::string(prefix) + std::to_string(i) + "\r\n";
  return out;
}

TEST(PlainScrollScan, FindsTheLatestLineStartWithEnoughLineFeedsAfterIt) {
  const std::string stream = lines(20);
  const PlainScrollScan scan = scanned(stream);
  EXPECT_FALSE(scan.broken());
  EXPECT_EQ(scan.lfs(), 20u);
  const PlainScrollScan::Target* t = scan.best(Cursor{0}, /*keep=*/5, /*rows_before=*/3);
  ASSERT_NE(t, nullptr);
  // Line 15 starts after 15 LFs; 5 LFs follow it.
  EXPECT_EQ(t->lfs, 15u);
  EXPECT_EQ(value(t->line_start), stream.find("line 15"));
  EXPECT_EQ(t->prefix, "l");
  EXPECT_EQ(value(t->end), stream.find("line 15") + 1);
  EXPECT_EQ(scan.best(Cursor{0}, 21, 0), nullptr);  // not enough LFs anywhere
  EXPECT_EQ(scan.best(Cursor{0}, 5, 16), nullptr);  // the cursor may not be at the bottom yet
}

TEST(PlainScrollScan, LineStartsWithoutAKnownColumnOrAGlyphOfTheirOwnAreNoTargets) {
  // A bare LF keeps the column; TAB first, or a mark that joins no glyph of the line's own.
  const PlainScrollScan scan = scanned(
      "a\r\nx\nbare\r\n\tx\r\n\xcc\x81"
      "e\r\nok\r\n");
  std::vector<std::string> starts;
  for (int keep = 0; keep <= 5; ++keep) {
    if (const auto* t = scan.best(Cursor{0}, static_cast<std::uint64_t>(keep), 0))
      starts.push_back(t->prefix);
  }
  // Only "x" (after a\r\n) and "ok" qualify; "bare" follows a bare LF.
  for (const std::string& s : starts) EXPECT_TRUE(s == "x" || s == "o") << s;
  EXPECT_EQ(scan.best(Cursor{0}, 1, 0)->prefix, "o");
  EXPECT_EQ(scan.best(Cursor{0}, 2, 0)->prefix, "x");
}

// A line's first glyph may be a UTF-8 character (tree's box drawing, CJK logs, a test runner's
// check mark), one or two columns wide; not a mark, a C1 control, U+302A or U+3099 (which join
// the glyph before them), nor a malformed or cut sequence.
TEST(PlainScrollScan, ALinesFirstGlyphMayBeAUtf8CharacterOfItsOwn) {
  const std::pair<std::string_view, bool> cases[] = {
      {"\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 src", true},  // ├── src
      {"\xe6\x97\xa5\xe5\xbf\x97: ok", true},              // 日志: ok
      {"\xe2\x9c\x93 passes", true},                       // ✓ passes
      {"\xc3\xa9t\xc3\xa9", true},
      {"\xf0\x9f\x9a\x80 launch", true},
      {"\xcc\x81x", false},            // a combining mark
      {"\xc2\x85x", false},            // NEL, a C1 control
      {"\xe3\x80\xaax", false},        // U+302A
      {"\xe3\x82\x99x", false},        // U+3099
      {"\xe4\xb8x", false},            // cut short
      {"\xc0\xafx", false},            // overlong
      {"\xe2\x94\x9c\xcc\x81", true},  // a mark after it joins it (the target ends after both)
      {"\xe2\x1b[m\x94\x9c", false},   // cut by an SGR (libvterm drops the lead byte)
      {"\xe2\r\x94\x9c", false},       // cut by CR
  };
  for (const auto& [line, target] : cases) {
    const std::string stream = "a\r\n" + std::string(line) + "\r\nz\r\n";
    const PlainScrollScan scan = scanned(stream);
    // Two LFs follow the line: only it can be the target.
    const PlainScrollScan::Target* t = scan.best(Cursor{0}, 2, 0);
    EXPECT_EQ(t != nullptr, target) << ::testing::PrintToString(std::string(line));
    if (t != nullptr) {
      // The prefix is the whole first character (and a mark joining it), and the target ends
      // after it.
      const auto lead = static_cast<unsigned char>(line[0]);
      std::size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
      if (line.substr(length, 2) == "\xcc\x81") length += 2;
      EXPECT_EQ(t->prefix, std::string(line.substr(0, length)));
      EXPECT_EQ(value(t->end), 3 + length);
    }
  }
}

// BS keeps the column known where it was: 0 after a CR (a line whose prefix has BS is a
// target), not 0 after text (the line after a bare LF is not).
TEST(PlainScrollScan, BackspaceKeepsTheColumnKnownOnlyWhereItWas) {
  const PlainScrollScan scan = scanned("a\r\nab\b\nno\r\n\b\byes\r\nN\bN\r\n");
  std::vector<std::string> prefixes;
  for (int keep = 0; keep <= 4; ++keep) {
    if (const auto* t = scan.best(Cursor{0}, static_cast<std::uint64_t>(keep), 0))
      prefixes.push_back(t->prefix);
  }
  EXPECT_EQ(prefixes, (std::vector<std::string>{"N", "N", "\b\by", "a", "a"}));  // "no": none
}

// The glyph may be followed by any character that cannot join it: accented letters, CJK, an
// emoji; not by a C1 control, a malformed or overlong sequence (issue 20: a flood of UTF-8
// text lines had no target at all and was parsed whole). Combining marks that join it are part
// of the target, up to kMaxTargetMarks (2026-12-07: a flood whose every line began with `✔️` or
// `⚠️`, a symbol and its emoji presentation selector, or with a letter and its accent in NFD,
// had no target either); U+302A-U+302F and U+3099-U+309A, which libvterm counts as widening
// the glyph by where its write starts, are not.
TEST(PlainScrollScan, ALineIsATargetWhenWhatFollowsItsGlyphCannotJoinIt) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"r\xc3\xa9sum\xc3\xa9", "r"},
      {"a\xe4\xb8\xad\xe6\x96\x87", "a"},
      {"x\xf0\x9f\x9a\x80 rocket", "x"},
      {"e\xcc\x81t", "e\xcc\x81"},
      {"\xe2\x9c\x94\xef\xb8\x8f passed", "\xe2\x9c\x94\xef\xb8\x8f"},   // ✔️
      {"\xe2\x9a\xa0\xef\xb8\x8f\xc3\xa9", "\xe2\x9a\xa0\xef\xb8\x8f"},  // ⚠️é
      {"x\xe2\x80\x8d zwj", "x\xe2\x80\x8d"},
      {"a\xcc\x81\xcc\x82\xcc\x83\xcc\x84"
       "b",
       "a\xcc\x81\xcc\x82\xcc\x83\xcc\x84"},  // 4 marks
      {"a\xcc\x81\xcc\x82\xcc\x83\xcc\x84\xcc\x85"
       "b",
       ""},                            // 5: more than a target holds
      {"e\xcc\x81\xe3\x80\xaax", ""},  // then U+302A
      {"e\xcc\x81\xc2\x85", ""},       // then a C1 control
      {"e\xcc\x81\xe4\xb8", ""},       // then cut short
      {"x\xc2\x85", ""},
      {"x\xe0\x82\xa0 overlong", ""},
      {"x\xe4\xb8 cut", ""},
      {"x\xed\xa0\x80 surrogate", ""},
      {"e\xcc\x81\r", "e\xcc\x81"},
  };
  for (const auto& [line, prefix] : cases) {
    const std::string stream = "\r\n" + std::string(line) + "\r\n";
    const PlainScrollScan scan = scanned(stream);
    const PlainScrollScan::Target* t = scan.best(Cursor{0}, 1, 0);
    ASSERT_EQ(t != nullptr, !prefix.empty()) << ::testing::PrintToString(std::string(line));
    if (t == nullptr) continue;
    EXPECT_EQ(t->prefix, prefix) << ::testing::PrintToString(std::string(line));
    EXPECT_EQ(value(t->end), 2 + prefix.size());
  }
}

TEST(PlainScrollScan, KeepsTheSgrAndElBytesBeforeTheGlyph) {
  const PlainScrollScan scan = scanned("a\r\n\x1b[1m\x1b[K\r\x1b[32mx\r\nb\r\n");
  const auto* t = scan.best(Cursor{0}, 2, 0);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->prefix, "\x1b[1m\x1b[K\r\x1b[32mx");
}

TEST(PlainScrollScan, ReducesThePenToTheSgrsThatStillMatter) {
  PlainScrollScan scan(0);
  scan.restart(Cursor{0});
  scan.scan("\x1b[1m\x1b[31m\x1b[1mq\r\n\x1b[0;4m\x1b[44mz\r\nw\r\nv\r\n");
  auto pen = [&](std::uint64_t keep) {
    std::string out;
    for (const auto i : scan.best(Cursor{0}, keep, 0)->pen) out += scan.sgr(i);
    return out;
  };
  EXPECT_EQ(pen(3), "\x1b[31m\x1b[1m");    // the repeated bold moved to the end
  EXPECT_EQ(pen(1), "\x1b[0;4m\x1b[44m");  // a reset dropped what came before
}

// A later SGR that sets every part an earlier one set makes it redundant (issue 20: highlighted
// source with a truecolor per token ran out of the 64 distinct SGRs a run could hold, so the
// look ahead never found a target there).
TEST(PlainScrollScan, ALaterSgrThatSetsTheSamePartsDropsTheEarlierOne) {
  PlainScrollScan scan(0);
  scan.restart(Cursor{0});
  scan.scan(
      "\x1b[38;2;1;2;3m\x1b[1m\x1b[38;5;208mq\r\n"  // the truecolor fg goes, bold stays
      "\x1b[44m\x1b[1;4m\x1b[4m\x1b[49mz\r\n"       // 1;4 stays (4 does not set bold)
      "\x1b[2m\x1b[1mw\r\n"                         // faint is not modelled: it stays
      "v\r\n");
  auto pen = [&](std::uint64_t keep) {
    std::string out;
    for (const auto i : scan.best(Cursor{0}, keep, 0)->pen) out += scan.sgr(i);
    return out;
  };
  EXPECT_EQ(pen(3), "\x1b[1m\x1b[38;5;208m");
  EXPECT_EQ(pen(2), "\x1b[38;5;208m\x1b[1;4m\x1b[4m\x1b[49m");  // 49 dropped 44, 1;4 the bold
  EXPECT_EQ(pen(1), "\x1b[38;5;208m\x1b[1;4m\x1b[4m\x1b[49m\x1b[2m\x1b[1m");
}

TEST(PlainScrollScan, ThousandsOfDistinctColoursDoNotEndTheRun) {
  std::string stream;
  for (int i = 0; i < 5000; ++i) {
    stream += "\x1b[38;2;" + std::to_string(i % 256) + ";" + std::to_string(i / 256) + ";7mtoken " +
              std::to_string(i) + "\x1b[48;5;" + std::to_string(i % 256) + "m x\x1b[49m\r\n";
  }
  PlainScrollScan scan;  // a target per 16 KiB, as the mirror keeps them
  scan.restart(Cursor{0});
  scan.scan(stream);
  EXPECT_FALSE(scan.broken());
  EXPECT_EQ(scan.lfs(), 5000u);
  const auto* t = scan.best(Cursor{0}, 1, 0);
  ASSERT_NE(t, nullptr);
  std::string pen;
  for (const auto i : t->pen) pen += scan.sgr(i);
  // The pen at a line start: the line before's truecolor, then 49 (which dropped its 48;5).
  EXPECT_EQ(pen.rfind("\x1b[38;2;", 0), 0u) << ::testing::PrintToString(pen);
  EXPECT_EQ(pen.find("\x1b[38;2;", 1), std::string::npos) << ::testing::PrintToString(pen);
  EXPECT_EQ(pen.substr(pen.size() - 5), "\x1b[49m");
}

TEST(SgrEffect, ModelsOnlyWhatItKnowsExactly) {
  using term::SgrEffect;
  EXPECT_EQ(term::sgr_effect("\x1b[38;2;1;2;3m").parts, SgrEffect::kForeground);
  EXPECT_EQ(term::sgr_effect("\x1b[01;35m").parts, SgrEffect::kBold | SgrEffect::kForeground);
  EXPECT_EQ(term::sgr_effect("\x1b[48;5;9;7m").parts, SgrEffect::kBackground | SgrEffect::kReverse);
  for (const char* unknown :
       {"\x1b[m", "\x1b[0m", "\x1b[1;0m", "\x1b[2m", "\x1b[22m", "\x1b[21m", "\x1b[38;5m",
        "\x1b[38;2;1;2m", "\x1b[38;5;256m", "\x1b[1;;4m", "\x1b[53m", "\x1b[11m", "\x1b[38;3;1m"}) {
    EXPECT_FALSE(term::sgr_effect(unknown).known) << ::testing::PrintToString(std::string(unknown));
  }
  const auto fg = term::sgr_effect("\x1b[31m");
  EXPECT_TRUE(fg.overridden_by(term::sgr_effect("\x1b[38;2;9;9;9;1m")));
  EXPECT_FALSE(term::sgr_effect("\x1b[1;31m").overridden_by(fg));
  EXPECT_FALSE(term::sgr_effect("\x1b[2m").overridden_by(term::sgr_effect("\x1b[2m")));
}

TEST(PlainScrollScan, EndsTheRunAtAnythingNotPlain) {
  for (std::string_view breaker : {"\x1b[H",
                                   "\x1b[2J",
                                   "\x1b[?1000h",
                                   "\x1b[?25;1h",
                                   "\x1b[?h",
                                   "\x1b[?000025l",
                                   "\x1b[?7l",
                                   "\x1b[1:2K",
                                   "\x1b[1:2;3;4;5;6;7;8;9;1;2;3;4;5;6;7;8m",
                                   "\x1b[1;2K",
                                   "\x1b(0",
                                   "\x1b)B",
                                   "\x1b(A",
                                   "\x1b"
                                   "7",
                                   "\x1b]0;a\nb\x07",
                                   "\x1b]2;\xc2\x85\x07",
                                   "\x1b]0;\xe2\x9c\x07",
                                   "\x1b]0;\xff\x07",
                                   "\x1b]0;\x7f\x07",
                                   "\x1b]0;x\x1bq",
                                   "\x1b]00;x\x07",
                                   "\x1b]133\x07",
                                   "\x1b]52;c;YQ==\x07",
                                   "\x07",
                                   "\x0b",
                                   "\x0e",
                                   "\x7f",
                                   "\x1b]8;;\x0a\x07",
                                   "\x1b]8;;x\x1b[m",
                                   "\x1b]8;;\xe2\x80\xa6\x07",
                                   "\x1b[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m",
                                   "\x1b[0000000000000000000000000000000000000000000000000000"
                                   "0000000001m"}) {
    // At a line's start (a candidate target, its prefix collected) and within its text
    // (nothing tracked but the column): the scan reads sequences on different paths there.
    for (const std::string_view before : {"", "text "}) {
      const std::string stream = lines(5) + std::string(before) + std::string(breaker) + lines(5);
      const PlainScrollScan scan = scanned(stream);
      EXPECT_TRUE(scan.broken()) << ::testing::PrintToString(std::string(before) +
                                                             std::string(breaker));
      EXPECT_EQ(value(scan.scanned()), lines(5).size() + before.size());
      EXPECT_EQ(scan.lfs(), 5u);
    }
  }
  // More distinct SGRs than the table holds, each still part of the pen (none sets a part a
  // later one sets again: unmodelled ones stay).
  std::string many;
  for (int i = 0; i <= static_cast<int>(PlainScrollScan::kMaxDistinctSgrs); ++i)
    many += "\x1b[" + std::to_string(i % 2 ? 53 : 21) + ";" + std::to_string(i) + "1mx\r\n";
  EXPECT_TRUE(scanned(many).broken());
}

// Titles, the working directory, shell marks and input modes go on with the run, each kept whole
// with its cursor; a line whose prefix holds one is still a target (its settings are replayed
// before the landing, the prefix without them).
TEST(PlainScrollScan, KeepsTitlesMarksAndInputModesWholeWithoutEndingTheRun) {
  const std::vector<std::string> settings = {"\x1b]0;dev@host: ~/src\x07",
                                             "\x1b]133;A\x07",
                                             "\x1b]2;\xe2\x9c\xb3 Claude Code\x1b\\",
                                             "\x1b[?25l",
                                             "\x1b]133;D;1\x07",
                                             "\x1b[?2004h",
                                             "\x1b]7;file:///tmp\x07",
                                             "\x1b]1;icon\x07",
                                             "\x1b]633;E;ls\x07",
                                             "\x1b[?0025h",
                                             "\x1b[?1l",
                                             "\x1b[?12h",
                                             "\x1b[?66h",
                                             "\x1b[?1004l"};
  std::string stream = lines(3);
  std::vector<std::pair<std::size_t, std::string>> expected;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    if (i % 2 == 0) stream += "text ";  // within a line, or at its start (before its glyph)
    expected.emplace_back(stream.size(), settings[i]);
    stream += settings[i] + "x\r\n";
  }
  stream += lines(3);
  // Whole, and read byte by byte (across pieces): the same.
  for (const std::size_t piece : {stream.size(), std::size_t{1}, std::size_t{7}}) {
    PlainScrollScan scan(0);
    scan.restart(Cursor{0});
    for (std::size_t at = 0; at < stream.size(); at += piece)
      scan.scan(std::string_view(stream).substr(at, piece));
    ASSERT_FALSE(scan.broken()) << piece;
    EXPECT_EQ(value(scan.scanned()), stream.size());
    std::vector<PlainScrollScan::Setting> held;
    scan.for_each_setting(
        Cursor{0}, Cursor{stream.size()},
        [&](const PlainScrollScan::Setting& setting) { held.push_back(setting); });
    ASSERT_EQ(held.size(), expected.size()) << piece;
    for (std::size_t i = 0; i < held.size(); ++i) {
      EXPECT_EQ(value(held[i].at), expected[i].first) << i;
      EXPECT_EQ(held[i].bytes, expected[i].second) << i;
    }
    // A line that starts with a setting is a target all the same.
    const std::size_t line = expected[1].first;
    bool found = false;
    for (std::uint64_t keep = 0; keep <= scan.lfs(); ++keep)
      if (const auto* t = scan.best(Cursor{0}, keep, 0); t && value(t->line_start) == line)
        found = true;
    EXPECT_TRUE(found) << piece;
    // Forgotten with the bytes before them.
    scan.forget_before(Cursor{expected[5].first + 1});
    std::size_t kept = 0;
    scan.for_each_setting(Cursor{0}, Cursor{stream.size()},
                          [&](const PlainScrollScan::Setting&) { ++kept; });
    EXPECT_EQ(kept, expected.size() - 6);
  }
}

// More setting bytes than the scan holds end the run at the one that would pass the bound.
TEST(PlainScrollScan, SettingsBeyondTheirBoundEndTheRun) {
  const std::string title = "\x1b]0;" + std::string(1000, 't') + "\x07";
  std::string stream;
  std::size_t at_bound = 0;
  for (std::size_t held = 0; held + title.size() <= PlainScrollScan::kMaxSettingBytes;
       held += title.size())
    stream += title + "x\r\n";
  at_bound = stream.size();
  stream += title + lines(2);
  const PlainScrollScan scan = scanned(stream);
  EXPECT_TRUE(scan.broken());
  EXPECT_EQ(value(scan.scanned()), at_bound);
}

TEST(PlainScrollScan, KeepsOneTargetPerSpacing) {
  PlainScrollScan scan(1000);
  scan.restart(Cursor{0});
  const std::string stream = lines(400);
  scan.scan(stream);
  Cursor last{0};
  int targets = 0;
  for (std::uint64_t keep = 0; keep < 400; ++keep) {
    const auto* t = scan.best(Cursor{0}, keep, 0);
    if (t == nullptr || t->line_start == last) continue;
    if (targets > 0) {
      EXPECT_GE(last - t->line_start, 1000u);
    }
    last = t->line_start;
    ++targets;
  }
  EXPECT_GT(targets, 3);
  EXPECT_LE(targets, static_cast<int>(stream.size() / 1000) + 1);
}

// --- exactness ---------------------------------------------------------------------------------

constexpr ScrollbackLimits kLimits{40, 1u << 20};
constexpr LookAheadOptions kJumpAnywhere{1, 0};

std::unique_ptr<Mirror> fresh(int cols, int rows, LookAheadOptions look_ahead = {}) {
  return std::make_unique<Mirror>(Cursor{0}, static_cast<std::uint16_t>(cols),
                                  static_cast<std::uint16_t>(rows), kLimits, look_ahead);
}

std::unique_ptr<Mirror> parsed(std::string_view stream, int cols, int rows) {
  auto m = fresh(cols, rows);
  m->feed(stream);
  return m;
}

// "" when `b` (which may have jumped) shows what `a` shows: the screen, the history lines `b`
// holds as exact (all of them once a jump is far enough behind), modes, snapshots.
std::string difference(const Mirror& a, const Mirror& b) {
  if (!b.screen_exact()) return "the screen is not exact yet";
  const std::size_t exact = b.exact_history_lines();
  term::CompareOptions options;
  options.history_lines = exact;
  if (std::string d = term::first_difference(a, b, options); !d.empty()) return d;
  if (a.scanner().modes() != b.scanner().modes()) return "modes differ";
  if (a.scanner().title() != b.scanner().title() ||
      a.scanner().title_changes() != b.scanner().title_changes())
    return "titles differ";
  term::SnapshotOptions drawn;
  drawn.scrollback_lines = exact;
  const auto sa = a.snapshot(drawn), sb = b.snapshot(drawn);
  if (sa.cursor != sb.cursor) return "snapshots tagged differently";
  if (sa.snapshot.bytes != sb.snapshot.bytes) return "snapshot bytes differ";
  return "";
}

// At the end of a stream: the whole history exact again, as long as the other's.
std::string final_difference(const Mirror& a, const Mirror& b) {
  if (b.exact_history_lines() != b.screen().scrollback_lines())
    return "history not exact at the end";
  if (a.screen().scrollback_lines() != b.screen().scrollback_lines())
    return "history length differs";
  return difference(a, b);
}

// Feeds `stream` to a mirror that jumps, in the given pieces, the way the mirror thread does:
// before each piece the look ahead gets everything after the bytes fed, then the mirror may
// jump; the piece is fed from position() on. After each jump, whole lines are fed until the
// screen is exact, and the mirror is compared with one that parsed every byte up to there (the
// landing line, the pen and the last glyph the jump rebuilt are on the screen then); at the
// end, again. "" when they never differ; `skipped`: bytes jumped over.
std::string jump_difference(std::string_view stream, const std::vector<std::size_t>& pieces,
                            int cols, int rows, std::uint64_t* skipped = nullptr,
                            LookAheadOptions look_ahead = kJumpAnywhere) {
  const auto a = fresh(cols, rows);
  const auto b = fresh(cols, rows, look_ahead);
  EventLog a_events;
  EventLog b_events;
  a->set_events(&a_events);
  b->set_events(&b_events);
  auto catch_up = [&] {
    a->feed(stream.substr(value(a->position()), b->position() - a->position()));
  };
  auto events_differ = [&] { return a_events.text != b_events.text; };
  auto line_end = [&](std::size_t at) {
    return std::min(stream.find('\n', at), stream.size() - 1) + 1;
  };
  std::size_t piece = 0;
  while (value(b->position()) < stream.size()) {
    if (auto from = b->look_ahead_from()) b->look_ahead(stream.substr(value(*from)));
    const std::size_t jumped_to = value(b->position());
    if (b->skip_ahead()) {
      do {
        const std::size_t at = value(b->position());
        b->feed(stream.substr(at, line_end(at) - at));
      } while (!b->screen_exact() && value(b->position()) < stream.size());
      catch_up();
      if (std::string d = difference(*a, *b); !d.empty())
        return d + " (after the jump from " + std::to_string(jumped_to) + ")";
      if (events_differ())
        return "events differ (after the jump from " + std::to_string(jumped_to) + ")";
      continue;
    }
    const std::size_t len =
        pieces.empty() ? 4096 : std::max<std::size_t>(1, pieces[piece++ % pieces.size()]);
    b->feed(stream.substr(value(b->position()), len));
  }
  if (skipped) *skipped = b->skipped_bytes();
  catch_up();
  if (events_differ())
    return "events differ at the end:\n" + a_events.text + "against\n" + b_events.text;
  return final_difference(*a, *b);
}

// Probes after a stream: text in the current pen, REP of the last glyph, a combining mark at
// the cursor, an erase in the current pen.
const std::string kProbes = "P\x1b[3b\xcc\x81\x1b[K\r\nQ\x1b[2b";

struct Case {
  const char* name;
  std::string body;  // repeated until the stream is long enough to jump
  int cols = 20;
  int rows = 5;
};

// Lines of highlighted code: a truecolor per token, a 256-colour comment, no resets between.
std::string bench_like_highlighting() {
  std::string out;
  for (int i = 0; i < 300; ++i) {
    out += "\x1b[38;2;" + std::to_string(i * 37 % 256) + ";" + std::to_string(i * 91 % 256) +
           ";9mfn\x1b[38;2;166;226;46m value_" + std::to_string(i) + "\x1b[38;5;" +
           std::to_string(i % 216 + 16) + "m // c\x1b[39m\r\n";
  }
  return out;
}

std::vector<Case> boundary_cases() {
  std::vector<Case> cases;
  cases.push_back({"plain lines", lines(1, "log line ")});
  cases.push_back(
      {"wide characters", "w \xe4\xb8\xad\xe6\x96\x87 \xe4\xb8\xad\xe6\x96\x87\xe4\xb8\xad\r\n"});
  cases.push_back(
      {"wide character cut by the last column", "abcdefghijklmnopqrs\xe4\xb8\xad!\r\n"});
  cases.push_back({"exactly the width (pending wrap)", "abcdefghijklmnopqrst\r\n"});
  cases.push_back({"wrapping lines", "abcdefghijklmnopqrstuvwxyz0123456789abcdefghij\r\n"});
  cases.push_back({"tabs", "t\tab\tx\r\n\tlead\r\n"});
  cases.push_back({"CR without LF", "overwritten line\rX\r\n"});
  cases.push_back({"bare LF", "a\nb\nc\r\n"});
  cases.push_back({"SGR prefixes and resets", "\x1b[1m[1%]\x1b[0m \x1b[32mBuilding\x1b[0m x\r\n"});
  cases.push_back({"SGR without resets", "\x1b[31mred\x1b[39m \x1b[4mu\x1b[24m\r\n\x1b[1mb\r\n"});
  cases.push_back(
      {"background colour erase", "\x1b[44m\r\nblue\x1b[K\r\n\x1b[0mplain\r\n\x1b[41m"});
  cases.push_back({"EL before the glyph", "\x1b[2K\x1b[45mz\x1b[K\r\n\x1b[m"});
  cases.push_back({"empty lines", "x\r\n\r\n\r\n"});
  cases.push_back({"combining marks", "x e\xcc\x81t\xcc\x83 a\r\n"});
  cases.push_back({"UTF-8 first", "\xc3\xa9t\xc3\xa9\r\nok\r\n"});
  // Every line starts with a UTF-8 glyph: tree's box drawing, a CJK log, check marks, an emoji,
  // a wide glyph alone on its line.
  cases.push_back({"UTF-8 first glyphs only",
                   "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 src\r\n\xe2\x94\x82   "
                   "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 main.c\r\n\xe6\x97\xa5\xe5\xbf\x97: "
                   "\xe5\xae\x8c\xe6\x88\x90\r\n\xe2\x9c\x93 ok\r\n\xf0\x9f\x9a\x80\r\n"
                   "\xe4\xb8\xad\r\n\x1b[32m\xe2\x9c\x93\x1b[m \xc3\xa9\r\n"});
  // Every line starts with a glyph and the marks that join it (2026-12-07): emoji with their
  // presentation selector, NFD letters, a ZWJ, four marks, a mark after an SGR that joins the
  // target's glyph across it.
  cases.push_back({"marked first glyphs only",
                   "\xe2\x9c\x94\xef\xb8\x8f passed\r\n\xe2\x9a\xa0\xef\xb8\x8f \xc3\xa9\r\n"
                   "e\xcc\x81"
                   "cole\r\nx\xe2\x80\x8d\xf0\x9f\x9a\x80\r\n"
                   "a\xcc\x81\xcc\x82\xcc\x83\xcc\x84"
                   "b\r\n"
                   "\x1b[1me\xcc\x81\x1b[31m\xcc\x82x\x1b[m\r\n"});
  cases.push_back({"truecolor highlighting", bench_like_highlighting()});
  // Settings (2026-12-07): a shell with integration (a title and marks per prompt, the prompt's
  // line starting with one), a progress line drawn with the cursor hidden, an agent's UTF-8
  // title ended by ST, input modes set and reset.
  cases.push_back(
      {"shell prompts with titles and marks",
       "\x1b]0;dev@host: ~/src\x07\x1b]133;A\x07\x1b[32mdev\x1b[m$ \x1b]133;B\x07make\r\n"
       "\x1b]133;C\x07"
       "cc -c a.c\r\ncc -c b.c\r\n\x1b]133;D;0\x07"});
  cases.push_back({"progress with the cursor hidden",
                   "\x1b[?25l\rtesting [25%]\rtesting [50%]\r\n\x1b[?25hdone\r\n"});
  cases.push_back({"UTF-8 titles and input modes",
                   "\x1b]2;\xe2\x9c\xb3 Fix the build\x1b\\\x1b[?2004h$ ls\r\n\x1b[?2004l\x1b[?1h"
                   "out\r\n\x1b[?1l\x1b]7;file:///tmp\x07\x1b[?12h\x1b[?1004h\x1b[?66h\x1b[?66l"
                   "x\r\n"});
  cases.push_back({"SGRs overriding each other",
                   "\x1b[1;31mx\x1b[38;2;1;2;3m y\x1b[7m\x1b[27m\x1b[48;5;3mz\x1b[1m\r\n"
                   "\x1b[4mu\x1b[24m\x1b[39;49m\r\n\x1b[2m\x1b[1mf\x1b[22m\r\n"});
  cases.push_back({"UTF-8 after the first glyph", "r\xc3\xa9sum\xc3\xa9 \xe6\x97\xa5 done\r\n"});
  cases.push_back({"CJK after the first glyph", "a\xe4\xb8\xad\xe6\x96\x87 x\r\n"});
  cases.push_back({"marks after the first glyphs",
                   "e\xcc\x81 acute\r\nn\xcc\x83\xcc\x83 two\r\nr\xc3\xa9gime\r\n"});
  cases.push_back({"a cursor move now and then", "x\r\n\x1b[A\x1b[Bup\r\n" + lines(30)});
  // tput sgr0 (ncurses' `ESC ( B ESC [ m`) after coloured words, at a line's start too; the
  // first designation replaces libvterm's UTF-8 decoder in G0, which the jump must do as well.
  cases.push_back(
      {"sgr0 designating G0",
       "\x1b[32mok\x1b(B\x1b[m r\xc3\xa9sum\xc3\xa9\r\n\x1b(B\x1b[mx \x1b[1mb\x1b(B\x1b[m\r\n"});
  // man for a terminal without SGR: bold as `N BS N`, underlines as `_ BS x`, a BS at a
  // line's start and after a wide glyph.
  cases.push_back({"overstrike (man pages)",
                   "N\bNA\bAM\bME\bE\r\n     l\bls\bs [_\bO_\bP]\r\n\bx\b\by\r\n"
                   "\x1b[1m\bz\xe4\xb8\xad\b\b_\r\n\x1b[mab\b\nq\r\n"});
  // Sub-parameters (curly underlines, colours in the ITU form): the mirror rewrites them.
  cases.push_back({"colon SGR forms",
                   "\x1b[4:3;38:2::200:10:10mtypo\x1b[4:0;39m fine \x1b[38:5:33mblue\x1b[m\r\n"
                   "\x1b[48:2:1:2:3mbg\x1b[49m\r\n"});
  // gcc 12 on a terminal links each warning's option to its manual with OSC 8 (BEL ends it);
  // `ls --hyperlink` starts each line with one (ST ends it); both draw nothing.
  cases.push_back(
      {"hyperlinks (OSC 8)",
       "\x1b[01m\x1b[Kw.c:1:16:\x1b[m\x1b[K \x1b[01;35m\x1b[Kwarning: \x1b[m\x1b[Kunused "
       "[\x1b[01;35m\x1b[K\x1b]8;;https://gcc.gnu.org/onlinedocs/gcc/"
       "Warning-Options.html#index-Wunused-variable\x07-Wunused-variable\x1b]8;;\x07\x1b[m\x1b[K]"
       "\r\n    1 | int x;\r\n\x1b]8;id=7;file://host/tmp/a.txt\x1b\\a.txt\x1b]8;;\x1b\\\r\n"});
  cases.push_back({"wide screen", lines(1, "log line "), 200, 50});
  cases.push_back({"two rows", lines(1, "r "), 10, 2});
  return cases;
}

std::string repeated(const std::string& body, std::size_t at_least) {
  std::string out;
  while (out.size() < at_least) out += body;
  return out;
}

// `stream`, made of case `c`'s body (`where`: the setup before it), fed in each of `feeds`: every
// jump exact, and at least one (but where the case's cursor moves keep its runs short).
void expect_exact_jumps(const Case& c, const std::string& stream,
                        const std::vector<std::vector<std::size_t>>& feeds,
                        std::string_view where = "") {
  for (const std::vector<std::size_t>& pieces : feeds) {
    std::uint64_t skipped = 0;
    EXPECT_EQ(jump_difference(stream, pieces, c.cols, c.rows, &skipped), "")
        << c.name << where << ", pieces of " << (pieces.empty() ? 4096 : pieces[0]);
    if (std::string_view(c.name) != "a cursor move now and then") {
      EXPECT_GT(skipped, 0u) << c.name << where << ": the test must jump";
    }
  }
}

TEST(PlainScrollSkip, JumpsAreExactAtEveryKindOfBoundary) {
  for (const Case& c : boundary_cases()) {
    expect_exact_jumps(c, repeated(c.body, 60'000) + kProbes,
                       {{}, {1}, {3, 7, 1}, {101, 13}, {2048}});
  }
}

// A run that starts with DEC graphics in G0 and designates US-ASCII again: the jump leaves G0
// as the stream does (the mirror's tokenizer, libvterm and the scanner), so what comes after
// the landing is drawn by the same table.
TEST(PlainScrollSkip, AJumpOverSgr0LeavesG0AsTheStreamDoes) {
  // The designation only among the bytes jumped over: the lines after the landing show G0.
  for (const char* designation : {"\x1b(B", "\x1b(B\x1b[m", ""}) {
    const std::string line = "\x1b[32mok\x1b[m lqqk\r\n";
    const std::string stream = "\x1b(0lqqk\r\n" + repeated(line, 10'000) + designation +
                               repeated(line, 60'000) + "lqqk" + kProbes;
    std::uint64_t skipped = 0;
    EXPECT_EQ(jump_difference(stream, {}, 20, 5, &skipped), "")
        << ::testing::PrintToString(std::string(designation));
    EXPECT_GT(skipped, 0u);
  }
}

TEST(PlainScrollSkip, EveryJumpTargetGivesTheSameState) {
  // One jump, from each point of the stream in turn, to the latest target.
  const std::string body =
      "\x1b[1m["
      "x"
      "]\x1b[0m \x1b[33mw\xe4\xb8\xad\x1b[m\tend\r\n";
  const std::string stream = repeated(body, 6000) + kProbes;
  int jumps = 0;
  for (std::size_t cut = 0; cut < 3000; cut += 37) {
    auto b = fresh(20, 5, kJumpAnywhere);
    b->feed(std::string_view(stream).substr(0, cut));
    if (auto from = b->look_ahead_from())
      b->look_ahead(std::string_view(stream).substr(value(*from)));
    if (!b->skip_ahead()) continue;
    ++jumps;
    while (!b->screen_exact()) {
      const std::size_t at = value(b->position());
      b->feed(std::string_view(stream).substr(at, stream.find('\n', at) + 1 - at));
    }
    EXPECT_EQ(difference(*parsed(stream.substr(0, value(b->position())), 20, 5), *b), "")
        << "cut " << cut;
    b->feed(std::string_view(stream).substr(value(b->position())));
    EXPECT_EQ(final_difference(*parsed(stream, 20, 5), *b), "") << "cut " << cut;
  }
  EXPECT_GT(jumps, 50);
}

TEST(PlainScrollSkip, ThePenAtTheTargetIsRebuilt) {
  // The jump starts with one pen (bold, red background) and lands where another is in effect.
  const std::string stream = "\x1b[1;41mx\r\n\x1b[0;32;44m" + lines(200) + kProbes;
  EXPECT_EQ(jump_difference(stream, {12}, 20, 5), "");
}

// After `before`, a jump into 400 lines on a 20x5 screen, then the lines fed one at a time:
// the screen is exact once the `above` rows above the landing line left the top of the
// region (4 on the whole screen), and the history lines held exact after each are
// `exact_history(lines fed, lines held before the jump)`. Returns how many lines were fed
// after the landing.
std::size_t check_landing_window(
    const std::string& before,
    const std::function<std::size_t(std::size_t, std::size_t)>& exact_history,
    std::size_t above = 4) {
  const std::string stream = before + lines(400);
  auto b = fresh(20, 5, kJumpAnywhere);
  b->feed(before);
  const std::size_t held = b->screen().scrollback_lines();
  EXPECT_TRUE(b->look_ahead_from());
  b->look_ahead(std::string_view(stream).substr(before.size()));
  EXPECT_TRUE(b->skip_ahead());
  EXPECT_FALSE(b->screen_exact());
  EXPECT_EQ(b->snapshot().snapshot.fallback_reason, "catching_up");
  std::size_t lfs = 0;
  while (value(b->position()) < stream.size()) {
    const std::size_t at = value(b->position());
    b->feed(std::string_view(stream).substr(at, stream.find('\n', at) + 1 - at));
    ++lfs;
    EXPECT_EQ(b->screen_exact(), lfs >= above) << lfs;
    EXPECT_EQ(b->exact_history_lines(), exact_history(lfs, held)) << lfs;
    if (b->screen_exact()) {
      EXPECT_EQ(b->snapshot().snapshot.scrollback_lines, b->exact_history_lines());
      EXPECT_EQ(difference(*parsed(stream.substr(0, value(b->position())), 20, 5), *b), "") << lfs;
    }
  }
  EXPECT_EQ(final_difference(*parsed(stream, 20, 5), *b), "");
  return lfs;
}

TEST(PlainScrollSkip, TheHistoryIsExactAgainLineByLine) {
  // Rows above the landing line: 4; then one exact history line per line fed. The landing has
  // the history's bound and the screen's rows + 1 LFs after it.
  const std::size_t fed = check_landing_window("", [](std::size_t lfs, std::size_t) {
    return std::min<std::size_t>(lfs < 4 ? 0 : lfs - 4, kLimits.max_lines);
  });
  EXPECT_EQ(fed, kLimits.max_lines + 6);
}

// The alternate screen (each way in): the same boundary cases, after lines on the main screen
// that the history holds, and back to the main screen after the flood. Every jump is exact, and
// the history held from before is exact all along (the alternate screen pushes nothing).
TEST(PlainScrollSkip, JumpsOnTheAlternateScreenAreExactAndLeaveTheHistoryAlone) {
  for (std::string_view enter : {"\x1b[?1049h", "\x1b[?1047h", "\x1b[?47h"}) {
    for (const Case& c : boundary_cases()) {
      const std::string stream = lines(60, "main ") + std::string(enter) +
                                 repeated(c.body, 30'000) + kProbes + "\x1b[?1049l\x1b[?47l" +
                                 lines(3, "after ") + kProbes;
      expect_exact_jumps(c, stream, {{}, {3, 7, 1}},
                         ", entered with " + ::testing::PrintToString(std::string(enter)));
    }
  }
}

// After a jump on the alternate screen the rows above the landing line are not the stream's
// until rows - 1 of them scrolled off the top; the history is exact throughout, and the landing
// needs only rows + 1 LFs after it, not the history's bound as well.
TEST(PlainScrollSkip, OnTheAlternateScreenTheScreenIsExactAfterRowsMinusOneLines) {
  const std::size_t fed =
      check_landing_window(lines(30, "main ") + "\x1b[?1049h", [](std::size_t, std::size_t held) {
        EXPECT_GT(held, 0u);
        return held;
      });
  EXPECT_EQ(fed, 6u);
}

// A scroll region from the top row with a footer below it (a status line, a progress bar), on
// either screen, the cursor inside it: lines scroll out of the region (into the history on the
// main screen) and the footer is never written. Every jump is exact.
TEST(PlainScrollSkip, JumpsInARegionFromTheTopRowLeaveTheFooterAlone) {
  for (std::string_view screen : {"", "\x1b[?1049h"}) {
    for (const Case& c : boundary_cases()) {
      if (c.rows < 3) continue;
      // The footer on the last row, then the region above it (DECSTBM homes the cursor).
      const std::string setup = lines(40, "main ") + std::string(screen) + "\x1b[" +
                                std::to_string(c.rows) + ";1H\x1b[7mfooter\x1b[m\x1b[1;" +
                                std::to_string(c.rows - 1) + "r";
      expect_exact_jumps(c, setup + repeated(c.body, 30'000) + kProbes, {{3, 7, 1}},
                         screen.empty() ? "" : ", on the alternate screen");
    }
  }
}

// The cursor below such a region: an LF on the last row scrolls nothing, and nothing scrolls
// out of sight however many come. No jump.
TEST(PlainScrollSkip, NoJumpWithTheCursorBelowTheRegion) {
  const std::string stream = "\x1b[1;3r\x1b[5;1H" + repeated(lines(1, "below "), 20'000) + kProbes;
  std::uint64_t skipped = 1;
  EXPECT_EQ(jump_difference(stream, {}, 20, 5, &skipped), "");
  EXPECT_EQ(skipped, 0u);
}

// A scroll region below the top row (a title bar above a scrolling pane; a footer below it
// too), on either screen, the cursor inside it: what leaves the region's top is dropped, not
// pushed into the history, so jumps there leave the history alone, as on the alternate
// screen, and the rows outside the region are never written. Every jump is exact.
TEST(PlainScrollSkip, JumpsInARegionBelowTheTopRowLeaveTheTitleAndTheHistoryAlone) {
  for (std::string_view screen : {"", "\x1b[?1049h"}) {
    for (const bool footer : {false, true}) {
      for (const Case& c : boundary_cases()) {
        const int bottom = footer ? c.rows - 1 : c.rows;
        if (bottom - 1 < 2) continue;  // a region of one row never jumps
        std::string setup =
            lines(40, "main ") + std::string(screen) + "\x1b[1;1H\x1b[7mtitle\x1b[m";
        if (footer) setup += "\x1b[" + std::to_string(c.rows) + ";1H\x1b[7mfooter\x1b[m";
        // DECSTBM homes the cursor, above the region: the CUP puts it inside.
        setup += "\x1b[2;" + std::to_string(bottom) + "r\x1b[2;1H";
        expect_exact_jumps(c, setup + repeated(c.body, 30'000) + kProbes, {{3, 7, 1}},
                           std::string(screen.empty() ? "" : ", on the alternate screen") +
                               (footer ? ", with a footer" : ""));
      }
    }
  }
}

// In a region below the top row the rows above the landing line are not the stream's until
// height - 1 of them left the region's top; the history is exact throughout, and the landing
// needs only height + 1 LFs after it.
TEST(PlainScrollSkip, InARegionBelowTheTopRowTheScreenIsExactAfterHeightMinusOneLines) {
  const std::size_t fed = check_landing_window(
      lines(30, "main ") + "\x1b[1;1Htitle\x1b[2;5r\x1b[5;1H",
      [](std::size_t, std::size_t held) {
        EXPECT_GT(held, 0u);
        return held;
      },
      3);
  EXPECT_EQ(fed, 5u);
}

// DECSTBM leaves the cursor on the top row, above a region that starts below it: the first
// line is written there and stays, and the LFs move the cursor into the region before
// anything scrolls. No jump from there (it would leave the top row blank); once the cursor
// is inside, jumps are exact.
TEST(PlainScrollSkip, NoJumpWithTheCursorAboveTheRegion) {
  const std::string setup = "\x1b[2;4r";
  const std::string stream = setup + repeated(lines(1, "text "), 20'000) + kProbes;
  std::uint64_t skipped = 0;
  EXPECT_EQ(jump_difference(stream, {setup.size(), 4096}, 20, 5, &skipped), "");
  EXPECT_GT(skipped, 0u);
}

// A mirror that stops feeding during a flood (coasting) relies on a later jump to pass what
// it did not feed: where no jump can land, it must not coast, or it falls behind for good
// (the ring laps it and the consumer gate pauses the PTY until the flood stops).
TEST(PlainScrollSkip, NeverCoastsWhereNoJumpCanLand) {
  struct Setup {
    std::string bytes;
    int cols = 20;
    int rows = 5;
    bool coasts;
  };
  const Setup setups[] = {
      {"", 20, 5, true},
      {"\x1b[?1049h", 20, 5, true},
      {"\x1b[1;4r\x1b[2;1H", 20, 5, true},
      {"\x1b[2;5r\x1b[3;1H", 20, 5, true},
      {"\x1b[?6h", 20, 5, false},
      {"\x1b[?69h", 20, 5, false},
      {"\x1b[1;3r\x1b[5;1H", 20, 5, false},  // below the region
      {"\x1b[3;5r\x1b[1;1H", 20, 5, false},  // above it
      {"", 2, 5, false},
      {"", 20, 1, false},
  };
  for (const Setup& setup : setups) {
    auto b = fresh(setup.cols, setup.rows, kJumpAnywhere);
    b->feed(setup.bytes);
    const auto from = b->look_ahead_from();
    ASSERT_TRUE(from) << ::testing::PrintToString(setup.bytes);
    b->look_ahead(lines(80));
    EXPECT_EQ(b->may_coast(0), setup.coasts)
        << ::testing::PrintToString(setup.bytes) << " on " << setup.cols << "x" << setup.rows;
    EXPECT_EQ(b->may_coast(0), b->can_skip()) << ::testing::PrintToString(setup.bytes);
  }
  // Above a region the LFs walk the cursor into it: from there it may coast.
  auto b = fresh(20, 5, kJumpAnywhere);
  b->feed("\x1b[3;5r" + lines(2));
  ASSERT_TRUE(b->look_ahead_from());
  b->look_ahead(lines(80));
  EXPECT_TRUE(b->may_coast(0));
  // A resize while the mirror holds part of a character: libvterm stands before the resize
  // until the character is parsed, so no jump starts there and the mirror must not coast
  // (it did, found in review: the mirror thread could then stop feeding for good).
  auto held = fresh(20, 5, kJumpAnywhere);
  held->feed("x\xe4\xb8");
  held->resize(30, 5);
  ASSERT_TRUE(held->look_ahead_from());
  held->look_ahead(std::string("\xad") + lines(80));
  EXPECT_FALSE(held->can_skip());
  EXPECT_FALSE(held->may_coast(0));
}

TEST(PlainScrollSkip, NoJumpInOriginMode) {
  for (std::string_view setup : {"\x1b[?6h", "\x1b[2;4r\x1b[?6h", "\x1b[?69h"}) {
    const std::string stream = std::string(setup) + repeated(lines(1, "text "), 20'000);
    std::uint64_t skipped = 1;
    EXPECT_EQ(jump_difference(stream, {}, 20, 5, &skipped), "");
    EXPECT_EQ(skipped, 0u) << ::testing::PrintToString(std::string(setup));
  }
}

// A glyph as wide as the row (one column on one, a wide one on two) leaves a pending wrap with
// the cursor in column 0, which CR keeps (the cursor does not move) and so does an LF on the
// bottom row (it scrolls instead): "column 0 after a CR" then does not mean "no wrap pending",
// and the next line's erase and glyph land otherwise than a jump would put them (found by
// AnyPlainishStreamJumpsExactly, 2026-12-05). Such screens never jump.
TEST(PlainScrollSkip, NoJumpOnScreensNarrowerThanThreeColumns) {
  const std::string body = "\xe4\xb8\xad\r\n\x1b[1;31m\x1b[2K\x1b[0mx\r\n";
  const std::string stream = repeated(body, 40'000) + kProbes;
  for (int cols : {1, 2, 3}) {
    std::uint64_t skipped = 0;
    EXPECT_EQ(jump_difference(stream, {}, cols, 4, &skipped), "") << cols << " columns";
    EXPECT_EQ(skipped > 0, cols >= 3) << cols << " columns";
  }
}

TEST(PlainScrollSkip, NoJumpOnOneRow) {
  // libvterm keeps no history on one row: what a jump leaves in it would never be pushed out.
  auto b = fresh(20, 5, kJumpAnywhere);
  b->feed(lines(10));  // history lines before the resize to one row
  b->resize(20, 1);
  if (auto from = b->look_ahead_from()) b->look_ahead(repeated(lines(1, "r "), 20'000));
  EXPECT_FALSE(b->skip_ahead());
}

TEST(PlainScrollSkip, WaitsForEnoughLinesAfterTheTarget) {
  // Fewer lines than the history keeps plus the screen: nothing may be skipped.
  const std::string stream = lines(static_cast<int>(kLimits.max_lines) + 5);
  std::uint64_t skipped = 1;
  EXPECT_EQ(jump_difference(stream, {}, 20, 5, &skipped), "");
  EXPECT_EQ(skipped, 0u);
}

TEST(PlainScrollSkip, LandsOnlyWhereTheCursorIsOnTheBottomRow) {
  // From a fresh screen the cursor walks down for rows - 1 LFs before anything scrolls: a
  // target among the first lines is no landing (the jump puts the cursor on the bottom row).
  for (int extra = 0; extra < 8; ++extra) {
    const std::string stream = lines(static_cast<int>(kLimits.max_lines) + 6 + extra) + kProbes;
    std::uint64_t skipped = 0;
    EXPECT_EQ(jump_difference(stream, {}, 20, 5, &skipped), "") << extra;
    EXPECT_EQ(skipped > 0, extra >= 5) << extra;  // line 5 is the first landing
  }
}

// Streams of plain pieces with now and then something that is not plain.
rc::Gen<std::string> plain_piece() {
  return rc::gen::weightedOneOf<std::string>(
      {{40, rc::gen::element<std::string>(
                "word ", "x", "\r\n", "\r\n", "\r\n", "\n", "\r", "\t", "\xe4\xb8\xad", "e\xcc\x81",
                "\xc3\xa9", "\x1b[1m", "\x1b[0m", "\x1b[m", "\x1b[31m", "\x1b[44m",
                "\x1b[38;5;200m", "\x1b[48;2;1;2;3m", "\x1b[K", "\x1b[1K", "\x1b[2K",
                "abcdefghijklmnopqrstuvwxy", "\x1b(B\x1b[m",
                // UTF-8 cut by what comes between its pieces.
                "\xe2", "\x94\x9c",
                // Overstrike, as man prints bold and underlines.
                "\b", "N\bN", "_\bx", "\r\b", "\xe4\xb8\xad\b\b",
                // Colon forms: the mirror rewrites them for libvterm.
                "\x1b[4:3m", "\x1b[38:5:200m", "\x1b[38:2::9:8:7m", "\x1b[48:2:1:2:3m",
                "\x1b[58:5:1m", "\x1b[1;4:0m",
                // Lines that start with a glyph and its marks.
                "\r\n\xe2\x9c\x94\xef\xb8\x8f ok", "\r\ne\xcc\x81\xcc\x82t",
                "\r\n\xe4\xb8\xad\xcc\x81", "\r\nx\xe2\x80\x8d\xf0\x9f\x9a\x80",
                "\r\na\xcc\x81\xcc\x82\xcc\x83\xcc\x84\xcc\x85", "\xcc\x81", "\xef\xb8\x8f",
                "\xe3\x80\xaa")},
       {1, rc::gen::element<std::string>(
               "\x1b[A", "\x1b[5;3H", "\x1b[?7l", "\x1b[?7h",
               "\x1b"
               "7",
               "\x1b"
               "8",
               "\x1b[2b", "\x1b[?1049h",
               "\x1b[?1049l", "\x1b[2;4r", "\x1b[r", "\x1b[1;3r", "\x1b[;2r", "\x1b[9;1H",
               "\x1b[2;6r\x1b[4H", "\x1b[3;r\x1b[5H", "\x1b(0", "\x1b)0\x0e", "\x0f",
               // Not hyperlinks or settings a run may hold: another
               // OSC, a control or a byte from 0x80 inside, ESC
               // without the backslash of ST, one too long; a mode
               // that is no setting, a title with a control or C1.
               "\x1b[?1000h", "\x1b[?25;12l", "\x1b]0;a\rb\x07", "\x1b]2;\xc2\x9c\x07",
               "\x1b]88;x\x07", "\x1b]8:x\x07", "\x1b]8;;a\nb\x07", "\x1b]8;;\xc3\xa9\x07",
               "\x1b]8;;x\x1bq", "\x1b]8;;\x18", "\x1b]8;;" + std::string(2100, 'u') + "\x07")},
       // Settings: titles (UTF-8 too), marks, the directory, input and cursor modes, before a
       // line's glyph or within the line, ended by BEL or ST.
       {4, rc::gen::element<std::string>(
               "\x1b]0;dev@host: ~/src\x07", "\x1b]2;\xe2\x9c\xb3 task \xc3\xa9\x1b\\",
               "\x1b]1;icon\x07", "\x1b]7;file:///tmp\x07", "\x1b]133;A\x07", "\x1b]133;B\x07",
               "\x1b]133;C\x07", "\x1b]133;D;2\x07", "\x1b]633;D\x1b\\", "\x1b]0;\x07", "\x1b[?25l",
               "\x1b[?25h", "\x1b[?2004h", "\x1b[?2004l", "\x1b[?1h", "\x1b[?1l", "\x1b[?12h",
               "\x1b[?12l", "\x1b[?66h", "\x1b[?1004h", "\x1b[?025l")},
       // Hyperlinks: before a line's glyph or within the line, ended by BEL or ST.
       {4, rc::gen::element<std::string>("\x1b]8;;https://gcc.gnu.org/x#W\x07", "\x1b]8;;\x07",
                                         "\x1b]8;id=3;file:///tmp/a\x1b\\", "\x1b]8;;\x1b\\",
                                         "\x1b]8;;" + std::string(2030, 'u') + "\x07")},
       // Many distinct colours: the SGR table fills, drops what no pen uses, or ends the run
       // (38;5 past 255 is an SGR whose effect is not modelled, so it is never dropped).
       {10, rc::gen::map(rc::gen::inRange(0, 600), [](int i) {
          return (i % 2 ? "\x1b[38;5;" : "\x1b[1;38;2;9;") + std::to_string(i) + "m";
        })}});
}

RC_GTEST_PROP(PlainScrollSkip, AnyPlainishStreamJumpsExactly, ()) {
  const auto pieces =
      *rc::gen::container<std::vector<std::string>>(*rc::gen::inRange(50, 400), plain_piece());
  std::string body;
  for (const std::string& p : pieces) body += p;
  const int copies = *rc::gen::inRange(1, 8);
  // On the main screen, or on the alternate one after lines the history holds.
  const std::string enter =
      *rc::gen::element<std::string>("", "\x1b[?1049h", "\x1b[?1047h", "\x1b[?47h");
  std::string stream = enter.empty() ? "" : lines(*rc::gen::inRange(0, 50), "main ") + enter;
  for (int i = 0; i < copies; ++i) stream += body + lines(60);
  stream += kProbes;
  const auto cols = *rc::gen::inRange(2, 30);
  const auto rows = *rc::gen::inRange(1, 8);
  const auto feed =
      *rc::gen::container<std::vector<std::size_t>>(3, rc::gen::inRange<std::size_t>(1, 3000));
  // Targets at every line, or far apart (the pen is then rebuilt from SGRs queued over many
  // lines).
  const LookAheadOptions look_ahead{1, *rc::gen::element<std::uint64_t>(0, 0, 300, 2000)};
  std::uint64_t skipped = 0;
  RC_ASSERT(jump_difference(stream, feed, cols, rows, &skipped, look_ahead) == "");
  RC_CLASSIFY(skipped > 0, enter.empty() ? "jumped" : "jumped, entered the alternate screen");
  RC_CLASSIFY(skipped > 0 && (body.find("\x1b]") != std::string::npos ||
                              body.find("\x1b[?") != std::string::npos),
              "jumped, with titles, marks, modes or links in the stream");
  RC_CLASSIFY(skipped > 0 && (body.find("\x1b[2;6r") != std::string::npos ||
                              body.find("\x1b[3;r") != std::string::npos),
              "jumped, sets a region below the top row");
}

// Everything a scan found, as text: where it ended, why, and each target it offers.
std::string scan_result(const PlainScrollScan& scan) {
  std::string out = std::to_string(value(scan.scanned())) + (scan.broken() ? " broken " : " ") +
                    std::to_string(scan.lfs()) + "\n";
  for (std::uint64_t keep = 0; keep <= scan.lfs(); ++keep) {
    const PlainScrollScan::Target* t = scan.best(scan.run_start(), keep, 0);
    if (t == nullptr) break;
    out += std::to_string(keep) + ": " + std::to_string(value(t->line_start)) + "-" +
           std::to_string(value(t->end)) + " after " + std::to_string(t->lfs) + " " +
           ::testing::PrintToString(t->prefix) + " pen ";
    for (const auto i : t->pen) out += ::testing::PrintToString(std::string(scan.sgr(i)));
    out += "\n";
  }
  scan.for_each_setting(scan.run_start(), scan.scanned(), [&](const PlainScrollScan::Setting& s) {
    out += "setting " + std::to_string(value(s.at)) + " " +
           ::testing::PrintToString(std::string(s.bytes)) + "\n";
  });
  return out;
}

// Sequences are read in place when a piece holds them whole and byte by byte when they span
// pieces: the two readings must agree, whatever the split.
RC_GTEST_PROP(PlainScrollScan, FindsTheSameWhateverPiecesTheBytesComeIn, ()) {
  const auto pieces =
      *rc::gen::container<std::vector<std::string>>(*rc::gen::inRange(20, 300), plain_piece());
  std::string stream;
  for (const std::string& p : pieces) stream += p;
  const PlainScrollScan whole = scanned(stream);
  PlainScrollScan split(0);
  split.restart(Cursor{0});
  const auto sizes =
      *rc::gen::container<std::vector<std::size_t>>(8, rc::gen::inRange<std::size_t>(1, 40));
  for (std::size_t at = 0, i = 0; at < stream.size(); ++i) {
    const std::size_t n = std::min(sizes[i % sizes.size()], stream.size() - at);
    split.scan(std::string_view(stream).substr(at, n));
    at += n;
  }
  RC_ASSERT(scan_result(split) == scan_result(whole));
  RC_CLASSIFY(whole.broken(), "broken");
}

// A restart forgets everything the run before it held: a scan that ran before (its SGR table
// emptied slot by slot when small, whole when large) finds what a new one finds.
RC_GTEST_PROP(PlainScrollScan, ARestartedScanFindsWhatANewOneFinds, ()) {
  // Plain pieces and truecolour SGRs from a small cube (so the two runs share some), up to
  // hundreds of distinct ones: more than the slot-by-slot bound.
  const auto colour = rc::gen::map(
      rc::gen::tuple(rc::gen::inRange(0, 8), rc::gen::inRange(0, 8), rc::gen::inRange(0, 8)),
      [](const std::tuple<int, int, int>& c) {
        return "\x1b[38;2;" + std::to_string(std::get<0>(c)) + ";" +
               std::to_string(std::get<1>(c)) + ";" + std::to_string(std::get<2>(c)) + "mw\r\n";
      });
  const auto stream_of = [&](int most, int plain_weight) {
    return rc::gen::map(
        rc::gen::container<std::vector<std::string>>(
            *rc::gen::inRange(1, most),
            rc::gen::weightedOneOf<std::string>({{plain_weight, plain_piece()}, {3, colour}})),
        [](const std::vector<std::string>& pieces) {
          std::string out;
          for (const std::string& p : pieces) out += p;
          return out;
        });
  };
  // (Without plain pieces the long run never breaks before its hundreds of colours.)
  const auto before = *rc::gen::oneOf(stream_of(10, 1), stream_of(1500, 0));
  const auto after = *stream_of(300, 1);
  PlainScrollScan reused(0);
  reused.restart(Cursor{0});
  reused.scan(before);
  const std::size_t held = reused.distinct_sgrs();
  reused.restart(Cursor{0});
  reused.scan(after);
  RC_ASSERT(scan_result(reused) == scan_result(scanned(after)));
  RC_CLASSIFY(held > 32, "more than 32 SGRs before the restart");
}

// `stream` scanned in pieces of `piece` bytes, in blocks where the CPU allows (their ESCs all
// at once or one by one) or byte by byte.
PlainScrollScan scanned_in_pieces(std::string_view stream, std::uint64_t spacing, std::size_t piece,
                                  bool blocks, bool escs_at_once = true) {
  PlainScrollScan scan(spacing);
  scan.read_in_blocks(blocks);
  scan.read_escs_at_once(escs_at_once);
  scan.restart(Cursor{0});
  for (std::size_t at = 0; at < stream.size(); at += piece) scan.scan(stream.substr(at, piece));
  return scan;
}

// Blocks of 64 bytes (PlainScrollScan::blocks()) must find what the byte loop finds: the same
// end, LFs, targets, prefixes and pens, and the same SGRs carried, with sequences across block
// and piece ends, runs ended inside a block, targets due anywhere in one, and SGRs the blocks
// leave to the byte loop (more than kMaxSgrParams parameters, EL with several).
RC_GTEST_PROP(PlainScrollScan, BlocksFindWhatTheByteLoopFinds, ()) {
  if (!term::wide_masks_available()) RC_SUCCEED("no AVX-512BW on this CPU: no blocks");
  const auto pieces = *rc::gen::container<std::vector<std::string>>(
      *rc::gen::inRange(20, 500),
      rc::gen::weightedOneOf<std::string>(
          {{20, plain_piece()},
           {5, rc::gen::just<std::string>("\r\n")},
           // Text of any length, to put the next ESC anywhere in a block.
           {6, rc::gen::map(rc::gen::inRange(0, 90), [](int n) { return std::string(n, 'a'); })},
           {2, rc::gen::element<std::string>(
                   "\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15m",
                   "\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16m",
                   "\x1b[1:2:3:4:5:6:7:8:9:1:2:3:4:5:6:7:8m", "\x1b[1;2K", "\x1b[;K",
                   "\x1b[0000000000000000000000000000000000000000000000000000000000001m", "\x07",
                   "\x7f", "\x01", "\x1b(0", "\x1b[?25l", "\x1b[38;5;1m\x1b[K", "\x1b[\x1b[1m",
                   "\x1b[1m\x1b[2;\x1b[3m")},
           // More SGRs on one line than the fold limit: blocks leave the fold to the byte loop.
           {1, rc::gen::map(rc::gen::inRange(4000, 4200), [](int n) {
              std::string sgrs;
              for (int i = 0; i < n; ++i) sgrs += i % 2 ? "\x1b[1m" : "\x1b[32mx";
              return sgrs;
            })}}));
  // Most streams keep only the pieces that do not end a run on their own, to reach far.
  const bool may_break = *rc::gen::element(false, false, false, true);
  std::string stream;
  for (const std::string& p : pieces)
    if (may_break || !scanned(p).broken()) stream += p;
  // Often an end: a sequence cut short or of a kind the blocks leave, then what comes after.
  stream += *rc::gen::element<std::string>("", "", "\x1b(", "\x1b[", "\x1b[12", "\x1b[1;2;3",
                                           "\x1b\x1b[m",
                                           "\x1b"
                                           "c",
                                           "\x1b[>c", "\x1b]1", "\x1bP", "\x1b(B\x1b(0");
  stream += std::string(*rc::gen::inRange(0, 70), ';') +
            *rc::gen::element<std::string>("m", "K", "xm") + "\r\n";
  const auto spacing = *rc::gen::element<std::uint64_t>(0, 1, 200, 2000, 16 * 1024);
  const auto size = *rc::gen::element<std::size_t>(1, 63, 64, 65, 200, 4096, stream.size());
  const PlainScrollScan in_blocks = scanned_in_pieces(stream, spacing, size, true);
  const PlainScrollScan esc_by_esc = scanned_in_pieces(stream, spacing, size, true, false);
  const PlainScrollScan by_byte = scanned_in_pieces(stream, spacing, size, false);
  RC_ASSERT(in_blocks.reads_in_blocks());
  RC_ASSERT(!by_byte.reads_in_blocks());
  RC_ASSERT(scan_result(in_blocks) == scan_result(by_byte));
  RC_ASSERT(in_blocks.carried_sgrs() == by_byte.carried_sgrs());
  // A block's ESCs read all at once take what reading them one by one takes, no less.
  RC_ASSERT(scan_result(esc_by_esc) == scan_result(by_byte));
  RC_ASSERT(in_blocks.block_bytes() == esc_by_esc.block_bytes());
  RC_CLASSIFY(by_byte.broken(), "broken");
  RC_CLASSIFY(by_byte.lfs() > 30, "over thirty lines");
}

// Targets far apart get their pens from SGRs queued over many lines (a reset empties the queue):
// each must be the pen a scan that makes every line a target finds at the same line.
RC_GTEST_PROP(PlainScrollScan, TargetsFarApartHaveThePensOfAScanOfEveryLine, ()) {
  const auto pieces =
      *rc::gen::container<std::vector<std::string>>(*rc::gen::inRange(50, 600), plain_piece());
  std::string stream;
  for (const std::string& p : pieces) stream += p;
  const PlainScrollScan every_line = scanned(stream);
  PlainScrollScan spaced(*rc::gen::inRange<std::uint64_t>(1, 1000));
  spaced.restart(Cursor{0});
  const auto size = *rc::gen::inRange<std::size_t>(1, 300);
  for (std::size_t at = 0; at < stream.size(); at += size)
    spaced.scan(std::string_view(stream).substr(at, size));
  RC_ASSERT(value(spaced.scanned()) >= value(every_line.scanned()));
  const auto pen = [](const PlainScrollScan& scan, const PlainScrollScan::Target& t) {
    std::string out;
    for (const auto i : t.pen) out += scan.sgr(i);
    return out;
  };
  int compared = 0;
  for (std::uint64_t keep = 0; keep <= spaced.lfs(); ++keep) {
    const PlainScrollScan::Target* t = spaced.best(Cursor{0}, keep, 0);
    if (t == nullptr) break;
    if (t->end > every_line.scanned()) continue;  // past where the other scan's run ended
    // The latest target at or after t's line with as many LFs after it: t's line itself.
    const PlainScrollScan::Target* same =
        every_line.best(t->line_start, every_line.lfs() - t->lfs, 0);
    RC_ASSERT(same != nullptr);
    RC_ASSERT(same->line_start == t->line_start);
    RC_ASSERT(same->prefix == t->prefix);
    RC_ASSERT(pen(every_line, *same) == pen(spaced, *t));
    ++compared;
  }
  RC_CLASSIFY(compared > 1, "several targets");
}

// Between two targets far apart, a stream that never resets the pen: the scan folds the pen
// every kMaxSgrsBetweenFolds SGRs and carries what no fold took from piece to piece, in pieces
// that cut most SGRs (1 and 7 bytes), hold a few lines or the whole stream. Each target's pen
// must be the one a scan that makes every line a target finds at its line.
TEST(PlainScrollScan, PensFoldedEveryFewThousandSgrsAreThoseOfAScanOfEveryLine) {
  std::string stream;
  for (int i = 0; i < 12000; ++i) {
    stream += "\x1b[1mw" + std::to_string(i) + "\x1b[22m \x1b[3" + std::to_string(i % 8) + "m" +
              (i % 3 == 0 ? "\x1b[4m" : "") + "x\x1b[38;5;" + std::to_string(i % 251) + "m\r\n";
  }
  const PlainScrollScan every_line = scanned(stream);
  ASSERT_FALSE(every_line.broken());
  const auto pen = [](const PlainScrollScan& scan, const PlainScrollScan::Target& t) {
    std::string out;
    for (const auto i : t.pen) out += scan.sgr(i);
    return out;
  };
  for (const std::size_t piece :
       {std::size_t{1}, std::size_t{7}, std::size_t{300}, stream.size()}) {
    PlainScrollScan spaced(150'000);  // ~4,500 lines and ~13,000 SGRs apart
    spaced.restart(Cursor{0});
    for (std::size_t at = 0; at < stream.size(); at += piece)
      spaced.scan(std::string_view(stream).substr(at, piece));
    EXPECT_FALSE(spaced.broken());
    int compared = 0;
    for (std::uint64_t keep = 0; keep <= spaced.lfs(); ++keep) {
      const PlainScrollScan::Target* t = spaced.best(Cursor{0}, keep, 0);
      if (t == nullptr) break;
      const PlainScrollScan::Target* same =
          every_line.best(t->line_start, every_line.lfs() - t->lfs, 0);
      ASSERT_NE(same, nullptr);
      ASSERT_EQ(same->line_start, t->line_start);
      EXPECT_EQ(pen(spaced, *t), pen(every_line, *same)) << "pieces of " << piece;
      if (t->lfs > 0) ++compared;
    }
    EXPECT_GE(compared, 2) << "pieces of " << piece;
  }
}

// Thousands of SGRs between two targets far apart: the blocks stop at the SGR a fold follows
// (every kMaxSgrsBetweenFolds), and the pens and carried SGRs are the byte loop's.
TEST(PlainScrollScan, BlocksLeaveEachFoldToTheByteLoop) {
  if (!term::wide_masks_available()) GTEST_SKIP() << "no AVX-512BW on this CPU: no blocks";
  std::string stream;
  for (int i = 0; i < 12000; ++i) {
    stream += "\x1b[1mw" + std::to_string(i) + "\x1b[22m \x1b[3" + std::to_string(i % 8) + "m" +
              (i % 3 == 0 ? "\x1b[4m" : "") + "x\x1b[38;5;" + std::to_string(i % 251) + "m\r\n";
  }
  for (const std::size_t piece : {std::size_t{300}, std::size_t{4096}, stream.size()}) {
    const PlainScrollScan in_blocks = scanned_in_pieces(stream, 150'000, piece, true);
    const PlainScrollScan by_byte = scanned_in_pieces(stream, 150'000, piece, false);
    EXPECT_FALSE(by_byte.broken());
    EXPECT_EQ(scan_result(in_blocks), scan_result(by_byte)) << "pieces of " << piece;
    EXPECT_EQ(in_blocks.carried_sgrs(), by_byte.carried_sgrs()) << "pieces of " << piece;
    // What the blocks are for: they read most of colored text, the byte loop none of it.
    EXPECT_GT(in_blocks.block_bytes(), stream.size() / 2) << "pieces of " << piece;
    EXPECT_EQ(by_byte.block_bytes(), 0u);
  }
}

// A stream of SGRs with no line a target could start (no CR): nothing asks for the pen, so the
// scan folds it every kMaxSgrsBetweenFolds SGRs and never carries more than that from piece to
// piece, however long the stream.
TEST(PlainScrollScan, CarriesABoundedNumberOfSgrsWhereNoLineAsksForThePen) {
  PlainScrollScan scan;
  scan.restart(Cursor{0});
  std::string piece;
  for (int i = 0; i < 50; ++i) piece += "\x1b[1mx\x1b[22m\x1b[3" + std::to_string(i % 8) + "m\n";
  std::size_t most = 0;
  for (int i = 0; i < 200; ++i) {  // 30,000 SGRs
    scan.scan(piece);
    most = std::max(most, scan.carried_sgrs());
  }
  EXPECT_FALSE(scan.broken());
  EXPECT_GT(most, 0u);
  EXPECT_LE(most, PlainScrollScan::kMaxSgrsBetweenFolds);
}

// More distinct SGRs than the table holds, all still part of the pen (unmodelled ones are never
// dropped), and no line a target could start: the table fills at the first fold, after
// kMaxSgrsBetweenFolds SGRs, and the run ends there, at the same byte and with the same result
// whether an SGR is read in place or byte by byte across pieces.
TEST(PlainScrollScan, ATableFilledAtAFoldEndsTheRunWhereverThePiecesEnd) {
  std::string stream;
  for (int i = 0; i < 6000; ++i)
    stream += "\x1b[" + std::to_string(i % 2 ? 53 : 21) + ";" + std::to_string(i) + "1mx\n";
  std::string whole_result;
  for (const std::size_t piece :
       {stream.size(), std::size_t{1}, std::size_t{7}, std::size_t{300}}) {
    PlainScrollScan scan;
    scan.restart(Cursor{0});
    for (std::size_t at = 0; at < stream.size(); at += piece)
      scan.scan(std::string_view(stream).substr(at, piece));
    ASSERT_TRUE(scan.broken()) << "pieces of " << piece;
    EXPECT_LE(scan.carried_sgrs(), PlainScrollScan::kMaxSgrsBetweenFolds);
    if (piece == stream.size()) {
      whole_result = scan_result(scan);
      // At the fold after the 4,096th SGR: the 4,096 lines before it are plain.
      EXPECT_EQ(scan.lfs(), PlainScrollScan::kMaxSgrsBetweenFolds - 1);
    } else {
      EXPECT_EQ(scan_result(scan), whole_result) << "pieces of " << piece;
    }
  }
}

// --- the mirror thread -----------------------------------------------------------------------

// Waits (generously) for the mirror thread's notify eventfd and drains it.
void await_notify(int notify) {
  pollfd p{notify, POLLIN, 0};
  ::poll(&p, 1, 100);
  std::uint64_t drained = 0;
  [[maybe_unused]] const ssize_t n = ::read(notify, &drained, sizeof drained);
}

// The next reply of `thread` (token 0 if none came within a minute).
engine::SnapshotReply next_reply(engine::MirrorThread& thread, int notify) {
  engine::SnapshotReply reply;
  for (int i = 0; i < 600 && !thread.next_reply(reply); ++i) await_notify(notify);
  return reply;
}

TEST(PlainScrollSkip, TheMirrorThreadJumpsThroughAFloodInItsRing) {
  const int notify = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(notify, 0);
  {
    TestRing ring("flood", notify);
    auto consumer = ring.gate.attach(ring.writer.committed());
    engine::MirrorThread thread(notify, kLimits);
    std::string flood;
    for (int i = 0; flood.size() < (3u << 20); ++i)
      flood += "\x1b[32m" + std::to_string(i) + "\x1b[0m log line of a flood, padded to width\r\n";
    ring.write(flood);  // before the thread is woken: it finds 3 MiB to look through
    thread.add_actor(1, ring.reader(), consumer, 80, 24);
    thread.wake();
    engine::SnapshotRequest request;
    request.token = 7;
    request.not_before = ring.writer.committed();
    thread.request_snapshot(1, request);
    const engine::SnapshotReply reply = next_reply(thread, notify);
    ASSERT_EQ(reply.token, 7u);
    ASSERT_TRUE(reply.found);
    Mirror reference(Cursor{0}, 80, 24, kLimits);
    reference.feed(flood);
    const auto expected = reference.snapshot();
    EXPECT_EQ(reply.taken.cursor, expected.cursor);
    EXPECT_EQ(reply.taken.snapshot.bytes, expected.snapshot.bytes);
    EXPECT_GT(thread.stats().skipped, 2u << 20);
    EXPECT_LT(thread.stats().bytes, 1u << 20);
  }
  ::close(notify);
}

// Titles and shell marks among the bytes a jump passes (settings, docs/plain-scroll-skip.md)
// still reach the recorder, each with the cursor where it ends in the stream: the first ones
// kept in order, the rest counted as dropped by the rate limit, none lost; and the state handed
// over names the stream's last title.
TEST(PlainScrollSkip, TheMirrorThreadJumpsOverTitlesAndMarksAndReportsEachOne) {
  using recorder::EventKind;
  const int notify = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(notify, 0);
  {
    TestRing ring("prompts", notify);
    auto consumer = ring.gate.attach(ring.writer.committed());
    engine::MirrorThread thread(notify, kLimits);
    std::string flood;
    std::vector<std::pair<EventKind, std::uint64_t>> expected;  // kind, cursor after it
    std::string last_title;
    auto add = [&](const std::string& bytes, std::optional<EventKind> kind) {
      flood += bytes;
      if (kind) expected.emplace_back(*kind, flood.size());
    };
    for (int i = 0; flood.size() < (3u << 20); ++i) {
      last_title = "dev@host: ~/src (" + std::to_string(i) + ")";
      add("\x1b]0;" + last_title + "\x07", EventKind::title);
      add("\x1b]133;A\x07", EventKind::prompt);
      add("$ \x1b]133;B\x07make\r\n", std::nullopt);
      add("\x1b]133;C\x07", EventKind::command_start);
      for (int k = 0; k < 40; ++k)
        add("\x1b[?25lcc -c module" + std::to_string(k) + ".c\x1b[?25h\r\n", std::nullopt);
      add("\x1b]133;D;0\x07", EventKind::command_end);
    }
    ring.write(flood);  // before the thread is woken: it finds 3 MiB to look through
    thread.add_actor(1, ring.reader(), consumer, 80, 24);
    thread.wake();
    engine::SnapshotRequest request;
    request.token = 9;
    request.not_before = ring.writer.committed();
    thread.request_snapshot(1, request);
    ASSERT_TRUE(next_reply(thread, notify).found);
    EXPECT_GT(thread.stats().skipped, 2u << 20);

    std::vector<recorder::OutputEvent> kept;
    std::uint64_t dropped = 0;
    std::optional<recorder::OutputState> state;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (kept.size() + dropped < expected.size() && std::chrono::steady_clock::now() < deadline) {
      engine::OutputEventBatch batch;
      if (!thread.next_events(batch)) {
        await_notify(notify);
        continue;
      }
      if (batch.state) state = batch.state;
      for (recorder::OutputEvent& e : batch.events) {
        if (e.kind == EventKind::dropped) dropped += e.fields["count"].get<std::uint64_t>();
        else if (e.kind != EventKind::status) kept.push_back(std::move(e));
      }
    }
    ASSERT_EQ(kept.size() + dropped, expected.size());
    ASSERT_GE(kept.size(), 100u);
    for (std::size_t i = 0; i < 100; ++i) {
      EXPECT_EQ(kept[i].kind, expected[i].first) << i;
      EXPECT_EQ(value(kept[i].cursor), expected[i].second) << i;
    }
    ASSERT_TRUE(state.has_value());
    EXPECT_EQ(state->title, last_title);
  }
  ::close(notify);
}

TEST(PlainScrollSkip, SnapshotsDuringAFloodAreThoseOfAFullParse) {
  // The ring gets a flood in ~64 KiB writes while snapshots are asked for (answered from what is
  // parsed, at once): every answer, jumps and coasting included, is what a mirror that parsed
  // every byte up to its cursor gives, history lines included.
  const int notify = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(notify, 0);
  std::string flood;
  for (int i = 0; flood.size() < (6u << 20); ++i)
    flood += "\x1b[3" + std::to_string(i % 8) + "m" + std::to_string(i) + "\x1b[0m flood line\r\n";
  std::vector<engine::SnapshotReply> replies;
  {
    TestRing ring("flood", notify);
    auto consumer = ring.gate.attach(ring.writer.committed());
    engine::MirrorThread thread(notify, kLimits);
    thread.add_actor(1, ring.reader(), consumer, 80, 24);
    std::uint64_t token = 0;
    auto collect = [&] {
      engine::SnapshotReply r;
      while (thread.next_reply(r)) replies.push_back(r);
    };
    // Writes of ~64 KiB that end at a line end: a mirror that stops at a commit has no glyph
    // held back there, so the reference can be compared at most answers' cursors.
    for (std::size_t at = 0; at < flood.size();) {
      // Never past the consumer gate's high water: the mirror would be lapped.
      while (ring.writer.committed() - consumer->position() > TestRing::kCapacity / 2) collect();
      const std::size_t end = std::min(flood.size(), flood.rfind('\n', at + 64 * 1024) + 1);
      ring.write(std::string_view(flood).substr(at, end - at));
      at = end;
      thread.wake();
      engine::SnapshotRequest request;
      request.token = ++token;
      thread.request_snapshot(1, request);
      collect();
    }
    for (int i = 0; i < 600 && replies.size() < token; ++i) {
      await_notify(notify);
      collect();
    }
    EXPECT_GT(thread.stats().skipped, 0u);
  }
  ::close(notify);
  ASSERT_GE(replies.size(), 50u);
  // Several replies may share a cursor (the snapshot held from before a jump): each cursor is
  // checked once.
  int cursors = 0;
  int compared = 0;
  Mirror reference(Cursor{0}, 80, 24, kLimits);  // fed up to each reply's cursor in turn
  std::optional<Cursor> last;
  for (const engine::SnapshotReply& r : replies) {
    ASSERT_TRUE(r.found);
    if (r.taken.snapshot.fallback_reason) continue;
    ASSERT_GE(r.taken.cursor, reference.position());  // the mirror thread never goes back
    if (last == r.taken.cursor) continue;
    last = r.taken.cursor;
    ++cursors;
    reference.feed(std::string_view(flood).substr(value(reference.position()),
                                                  r.taken.cursor - reference.position()));
    const auto expected = reference.snapshot();
    if (expected.cursor != r.taken.cursor) continue;  // the reference holds back a last glyph
    ++compared;
    EXPECT_EQ(r.taken.snapshot.scrollback_lines, expected.snapshot.scrollback_lines)
        << value(r.taken.cursor);
    EXPECT_EQ(r.taken.snapshot.bytes, expected.snapshot.bytes) << value(r.taken.cursor);
  }
  EXPECT_GT(compared, cursors / 2);
}

TEST(PlainScrollSkip, WhileTheLinesAfterAJumpAreParsedASnapshotIsTheOneHeldFromBeforeIt) {
  // A client asked for a snapshot and asks again while the mirror re-parses the lines after a
  // jump: it gets, at once, the snapshot the mirror built from the state the jump left, exact
  // for its cursor (the one before the jump). The test holds the mirror thread right after its
  // jump (observe_jumps_for_tests) until the request is queued, so the request always lands
  // in that window, however fast the re-parse is.
  const int notify = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(notify, 0);
  std::string flood;
  for (int i = 0; flood.size() < (2u << 20); ++i)
    flood += "\x1b[3" + std::to_string(i % 8) + "m" + std::to_string(i) + "\x1b[0m held line\r\n";
  const std::size_t first = flood.rfind('\n', 1u << 20) + 1;  // round one ends at a line end
  const ScrollbackLimits limits{600, 16u << 20};
  {
    TestRing ring("held", notify);
    auto consumer = ring.gate.attach(ring.writer.committed());
    engine::MirrorThread thread(notify, limits);
    std::mutex mutex;
    std::condition_variable changed;
    bool armed = false;
    bool jumped = false;
    bool asked = false;
    thread.observe_jumps_for_tests([&](engine::MirrorActorId) {
      std::unique_lock lock(mutex);
      if (!armed) return;
      armed = false;
      jumped = true;
      changed.notify_all();
      changed.wait(lock, [&] { return asked; });
    });
    thread.add_actor(1, ring.reader(), consumer, 80, 24);

    // Round one: a snapshot asked (the mirror keeps one from before each jump for a while
    // after), then ~1 MiB the mirror parses to its end.
    engine::SnapshotRequest request;
    request.token = 1;
    thread.request_snapshot(1, request);
    ASSERT_EQ(next_reply(thread, notify).token, 1u);
    ring.write(std::string_view(flood).substr(0, first));
    thread.wake();
    for (int i = 0; i < 600 && consumer->position() < Cursor{first}; ++i) await_notify(notify);
    ASSERT_EQ(consumer->position(), Cursor{first});

    // Round two: the mirror jumps into the next ~1 MiB and is held there while a request comes.
    {
      std::lock_guard lock(mutex);
      armed = true;
    }
    ring.write(std::string_view(flood).substr(first));
    thread.wake();
    {
      std::unique_lock lock(mutex);
      ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return jumped; }))
          << "the mirror never jumped";
    }
    request.token = 2;
    thread.request_snapshot(1, request);
    {
      std::lock_guard lock(mutex);
      asked = true;
    }
    changed.notify_all();
    const engine::SnapshotReply r = next_reply(thread, notify);
    ASSERT_EQ(r.token, 2u);
    ASSERT_FALSE(r.taken.snapshot.fallback_reason) << *r.taken.snapshot.fallback_reason;
    EXPECT_EQ(thread.stats().held_snapshots, 1u);
    EXPECT_EQ(r.taken.cursor, Cursor{first});  // the state the jump left
    Mirror reference(Cursor{0}, 80, 24, limits);
    reference.feed(std::string_view(flood).substr(0, first));
    EXPECT_EQ(r.taken.snapshot.bytes, reference.snapshot().snapshot.bytes);

    // Once the lines after the landing are parsed, answers are fresh again.
    request.token = 3;
    request.not_before = ring.writer.committed();
    thread.request_snapshot(1, request);
    const engine::SnapshotReply fresh = next_reply(thread, notify);
    ASSERT_EQ(fresh.token, 3u);
    EXPECT_EQ(fresh.taken.cursor, ring.writer.committed());
    EXPECT_EQ(thread.stats().held_snapshots, 1u);
    reference.feed(std::string_view(flood).substr(first));
    EXPECT_EQ(fresh.taken.snapshot.bytes, reference.snapshot().snapshot.bytes);
  }
  ::close(notify);
}

TEST(PlainScrollSkip, AfterAFloodTheMirrorCatchesUpWithItsWholeHistory) {
  // No request during the flood: the mirror may coast (not fed while bytes keep coming). Once
  // the stream stops, it parses the rest: the state is a full parse's, whole history included.
  const int notify = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(notify, 0);
  std::string flood;
  for (int i = 0; flood.size() < (8u << 20); ++i) flood += std::to_string(i) + " coasting line\r\n";
  {
    TestRing ring("coast", notify);
    auto consumer = ring.gate.attach(ring.writer.committed());
    const ScrollbackLimits limits{2000, 16u << 20};
    engine::MirrorThread thread(notify, limits);
    thread.add_actor(1, ring.reader(), consumer, 80, 24);
    for (std::size_t at = 0; at < flood.size(); at += 64 * 1024) {
      while (ring.writer.committed() - consumer->position() > TestRing::kCapacity / 2)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ring.write(std::string_view(flood).substr(at, 64 * 1024));
      thread.wake();
    }
    engine::SnapshotRequest request;
    request.token = 1;
    request.not_before = ring.writer.committed();
    request.options.scrollback_lines = 2000;
    thread.request_snapshot(1, request);
    const engine::SnapshotReply reply = next_reply(thread, notify);
    ASSERT_EQ(reply.token, 1u);
    Mirror reference(Cursor{0}, 80, 24, limits);
    reference.feed(flood);
    term::SnapshotOptions all;
    all.scrollback_lines = 2000;
    const auto expected = reference.snapshot(all);
    EXPECT_EQ(reply.taken.cursor, expected.cursor);
    EXPECT_EQ(reply.taken.snapshot.scrollback_lines, 2000u);
    EXPECT_EQ(reply.taken.snapshot.bytes, expected.snapshot.bytes);
    EXPECT_GT(thread.stats().skipped, 4u << 20);
  }
  ::close(notify);
}

TEST(PlainScrollSkip, AMirrorThatKeepsUpWithAFloodStillCoastsThroughIt) {
  // A flood slower than the mirror parses, as a PTY delivers it to an idle mirror thread: the
  // mirror is never far enough behind for a jump (a target needs a whole history of line feeds
  // after it), so it jumps only if it stops feeding while the stream goes on. It must, jumped
  // before or not: otherwise it parses every byte of the flood (issue 20: a mirror whose
  // history was all exact again, or that never jumped, parsed 20-40% of a colored flood).
  const int notify = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(notify, 0);
  std::string flood;
  for (int i = 0; flood.size() < (8u << 20); ++i) {
    flood += "\x1b[38;2;" + std::to_string(i % 256) + ";90;200m" + std::to_string(i) +
             "\x1b[0m a line of a steady flood, kept under the mirror's pace\r\n";
  }
  {
    TestRing ring("steady", notify);
    auto consumer = ring.gate.attach(ring.writer.committed());
    const ScrollbackLimits limits{};  // the defaults: 10,000 lines, more than a snapshot waits for
    engine::MirrorThread thread(notify, limits);
    thread.add_actor(1, ring.reader(), consumer, 80, 24);
    for (std::size_t at = 0; at < flood.size(); at += 16 * 1024) {
      while (ring.writer.committed() - consumer->position() > TestRing::kCapacity / 2)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ring.write(std::string_view(flood).substr(at, 16 * 1024));
      thread.wake();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // ~16 MB/s at most
    }
    engine::SnapshotRequest request;
    request.token = 1;
    request.not_before = ring.writer.committed();
    thread.request_snapshot(1, request);
    const engine::SnapshotReply reply = next_reply(thread, notify);
    ASSERT_EQ(reply.token, 1u);
    Mirror reference(Cursor{0}, 80, 24, limits);
    reference.feed(flood);
    const auto expected = reference.snapshot();
    EXPECT_EQ(reply.taken.cursor, expected.cursor);
    EXPECT_EQ(reply.taken.snapshot.bytes, expected.snapshot.bytes);
    // Parsed: a few thousand lines after each jump and before the first; the rest skipped.
    EXPECT_LT(thread.stats().bytes, flood.size() / 4);
  }
  ::close(notify);
}

TEST(PlainScrollSkip, AStreamSlowerThanAFloodKeepsTheMirrorCurrent) {
  // A progress line every 2 ms never pauses long enough for the mirror to call the stream
  // quiet: the mirror must not coast through it (it would never jump either: too few lines),
  // or its screen, its events and the status detector would lag until the program stops.
  const int notify = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(notify, 0);
  {
    TestRing ring("trickle", notify);
    auto consumer = ring.gate.attach(ring.writer.committed());
    engine::MirrorThread thread(notify, kLimits);
    thread.add_actor(1, ring.reader(), consumer, 80, 24);
    std::uint64_t written = 0;
    for (int i = 0; i < 200; ++i) {
      const std::string line = "\x1b[32m" + std::to_string(i) + "\x1b[0m progress " +
                               std::string(static_cast<std::size_t>(i % 60), '#') + "\r\n";
      ring.write(line);
      written += line.size();
      thread.wake();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    // Still streaming: the mirror has parsed most of it (a coasting one would have none).
    EXPECT_GT(value(consumer->position()), written / 2);
  }
  ::close(notify);
}

}  // namespace
}  // namespace backscroll::testing
