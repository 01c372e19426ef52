// StatusDetector: the live changes a byte stream makes (every title set that changes the title
// or its status, every bell) come out the same however the stream is cut into scans: split at
// every byte position, byte by byte, or at random. History restored before the live phase is
// reported once as the initial state, never as a change (Orca's rule), and the cut between
// history and live bytes may fall anywhere, even inside a sequence.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/status_detector.hpp"

namespace backscroll::status {
namespace {

constexpr std::string_view kBel = "\x07";
const std::string kEsc = "\x1b";

std::string osc(int number, std::string_view title, std::string_view end = kBel) {
  return kEsc + "]" + std::to_string(number) + ";" + std::string(title) + std::string(end);
}
std::string st() { return kEsc + "\\"; }

// What a change reports, in a form the assertions print.
struct Seen {
  std::string kind;
  std::string status;
  std::string previous;
  std::string agent;
  std::string title;
  std::uint64_t bells = 0;
  std::uint64_t cursor = 0;
  bool operator==(const Seen&) const = default;
};

void PrintTo(const Seen& s, std::ostream* os) {
  *os << s.kind << " " << s.status << " (was " << s.previous << ") agent '" << s.agent
      << "' title '" << s.title << "' bells " << s.bells << " @" << s.cursor;
}

Seen seen(const StatusEvent& e) {
  return {std::string(to_string(e.kind)),
          std::string(to_string(e.state.status)),
          e.previous ? std::string(to_string(*e.previous)) : "-",
          e.state.agent,
          e.state.title,
          e.state.bells,
          value(e.state.cursor)};
}

// The changes of `stream` fed live (after an empty history) in the pieces `cuts` make.
std::vector<Seen> live_changes(std::string_view stream, const std::vector<std::size_t>& cuts) {
  StatusDetector d(StatusRules::defaults(), Cursor{0});
  d.finish_restore();
  std::size_t at = 0;
  for (const std::size_t cut : cuts) {
    d.scan(stream.substr(at, cut - at), 1000);
    at = cut;
  }
  d.scan(stream.substr(at), 1000);
  std::vector<Seen> out;
  for (const StatusEvent& e : d.take_changes()) out.push_back(seen(e));
  return out;
}

std::vector<Seen> byte_by_byte(std::string_view stream) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < stream.size(); ++i) cuts.push_back(i);
  return live_changes(stream, cuts);
}

// A stream with every way the scanner sets a title (OSC 0 and 2, ended by BEL, ST and "ESC
// anything"; the CSI 22/23 t stack), bells between and inside sequences, controls inside
// sequences, a cancelled OSC, an OSC 1 (icon name, not a title), and multi-byte characters.
std::string sample_stream() {
  std::string s = "$ claude\r\n";
  s += osc(0, "✳ Claude Code");  // idle
  s += "Welcome\r\n";
  s += osc(2, "⠂ Fix the tests", st());              // working, ended by ST
  s += osc(0, "⠂ Fix the tests");                    // the same title again: no change
  s += "output\x07more";                             // a bell
  s += osc(0, "⠐ Fix the tests", kEsc + "[m");       // ended by ESC [ (then an SGR)
  s += osc(1, "icon only");                          // not a title
  s += kEsc + "]0;cancelled\x18";                    // CAN abandons it
  s += kEsc + "[22;0t";                              // push
  s += osc(0, "[ ! ] Action Required | proj");       // permission
  s += kEsc + "]0;◇  Ready" + kEsc + "\x07" + "\\";  // a bell between ESC and '\': still ST
  s += kEsc + "[23;0t";                              // pop: back to the pushed title
  s += kEsc + "[2" + "\x07" + "3t";                  // CSI 2 BEL 3 t: a bell, a pop of nothing
  s += std::string("\0\x7f", 2);
  s += osc(0, "bash");  // unknown
  s += "\x07\x07";
  s += kEsc + "[22t" + osc(0, "✳ Last");  // push "bash", set another
  s += kEsc + "[23:t" + "\x07";           // pop (':' ends the parameter), then a bell
  return s;
}

