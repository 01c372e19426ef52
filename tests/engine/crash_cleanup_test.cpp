// An engine killed with SIGKILL leaves its socket behind; its rings are memfds, gone with it
// except in the readers that still map them, which keep reading what was committed. Nobody can
// open a dead engine's ring, and the next engine on the same runtime directory replaces the
// socket and serves as if nothing had happened. The dead engine's programs do not survive it
// (their PTY hung up).
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "shm/ring_reader.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

// True while `pid` exists and is not a zombie.
bool process_running(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

TEST(CrashCleanup, NextEngineReplacesTheDeadEnginesSocketThenServes) {
  EngineProcess dead;
  ASSERT_TRUE(dead.start());
  const Json a = dead.spawn("a", {"sleep", "1000"});
  const Json b = dead.spawn("b", {"sh", "-c", "echo before-crash; exec sleep 1000"});
  dead.wait_output("b", "before-crash");
  EXPECT_EQ(dead.rings(), (std::vector<std::string>{"a", "b"}));
  const Places places = dead.places();
  auto mapped = shm::RingReader::open(places, "b");
  ASSERT_TRUE(mapped) << mapped.error().describe();

  dead.kill_hard();
  // What the crash left: the socket file. A reader that mapped a ring still reads it.
  EXPECT_TRUE(std::filesystem::exists(places.socket_path()));
  std::string kept(mapped->committed() - mapped->oldest(), '\0');
  auto end = mapped->copy(mapped->oldest(), std::as_writable_bytes(std::span(kept)));
  ASSERT_TRUE(end) << end.error().describe();
  EXPECT_NE(kept.find("before-crash"), std::string::npos) << kept;
  // A reader refuses the dead engine's ring: no engine announces it (what a ring whose engine is
  // gone gets even when announced is RingReader.OpenAnnouncedReportsStaleSegment...).
  auto reader = shm::RingReader::open(places, "b");
  ASSERT_FALSE(reader) << "a dead engine's ring opened without complaint";
  // The kernel tears the dead engine's io_uring down asynchronously, and its pending accept
  // keeps the listening socket alive (connections queue up) until it has: wait for that.
  const auto died = std::chrono::steady_clock::now();
  wait_until(
      [&] {
        auto client = control::ControlClient::connect(places);
        return !client && client.error().code == Errc::engine_unavailable;
      },
      "connections to the dead engine's socket to be refused");
  reader = shm::RingReader::open(places, "b");
  ASSERT_FALSE(reader) << "a dead engine's ring opened without complaint";
  EXPECT_EQ(reader.error().code, Errc::engine_unavailable) << reader.error().describe();
  std::printf("the dead engine's socket accepted connections for %lld ms\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - died)
                                         .count()));
  // The programs went down with their PTYs.
  for (const Json& spawned : {a, b}) {
    const std::int64_t pid = spawned.at("pid");
    wait_until([&] { return !process_running(pid); }, "program " + std::to_string(pid) + " to end");
  }

  EngineProcess next;
  EngineConfig config;
  config.runtime_dir = places.runtime_dir;
  ASSERT_TRUE(next.start(config));
  EXPECT_EQ(next.call("list").header.at("actors").size(), 0u);

  // The names are free again, in a new cursor space.
  const Json again = next.spawn("b", {"sh", "-c", "echo after-crash; exec sleep 1000"});
  next.wait_output("b", "after-crash");
  EXPECT_EQ(again.at("cursor"), 0);
  EXPECT_NE(again.at("epoch"), b.at("epoch"));
  EXPECT_EQ(next.history("b").find("before-crash"), std::string::npos);
  auto fresh = shm::RingReader::open(places, "b");
  ASSERT_TRUE(fresh) << fresh.error().describe();
}

TEST(CrashCleanup, EngineKilledMidFloodLeavesNothingTheNextOneCannotClean) {
  EngineProcess dead;
  ASSERT_TRUE(dead.start(EngineConfig::with({"--ring-bytes", "1000000"})));
  for (int i = 0; i < 4; ++i) {
    dead.spawn("flood-" + std::to_string(i),
               {child_binary(), "pattern", std::to_string(i), "1000000000", "raw"});
  }
  wait_until([&] { return dead.status("flood-3").at("committed").get<std::uint64_t>() > 1000000; },
             "the floods to wrap their rings");
  const Places places = dead.places();
  dead.kill_hard();

  EngineProcess next;
  EngineConfig config;
  config.runtime_dir = places.runtime_dir;
  ASSERT_TRUE(next.start(config));
  next.spawn("flood-0", {"true"});
  next.wait_sealed("flood-0");
}

}  // namespace
}  // namespace backscroll::testing
