// backscrolld and settings.yaml (docs/settings.md): a malformed file stops the engine with a
// line naming the key; the values reach the engine; flags win over the file; a reload (the op,
// SIGHUP) applies what can change live without ending an actor and lists the rest.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
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

// The snapshot history lines the engine gives a request that names none, once its mirror has
// parsed everything committed.
std::uint64_t default_scrollback_lines(EngineProcess& engine, const std::string& actor) {
  const std::uint64_t committed = engine.status(actor)["committed"];
  Frame snap = engine.call("snapshot", {{"actor", actor}});
  for (int i = 0; i < 500 && snap.header["cursor"].get<std::uint64_t>() < committed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    snap = engine.call("snapshot", {{"actor", actor}});
  }
  return snap.header["scrollback_lines"];
}

void write_settings(const EngineProcess& engine, const std::string& yaml) {
  std::ofstream(engine.places().settings_path()) << yaml;
}

TEST(EngineSettings, AReloadAppliesWhatCanChangeLiveAndListsTheRest) {
  EngineProcess engine;
  EngineConfig config;
  config.settings_yaml = "snapshot:\n  scrollback_lines: 3\n";
  ASSERT_TRUE(engine.start(config));
  engine.spawn("sh", {"sh", "-c", "seq 1 100; exec sleep 100"});
  engine.wait_output("sh", "100\r\n");
  const auto pid = engine.status("sh")["pid"];
  ASSERT_EQ(default_scrollback_lines(engine, "sh"), 3u);

  write_settings(engine,
                 "snapshot:\n  scrollback_lines: 7\nterminal_transcript:\n  persist: true\n"
                 "  per_actor_bytes: 1048576\n");
  const Frame reloaded = engine.call("reload");
  EXPECT_EQ(reloaded.header["file"], engine.places().settings_path().string());
  const Json& applied = reloaded.header["applied"];
  ASSERT_EQ(applied.size(), 2u) << reloaded.header.dump();
  EXPECT_EQ(applied[0], Json({{"key", "snapshot.scrollback_lines"}, {"from", "3"}, {"to", "7"}}));
  EXPECT_EQ(applied[1]["key"], "terminal_transcript.per_actor_bytes (rings of new actors)");
  const Json& later = reloaded.header["needs_restart"];
  ASSERT_EQ(later.size(), 1u) << reloaded.header.dump();
  EXPECT_EQ(later[0],
            Json({{"key", "terminal_transcript.persist"}, {"from", "false"}, {"to", "true"}}));
  // Applied: the next snapshot, the next actor's ring; the running actor is untouched.
  EXPECT_EQ(default_scrollback_lines(engine, "sh"), 7u);
  EXPECT_EQ(engine.status("sh")["pid"], pid);
  EXPECT_EQ(engine.status("sh")["capacity"], 10'485'760u);
  engine.spawn("small", {"sh", "-c", "exec sleep 100"});
  EXPECT_EQ(engine.status("small")["capacity"], 1u << 20);
  // A second reload reports the change still waiting for a restart, and nothing else.
  const Frame again = engine.call("reload");
  EXPECT_TRUE(again.header["applied"].empty()) << again.header.dump();
  EXPECT_EQ(again.header["needs_restart"], later);

  // A malformed file changes nothing, and says why.
  write_settings(engine, "snapshot:\n  scrollback_lines: many\n");
  const Error refused = expect_error(engine.try_call("reload"), "a malformed reload");
  EXPECT_EQ(refused.code, Errc::bad_request);
  EXPECT_NE(refused.message.find("snapshot.scrollback_lines"), std::string::npos)
      << refused.message;
  EXPECT_EQ(default_scrollback_lines(engine, "sh"), 7u);

  // SIGHUP reloads too (and does not end the engine).
  write_settings(engine, "snapshot:\n  scrollback_lines: 2\n");
  ASSERT_EQ(::kill(engine.pid(), SIGHUP), 0);
  wait_until([&] { return default_scrollback_lines(engine, "sh") == 2; }, "SIGHUP's reload");
  EXPECT_EQ(engine.status("sh")["pid"], pid);
}

}  // namespace
}  // namespace backscroll::testing