TEST(StatusDetector, ReportsEachChangeOfTheSampleStream) {
  const std::string s = sample_stream();
  const std::vector<Seen> got = live_changes(s, {});
  // Cursors: just after the byte that made the change.
  const auto after = [&s](std::string_view needle, std::size_t extra = 0) {
    return static_cast<std::uint64_t>(s.find(needle) + needle.size() + extra);
  };
  const std::vector<Seen> expected = {
      {"change", "idle", "unknown", "claude-code", "✳ Claude Code", 0,
       after(osc(0, "✳ Claude Code"))},
      {"change", "working", "idle", "claude-code", "⠂ Fix the tests", 0,
       after(osc(2, "⠂ Fix the tests", st()))},
      {"change", "working", "working", "claude-code", "⠂ Fix the tests", 1, after("output\x07")},
      {"change", "working", "working", "claude-code", "⠐ Fix the tests", 1,
       after("⠐ Fix the tests", 2)},
      {"change", "permission", "working", "codex", "[ ! ] Action Required | proj", 1,
       after(osc(0, "[ ! ] Action Required | proj"))},
      {"change", "permission", "permission", "codex", "[ ! ] Action Required | proj", 2,
       after("◇  Ready" + kEsc + "\x07")},
      {"change", "idle", "permission", "gemini-cli", "◇  Ready", 2,
       after("◇  Ready" + kEsc + "\x07\\")},
      {"change", "working", "idle", "claude-code", "⠐ Fix the tests", 2, after(kEsc + "[23;0t")},
      {"change", "working", "working", "claude-code", "⠐ Fix the tests", 3, after(kEsc + "[2\x07")},
      {"change", "unknown", "working", "", "bash", 3, after(osc(0, "bash"))},
      {"change", "unknown", "unknown", "", "bash", 4, after(osc(0, "bash"), 1)},
      {"change", "unknown", "unknown", "", "bash", 5, after(osc(0, "bash"), 2)},
      {"change", "idle", "unknown", "claude-code", "✳ Last", 5, after(osc(0, "✳ Last"))},
      {"change", "unknown", "idle", "", "bash", 5, after(kEsc + "[23:t")},
      {"change", "unknown", "unknown", "", "bash", 6, s.size()},
  };
  EXPECT_EQ(got, expected);
}

TEST(StatusDetector, TitlesSplitAtEveryBytePositionGiveTheSameChanges) {
  const std::string s = sample_stream();
  const std::vector<Seen> whole = live_changes(s, {});
  ASSERT_EQ(whole.size(), 15u);
  for (std::size_t i = 1; i < s.size(); ++i) {
    ASSERT_EQ(live_changes(s, {i}), whole) << "split at " << i;
  }
  for (std::size_t i = 1; i + 1 < s.size(); i += 7) {
    for (std::size_t j = i + 1; j < s.size(); j += 5) {
      ASSERT_EQ(live_changes(s, {i, j}), whole) << "split at " << i << " and " << j;
    }
  }
  EXPECT_EQ(byte_by_byte(s), whole);
}

// Random streams of title sequences, bells, controls, text and cut-off fragments, cut at random:
// the same changes as byte-by-byte scanning.
RC_GTEST_PROP(StatusDetector, AnySplitOfAnyStreamGivesTheChangesOfByteByByteScanning, ()) {
  const std::vector<std::string> pieces = {osc(0, "✳ Claude Code"),
                                           osc(0, "⠂ task"),
                                           osc(2, "⠴ proj", st()),
                                           osc(0, "◇  Ready"),
                                           osc(1, "icon"),
                                           kEsc + "]0;",
                                           kEsc + "]2;",
                                           kEsc,
                                           "\\",
                                           "\x07",
                                           "\x18",
                                           std::string(1, '\0'),
                                           "\x7f",
                                           kEsc + "[22t",
                                           kEsc + "[23t",
                                           kEsc + "[23;2t",
                                           kEsc + "[22;0t",
                                           kEsc + "[23:",
                                           kEsc + "[",
                                           "t",
                                           "3t",
                                           "23",
                                           ";",
                                           ":",
                                           "\xe2\x9c",
                                           "\xb3",
                                           "text ",
                                           "\r\n",
                                           kEsc + "[1;31m",
                                           kEsc + "P1$q",
                                           kEsc + "_G",
                                           "[ ! ] Action Required"};
  const auto picks = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, pieces.size()));
  std::string stream;
  for (const std::size_t p : picks) stream += pieces[p];
  auto cuts = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, stream.size() + 1));
  std::sort(cuts.begin(), cuts.end());
  RC_ASSERT(live_changes(stream, cuts) == byte_by_byte(stream));
}

