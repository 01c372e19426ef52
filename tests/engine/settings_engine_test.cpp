// backscrolld and settings.yaml (docs/settings.md): a malformed file stops the engine with a
// line naming the key; the values reach the engine; flags win over the file.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

TEST(EngineSettings, AMalformedFileStopsTheEngineNamingTheKeyAndLine) {
  EngineProcess engine;
  EngineConfig config;
  config.settings_yaml = "terminal_transcript:\n  persist: yes please\n";
  config.wait_ready = false;
  ASSERT_TRUE(engine.start(config));
  const auto status = engine.wait_exit();
  ASSERT_TRUE(status);
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(engine.log().find("settings.yaml line 2: terminal_transcript.persist: expected true "
                              "or false"),
            std::string::npos)
      << engine.log();
}

TEST(EngineSettings, RingSizeAndSnapshotHistoryComeFromTheFile) {
  EngineProcess engine;
  EngineConfig config;
  config.settings_yaml =
      "terminal_transcript:\n  per_actor_bytes: 1048576\nsnapshot:\n  scrollback_lines: 3\n";
  ASSERT_TRUE(engine.start(config));
  engine.spawn("sh", {"sh", "-c", "seq 1 100; exec sleep 100"});
  engine.wait_output("sh", "100\r\n");
  const auto status = engine.status("sh");
  EXPECT_EQ(status["capacity"], 1u << 20);
  // The engine answers from what its mirror has parsed so far: ask until it has parsed the lines.
  const std::uint64_t committed = status["committed"];
  Frame snap = engine.call("snapshot", {{"actor", "sh"}});
  for (int i = 0; i < 500 && snap.header["cursor"].get<std::uint64_t>() < committed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    snap = engine.call("snapshot", {{"actor", "sh"}});
  }
  EXPECT_EQ(snap.header["scrollback_lines"], 3) << snap.header.dump();
}

TEST(EngineSettings, FlagsWinOverTheFile) {
  EngineProcess engine;
  EngineConfig config = EngineConfig::with({"--ring-bytes", "2097152"});
  config.settings_yaml = "terminal_transcript:\n  per_actor_bytes: 1048576\n";
  ASSERT_TRUE(engine.start(config));
  engine.spawn("sh", {"sh", "-c", "exec sleep 100"});
  EXPECT_EQ(engine.status("sh")["capacity"], 2u << 20);
}

}  // namespace
}  // namespace backscroll::testing
