// The foreground program (docs/architecture.md, "The foreground program"): status and list
// show what runs in the actor now (the shell, or the program it started, with its argv and
// directory), the event track records each change at its cursor, and a quiet actor is not
// looked at.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

Json foreground_of(EngineProcess& engine, const std::string& actor) {
  return engine.status(actor).value("foreground", Json());
}

std::vector<Json> foreground_events(EngineProcess& engine, const std::string& actor) {
  const Frame reply = engine.call("events", {{"actor", actor}, {"kinds", {"foreground"}}});
  return reply.header.at("events").get<std::vector<Json>>();
}

class Foreground : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.start()); }
  EngineProcess engine_;
};

TEST_F(Foreground, FollowsTheProgramAShellRunsAndItsDirectory) {
  // An interactive shell (job control on: each command gets its own foreground group).
  engine_.spawn("sh", {"sh", "-i"});
  // Looked at shortly after the spawn (right after exec the command line may read empty).
  wait_until([&] { return foreground_of(engine_, "sh").is_object(); }, "the first look");
  const Json first = foreground_of(engine_, "sh");
  EXPECT_EQ(first.at("command"), "sh");
  EXPECT_EQ(first.at("argv"), Json({"sh", "-i"}));

  engine_.call("input", {{"actor", "sh"}}, "cd /tmp && sleep 7390\r");
  wait_until([&] { return foreground_of(engine_, "sh").value("command", "") == "sleep"; },
             "sleep in the foreground");
  const Json sleeping = foreground_of(engine_, "sh");
  EXPECT_EQ(sleeping.at("argv"), Json({"sleep", "7390"}));
  EXPECT_EQ(sleeping.at("cwd"), "/tmp");
  EXPECT_NE(sleeping.at("pid"), first.at("pid"));

  engine_.call("input", {{"actor", "sh"}}, "\x03");  // Ctrl-C: back at the prompt
  wait_until([&] { return foreground_of(engine_, "sh").value("command", "") == "sh"; },
             "the shell back in the foreground");
  EXPECT_EQ(foreground_of(engine_, "sh").at("cwd"), "/tmp");

  // Each change is in the event track, in order, at the cursor it was seen at.
  const std::vector<Json> events = foreground_events(engine_, "sh");
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[events.size() - 2].at("command"), "sleep");
  EXPECT_EQ(events.back().at("command"), "sh");
  EXPECT_LE(events[events.size() - 2].at("cursor").get<std::uint64_t>(),
            events.back().at("cursor").get<std::uint64_t>());
}

TEST_F(Foreground, IsNullOnceTheSessionEndedAndListShowsIt) {
  engine_.spawn("short", {"sh", "-c", "echo bye"});
  engine_.wait_sealed("short");
  EXPECT_TRUE(foreground_of(engine_, "short").is_null());
  engine_.spawn("long", {"sleep", "1000"});  // quiet: only the look after the spawn sees it
  wait_until([&] { return foreground_of(engine_, "long").is_object(); }, "the first look");
  const Json list = engine_.call("list").header.at("actors");
  for (const Json& a : list) {
    if (a.at("name") == "long") {
      EXPECT_EQ(a.at("foreground").at("argv"), Json({"sleep", "1000"}));
    } else {
      EXPECT_TRUE(a.at("foreground").is_null());
    }
  }
}

}  // namespace
}  // namespace backscroll::testing