TEST(StatusDetector, HistoryIsReportedOnceAsTheInitialStateNeverAsAChange) {
  // The history ends in a working title, with bells on the way.
  const std::string history =
      osc(0, "✳ Claude Code") + "\x07" + osc(0, "⠂ Refactor the parser") + "\x07 work";
  StatusDetector d(StatusRules::defaults(), Cursor{100});
  d.scan(history, 5000);
  EXPECT_TRUE(d.restoring());
  EXPECT_TRUE(d.take_changes().empty());

  const ActorStatus& initial = d.finish_restore();
  EXPECT_EQ(initial.status, AgentStatus::working);
  EXPECT_EQ(initial.agent, "claude-code");
  EXPECT_EQ(initial.title, "⠂ Refactor the parser");
  EXPECT_EQ(initial.bells, 2u);
  EXPECT_EQ(value(initial.cursor), 100 + history.size());
  EXPECT_FALSE(initial.last_output_ms) << "history has no time";
  EXPECT_TRUE(d.take_changes().empty()) << "a restored status is not a transition";

  // The agent sets the same title again, live: nothing changed.
  d.scan(osc(0, "⠂ Refactor the parser"), 6000);
  EXPECT_TRUE(d.take_changes().empty());
  EXPECT_EQ(d.state().last_output_ms, 6000);

  // Its turn ends: one live transition, from the restored status.
  d.scan(osc(0, "✳ Refactor the parser"), 7000);
  const auto changes = d.take_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, StatusEventKind::change);
  EXPECT_EQ(changes[0].previous, AgentStatus::working);
  EXPECT_EQ(changes[0].state.status, AgentStatus::idle);
  EXPECT_EQ(changes[0].state.bells, 2u);
  EXPECT_EQ(changes[0].state.last_output_ms, 7000);
}

TEST(StatusDetector, TheCutBetweenHistoryAndLiveBytesMayFallInsideASequence) {
  // Every cut of the stream into history + live gives the initial state of the history and then
  // exactly the changes a byte-by-byte live scan of the rest would see from that state.
  const std::string s = sample_stream();
  for (std::size_t cut = 0; cut <= s.size(); ++cut) {
    StatusDetector split(StatusRules::defaults(), Cursor{0});
    split.scan(s.substr(0, cut), 0);
    split.finish_restore();
    split.scan(s.substr(cut), 1000);

    StatusDetector reference(StatusRules::defaults(), Cursor{0});
    reference.scan(s.substr(0, cut), 0);
    reference.finish_restore();
    for (std::size_t i = cut; i < s.size(); ++i) reference.scan(s.substr(i, 1), 1000);

    std::vector<Seen> got, want;
    for (const StatusEvent& e : split.take_changes()) got.push_back(seen(e));
    for (const StatusEvent& e : reference.take_changes()) want.push_back(seen(e));
    ASSERT_EQ(got, want) << "history/live cut at " << cut;
  }
}

TEST(StatusDetector, BellsCountOnFromAnEarlierDetector) {
  StatusDetector d(StatusRules::defaults(), Cursor{500}, 7);
  d.scan("\x07", 0);
  EXPECT_EQ(d.finish_restore().bells, 8u);
  d.scan("x\x07", 10);
  const auto changes = d.take_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].state.bells, 9u);
  EXPECT_EQ(value(changes[0].state.cursor), 503u);
}

TEST(StatusDetector, ANewTitleThatMeansTheSameStatusIsStillAChange) {
  // A spinner frame changes the title, not the status: the line still goes out (with
  // previous == status), so a follower of titles sees every one.
  StatusDetector d(StatusRules::defaults(), Cursor{0});
  d.finish_restore();
  d.scan(osc(0, "⠋ proj") + osc(0, "⠙ proj") + osc(0, "⠙ proj"), 1);
  const auto changes = d.take_changes();
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[1].previous, AgentStatus::working);
  EXPECT_EQ(changes[1].state.status, AgentStatus::working);
  EXPECT_EQ(changes[1].state.title, "⠙ proj");
}

}  // namespace
}  // namespace backscroll::status
