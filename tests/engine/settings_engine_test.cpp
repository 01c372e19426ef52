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

// memory_budget bounds what the actors reserve together: a spawn past it is over_budget with the
// numbers, what runs is untouched, and status shows each actor's share beside the total.
TEST(EngineSettings, TheMemoryBudgetRefusesASpawnPastItAndHarmsNothingRunning) {
  EngineProcess engine;
  EngineConfig config;
  config.settings_yaml =
      "memory_budget: 100MiB\nterminal_transcript:\n  per_actor_bytes: 1048576\n";
  ASSERT_TRUE(engine.start(config));
  std::optional<Error> refused;
  int spawned = 0;
  for (; spawned < 20 && !refused; ++spawned) {
    auto r = engine.try_call(
        "spawn", {{"actor", "a" + std::to_string(spawned)}, {"argv", {"sh", "-c", "cat"}}});
    if (!r) refused = r.error();
  }
  ASSERT_TRUE(refused) << "20 actors fit a 100 MiB budget";
  EXPECT_EQ(refused->code, Errc::over_budget) << refused->describe();
  EXPECT_NE(refused->message.find("100.0 MiB memory_budget"), std::string::npos)
      << refused->message;
  const int running = spawned - 1;
  ASSERT_GE(running, 1);

  // Status: each actor's reservation within the budget, their sum the total, the use within it
  // (a snapshot kept for the lane too).
  wait_until(
      [&] {
        return engine.call("snapshot", {{"actor", "a0"}}).header.at("cursor") ==
               engine.status("a0").at("committed");
      },
      "a snapshot of a0 at its committed cursor");
  const Json status = engine.call("status").header;
  const Json& memory = status.at("memory");
  EXPECT_EQ(memory.at("budget"), 100u << 20);
  std::uint64_t reserved = 0, used = 0;
  for (const Json& actor : status.at("actors")) {
    const Json& m = actor.at("memory");
    reserved += m.at("reserved").at("total").get<std::uint64_t>();
    used += m.at("used").at("total").get<std::uint64_t>();
    EXPECT_EQ(m.at("reserved").at("ring"), actor.at("capacity"));
    for (const auto& [part, bytes] : m.at("used").items())
      EXPECT_LE(bytes.get<std::uint64_t>(), m.at("reserved").at(part).get<std::uint64_t>()) << part;
  }
  EXPECT_EQ(memory.at("reserved"), reserved);
  EXPECT_EQ(memory.at("used"), used);
  EXPECT_LE(reserved, 100u << 20);
  EXPECT_GT(status.at("actors")[0].at("memory").at("used").at("snapshot").get<std::uint64_t>(), 0u);
  // The refused spawn would have passed it: one more reservation does not fit.
  EXPECT_GT(reserved + reserved / running, 100u << 20);

  // Nothing running was harmed: every actor still echoes, its use counted as it grows.
  for (int i = 0; i < running; ++i) {
    const std::string name = "a" + std::to_string(i);
    engine.call("input", {{"actor", name}}, "still here " + name + "\r");
    engine.wait_output(name, "still here " + name + "\r\n");
  }
  EXPECT_GT(engine.status("a0").at("memory").at("used").at("ring").get<std::uint64_t>(), 0u);
  wait_until(
      [&] {
        return engine.status("a0").at("memory").at("used").at("history").get<std::uint64_t>() > 0 ||
               (engine.call("input", {{"actor", "a0"}}, std::string(30, '\r')), false);
      },
      "lines in a0's history");

  // Deleting one makes room; a raised budget (reload, live) takes more.
  engine.call("delete", {{"actor", "a0"}});
  engine.spawn("again", {"sh", "-c", "cat"});
  EXPECT_EQ(expect_error(engine.try_call("spawn", {{"actor", "more"}, {"argv", {"true"}}}),
                         "a spawn past the budget")
                .code,
            Errc::over_budget);
  write_settings(engine, "memory_budget: 1GiB\nterminal_transcript:\n  per_actor_bytes: 1048576\n");
  const Frame reloaded = engine.call("reload");
  EXPECT_EQ(reloaded.header["applied"][0]["key"], "memory_budget") << reloaded.header.dump();
  engine.spawn("more", {"sh", "-c", "cat"});
  EXPECT_EQ(engine.call("status").header.at("memory").at("budget"), 1u << 30);
}

}  // namespace
}  // namespace backscroll::testing
