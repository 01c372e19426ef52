// backscrolld and settings.yaml (docs/settings.md): a malformed file stops the engine with a
// line naming the key; the values reach the engine; flags win over the file.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

void expect_refused(const std::string& yaml, const std::string& message) {
  SCOPED_TRACE(yaml);
  EngineProcess engine;
  EngineConfig config;
  config.settings_yaml = yaml;
  config.wait_ready = false;
  ASSERT_TRUE(engine.start(config));
  const auto status = engine.wait_exit();
  ASSERT_TRUE(status);
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(engine.log().find(message), std::string::npos) << engine.log();
}

TEST(EngineSettings, AMalformedFileStopsTheEngineNamingTheKeyAndLine) {
  expect_refused("terminal_transcript:\n  persist: yes please\n",
                 "settings.yaml line 2: terminal_transcript.persist: expected true or false");
  expect_refused("terminal_transcript:\n  persist: yes\n",
                 "settings.yaml line 2: terminal_transcript.persist: expected true or false");
  // The last of two keys would silently turn persistence off.
  expect_refused("terminal_transcript:\n  persist: true\n  persist: false\n",
                 "settings.yaml line 3: key 'persist' given twice (lines 2 and 3)");
  expect_refused("terminal_transcript:\n  per_actor_bytes: 1\n",
                 "terminal_transcript.per_actor_bytes: expected at least 65536");
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
