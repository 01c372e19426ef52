// Actors that clean up after themselves (docs/protocol.md `spawn` `remove`; docs/settings.md
// close_idle_after): `remove: on_success` deletes the actor once its program exits with status
// 0 and only then, `always` however it ends; both keep the deletion snapshot. close_idle_after
// deletes actors whose program ended that long ago, never one that runs again (restart).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

using std::chrono::milliseconds;

bool listed(EngineProcess& engine, const std::string& actor) {
  const Frame list = engine.call("list");  // kept: a temporary would end before the loop
  for (const Json& a : list.header.at("actors")) {
    if (a.at("name") == actor) return true;
  }
  return false;
}

class Ephemeral : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.start()); }
  EngineProcess engine_;
};

TEST_F(Ephemeral, OnSuccessDeletesAnActorWhoseProgramSucceededAndKeepsOneThatFailed) {
  engine_.spawn("ok", {"sh", "-c", "echo done; exit 0"}, {{"remove", "on_success"}});
  engine_.spawn("failed", {"sh", "-c", "echo oops; exit 3"}, {{"remove", "on_success"}});
  wait_until([&] { return !listed(engine_, "ok"); }, "the successful actor to be deleted");
  EXPECT_TRUE(std::filesystem::exists(engine_.places().deleted_dir() / "ok.snapshot.json"));
  engine_.wait_sealed("failed");
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_TRUE(listed(engine_, "failed"));
  EXPECT_EQ(engine_.status("failed").at("remove"), "on_success");
}

TEST_F(Ephemeral, AlwaysDeletesHoweverTheProgramEnded) {
  engine_.spawn("killed", {"sleep", "1000"}, {{"remove", "always"}});
  engine_.call("stop", {{"actor", "killed"}});
  wait_until([&] { return !listed(engine_, "killed"); }, "the stopped actor to be deleted");
}

TEST_F(Ephemeral, ARestartWaitingForTheSealWinsOverTheRemoval) {
  engine_.spawn("again", {"sleep", "1000"}, {{"remove", "always"}});
  const Json restarted = engine_.call("restart", {{"actor", "again"}}).header;
  EXPECT_EQ(restarted.at("session"), 2);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_TRUE(listed(engine_, "again"));
  EXPECT_EQ(engine_.status("again").at("state"), "running");
}

TEST_F(Ephemeral, ABadRemoveValueIsRefused) {
  const auto r =
      engine_.client().call("spawn", {{"actor", "x"}, {"argv", {"true"}}, {"remove", "sometimes"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::bad_request);
  EXPECT_FALSE(listed(engine_, "x"));
}

TEST(EphemeralSettings, CloseIdleAfterDeletesActorsThatEndedThatLongAgo) {
  EngineProcess engine;
  EngineConfig config;
  config.settings_yaml = "close_idle_after: 1s\n";
  ASSERT_TRUE(engine.start(config));
  engine.spawn("ended", {"true"});
  engine.spawn("running", {"sleep", "1000"});
  engine.wait_sealed("ended");
  const auto sealed = std::chrono::steady_clock::now();
  EXPECT_TRUE(listed(engine, "ended"));
  wait_until([&] { return !listed(engine, "ended"); }, "the ended actor to be deleted");
  EXPECT_GE(std::chrono::steady_clock::now() - sealed, milliseconds(900));
  EXPECT_TRUE(listed(engine, "running"));
}

}  // namespace
}  // namespace backscroll::testing
