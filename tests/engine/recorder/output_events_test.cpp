// OutputEvents (docs/recorder.md, "Events read from the output"): a mirror's scanner reports
// titles, bells and shell marks; each becomes an event at the cursor just past the byte that
// caused it, a title that changes the agent status also becomes a `status` event, bells coalesce
// into runs and a flood of events is bounded by the token bucket with the loss counted, while
// the current title, status and bell count stay exact.
#include "engine/recorder/output_events.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/term/vt_scanner.hpp"

namespace backscroll::recorder {
namespace {

using control::Json;

// A scanner from cursor 0 feeding an OutputEvents with the default rules.
class Output {
 public:
  Output() { scanner_.set_events(&events_); }
  void feed(std::string_view bytes, std::int64_t now_ms) {
    events_.set_now(now_ms);
    scanner_.scan(bytes);
  }
  std::vector<OutputEvent> take(std::int64_t now_ms) {
    std::vector<OutputEvent> out;
    events_.take(out, now_ms);
    return out;
  }
  const OutputEvents& events() const { return events_; }
  OutputEvents& events() { return events_; }

 private:
  OutputEvents events_{term::StatusRules::defaults()};
  term::VtScanner scanner_{Cursor{0}, 80, 24};
};

std::vector<std::string> kinds(const std::vector<OutputEvent>& events) {
  std::vector<std::string> out;
  for (const OutputEvent& e : events) out.emplace_back(to_string(e.kind));
  return out;
}

TEST(OutputEvents, EachEventIsStampedJustPastTheSequenceThatCausedIt) {
  Output out;
  const std::string before = "text\r\n";               // 6 bytes
  const std::string title = "\x1b]2;build: ok\x07";    // 14 bytes, ends at 20
  const std::string prompt = "\x1b]133;A\x1b\\$ ";     // mark ends at 29, then "$ "
  const std::string command = "\x1b]133;C\x07";        // ends at 39
  const std::string done = "out\r\n\x1b]133;D;2\x07";  // ends at 39 + 5 + 10 = 54
  out.feed(before + title + prompt + command + done, 1000);
  const auto events = out.take(1000);
  ASSERT_EQ(kinds(events),
            (std::vector<std::string>{"title", "prompt", "command_start", "command_end"}));
  EXPECT_EQ(events[0].cursor, Cursor{20});
  EXPECT_EQ(events[0].fields, (Json{{"title", "build: ok"}}));
  EXPECT_EQ(events[1].cursor, Cursor{29});
  EXPECT_EQ(events[2].cursor, Cursor{39});
  EXPECT_EQ(events[3].cursor, Cursor{54});
  EXPECT_EQ(events[3].fields, (Json{{"exit_status", 2}}));
  for (const OutputEvent& e : events) EXPECT_EQ(e.time_ms, 1000);
}

TEST(OutputEvents, ShellMarksOfVsCodeAndKittyFormsAreRead) {
  Output out;
  out.feed("\x1b]633;A\x07\x1b]133;A;cl=m;aid=7\x07\x1b]133;D\x07\x1b]633;D;130;x=1\x07", 0);
  out.feed("\x1b]133;B\x07\x1b]133;Z\x07\x1b]133;D;zz\x07\x1b]133;AB\x07", 0);
  const auto events = out.take(0);
  ASSERT_EQ(kinds(events), (std::vector<std::string>{"prompt", "prompt", "command_end",
                                                     "command_end", "command_end"}));
  EXPECT_TRUE(events[2].fields.at("exit_status").is_null());
  EXPECT_EQ(events[3].fields.at("exit_status"), 130);
  EXPECT_TRUE(events[4].fields.at("exit_status").is_null());  // "D;zz": no status given
}

TEST(OutputEvents, ATitleThatChangesTheAgentStatusIsAlsoAStatusEvent) {
  Output out;
  out.feed("\x1b]0;\xe2\x9c\xb3 Claude Code\x07", 0);   // ✳: idle
  out.feed("\x1b]0;\xe2\x9c\xb3 Claude Code\x07", 0);   // the same title: nothing
  out.feed("\x1b]0;\xe2\xa0\x82 Fix the test\x07", 0);  // ⠂: working
  out.feed("\x1b]0;\xe2\xa0\x90 Fix the test\x07", 0);  // another spinner frame: title only
  const auto events = out.take(0);
  ASSERT_EQ(kinds(events),
            (std::vector<std::string>{"title", "status", "title", "status", "title"}));
  EXPECT_EQ(events[1].fields,
            (Json{{"status", "idle"}, {"previous", "unknown"}, {"agent", "claude-code"}}));
  EXPECT_EQ(events[3].fields,
            (Json{{"status", "working"}, {"previous", "idle"}, {"agent", "claude-code"}}));
  EXPECT_EQ(events[1].cursor, events[0].cursor);
  EXPECT_EQ(out.events().state().status, term::AgentStatus::working);
  EXPECT_EQ(out.events().state().agent, "claude-code");
  EXPECT_EQ(out.events().state().title, "\xe2\xa0\x90 Fix the test");
}

TEST(OutputEvents, BellsCoalesceIntoRunsReportedWhenTheirWindowEnds) {
  Output out;
  out.feed("a\x07", 1000);  // reported at once
  EXPECT_EQ(kinds(out.take(1000)), (std::vector<std::string>{"bell"}));
  out.feed("b\x07\x07", 1100);  // within the window: a run
  out.feed("c\x07", 1200);
  EXPECT_TRUE(out.take(1200).empty());
  const auto later = out.take(1100 + OutputEvents::kBellWindowMs);
  ASSERT_EQ(kinds(later), (std::vector<std::string>{"bell"}));
  EXPECT_EQ(later[0].cursor, Cursor{4});  // "a\a b\a": the run's first bell ends at 4
  EXPECT_EQ(later[0].fields, (Json{{"count", 3}, {"last", 7}}));
  EXPECT_EQ(out.events().state().bells, 4u);
  // Another event ends a run at once, so the bells stay before it.
  out.feed("\x07\x1b]2;t\x07", 1400);
  out.feed("\x07\x07\x1b]2;u\x07", 1450);
  const auto runs = out.take(1450);
  ASSERT_EQ(kinds(runs), (std::vector<std::string>{"bell", "title", "bell", "title"}));
  EXPECT_EQ(runs[2].fields.at("count"), 2);
}

TEST(OutputEvents, AFloodOfEventsIsBoundedAndTheLossCounted) {
  Output out;
  std::string flood;
  for (int i = 0; i < 10'000; ++i) flood += "\x1b]2;" + std::to_string(i) + "\x07";
  out.feed(flood, 5000);
  auto events = out.take(5000);
  EXPECT_EQ(events.size(), OutputEvents::kBurst);
  EXPECT_EQ(out.events().state().title, "9999");  // the state is exact all the same
  // A second later the bucket lets the count through, then new events.
  out.feed("\x1b]2;after\x07", 6000);
  events = out.take(6000);
  ASSERT_EQ(kinds(events), (std::vector<std::string>{"dropped", "title"}));
  EXPECT_EQ(events[0].fields.at("count"), 10'000 - OutputEvents::kBurst);
  EXPECT_EQ(events[1].fields.at("title"), "after");
}

TEST(OutputEvents, TheLossAtTheEndOfAFloodIsReportedWithoutAnotherEvent) {
  Output out;
  std::string flood;
  for (int i = 0; i < 1'000; ++i) flood += "\x1b]2;" + std::to_string(i) + "\x07";
  out.feed(flood, 5000);
  EXPECT_EQ(out.take(5000).size(), OutputEvents::kBurst);
  // Nothing more is printed: the count is still owed (the mirror thread keeps asking) and comes
  // once the bucket has a token.
  EXPECT_TRUE(out.events().has_pending());
  const auto events = out.take(5100);
  ASSERT_EQ(kinds(events), std::vector<std::string>{"dropped"});
  EXPECT_EQ(events[0].fields.at("count"), 1'000 - OutputEvents::kBurst);
  EXPECT_FALSE(out.events().has_pending());
}

TEST(OutputEvents, AResetForgetsTheTitleAndStatusButNotTheBells) {
  Output out;
  out.feed("\x07\x1b]0;\xe2\x9c\xb3 Claude Code\x07", 0);
  out.events().reset();
  EXPECT_EQ(out.events().state().title, "");
  EXPECT_EQ(out.events().state().status, term::AgentStatus::unknown);
  EXPECT_EQ(out.events().state().bells, 1u);
}

}  // namespace
}  // namespace backscroll::recorder
