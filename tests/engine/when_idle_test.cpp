// send --when-idle (docs/protocol.md `input` `when_idle`): the engine holds the text until the
// actor waits for input (a shell prompt mark, an idle agent status, or its program quiet for
// the quiet time), then writes it; past its timeout it answers timed_out and nothing reaches
// the program; a waiting send is listed in status and can be cancelled; at most 16 wait per
// actor; one whose program ends is cancelled.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class WhenIdle : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.start()); }

  // A send --when-idle on a connection of its own (the answer comes when it is written).
  std::future<Result<Frame>> send_when_idle(const std::string& actor, const std::string& text,
                                            Json extra = Json::object()) {
    return std::async(std::launch::async, [this, actor, text, extra]() mutable {
      control::ControlClient client = engine_.connect();
      extra["actor"] = actor;
      extra["when_idle"] = true;
      return client.call("input", std::move(extra), text);
    });
  }
  std::size_t pending(const std::string& actor) {
    return engine_.status(actor).at("pending_sends").size();
  }
  EngineProcess engine_;
};

TEST_F(WhenIdle, WaitsForThePromptMarkOfABusyProgram) {
  // Prints every 100 ms for 1.5 s (never quiet), then marks a prompt and reads a line.
  engine_.spawn("busy", {"sh", "-c",
                         "i=0; while [ $i -lt 15 ]; do echo busy; sleep 0.1; i=$((i+1)); done; "
                         "echo prompted; printf '\\033]133;A\\007'; read line; echo got:$line"});
  engine_.wait_output("busy", "busy");
  const auto asked = Clock::now();
  auto sent = send_when_idle("busy", "hello\r");
  wait_until([&] { return pending("busy") == 1; }, "the send to wait");
  const Result<Frame> answer = sent.get();
  ASSERT_TRUE(answer) << answer.error().describe();
  EXPECT_GE(Clock::now() - asked, milliseconds(1000));
  engine_.wait_output("busy", "got:hello");
  // Written after the prompt mark, not before (the terminal echoes it where it was written).
  const std::string out = engine_.history("busy");
  ASSERT_NE(out.find("prompted"), std::string::npos);
  EXPECT_LT(out.find("prompted"), out.find("hello"));
  EXPECT_LT(out.find("\033]133;A"), out.find("hello"));
  EXPECT_EQ(pending("busy"), 0u);
}

TEST_F(WhenIdle, AQuietProgramCountsAsWaiting) {
  engine_.spawn("reader", {"sh", "-c", "read line; echo got:$line"});
  auto sent = send_when_idle("reader", "quiet\r", {{"quiet_ms", 300}});
  ASSERT_TRUE(sent.get());
  engine_.wait_output("reader", "got:quiet");
}

TEST_F(WhenIdle, ATimeoutSendsNothing) {
  engine_.spawn("chatty", {"sh", "-c", "while :; do echo chat; sleep 0.05; done"});
  engine_.wait_output("chatty", "chat");
  auto sent = send_when_idle("chatty", "never-typed\r", {{"timeout_ms", 800}});
  const Result<Frame> answer = sent.get();
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, Errc::timed_out);
  EXPECT_EQ(engine_.history("chatty").find("never-typed"), std::string::npos);
  EXPECT_EQ(pending("chatty"), 0u);
}

TEST_F(WhenIdle, AWaitingSendIsListedAndCanBeCancelled) {
  engine_.spawn("chatty", {"sh", "-c", "while :; do echo chat; sleep 0.05; done"});
  engine_.wait_output("chatty", "chat");
  auto sent = send_when_idle("chatty", "dropped\r");
  wait_until([&] { return pending("chatty") == 1; }, "the send to wait");
  const Json listed = engine_.status("chatty").at("pending_sends").at(0);
  EXPECT_EQ(listed.at("bytes"), 8);
  EXPECT_TRUE(listed.at("timeout_ms").is_null());
  engine_.call("cancel_send", {{"actor", "chatty"}, {"send", listed.at("send")}});
  const Result<Frame> answer = sent.get();
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, Errc::cancelled);
  EXPECT_EQ(engine_.history("chatty").find("dropped"), std::string::npos);
  // Cancelling one that is not waiting is an error that says so.
  EXPECT_FALSE(engine_.try_call("cancel_send", {{"actor", "chatty"}, {"send", 12345}}));
}

TEST_F(WhenIdle, AtMostSixteenWaitAndAnEndedProgramCancelsThem) {
  engine_.spawn("chatty", {"sh", "-c", "while :; do echo chat; sleep 0.05; done"});
  engine_.wait_output("chatty", "chat");
  std::vector<std::future<Result<Frame>>> sends;
  for (int i = 0; i < 16; ++i) sends.push_back(send_when_idle("chatty", "x\r"));
  wait_until([&] { return pending("chatty") == 16; }, "sixteen sends to wait");
  const auto refused = engine_.try_call("input", {{"actor", "chatty"}, {"when_idle", true}}, "y");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::too_large);
  engine_.call("stop", {{"actor", "chatty"}});
  for (auto& s : sends) {
    const Result<Frame> answer = s.get();
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().code, Errc::cancelled);
  }
}

}  // namespace
}  // namespace backscroll::testing
