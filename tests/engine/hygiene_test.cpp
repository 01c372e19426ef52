// The engine leaks nothing into its programs and nothing over time: a spawned program holds
// only fds 0-2 (its terminal), whatever the engine has open; after 1000 spawn/stop cycles the
// engine's fds, threads, rings and children are back to their baseline and its resident
// memory has not grown beyond a generous bound.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

struct Footprint {
  int fds = 0;
  int threads = 0;
  std::size_t rings = 0;
  std::size_t zombies = 0;
  long rss_kb = 0;
};

Footprint footprint(EngineProcess& engine) {
  return {count_fds(engine.pid()), count_threads(engine.pid()), engine.rings().size(),
          zombie_children(engine.pid()).size(), vm_rss_kb(engine.pid())};
}

TEST(Hygiene, SpawnedProgramHoldsOnlyItsTerminal) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start());
  // Give the engine plenty of its own fds to leak: actors (PTYs, pidfds), connections.
  for (int i = 0; i < 3; ++i) engine.spawn("busy-" + std::to_string(i), {"sleep", "1000"});
  std::vector<control::ControlClient> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(engine.connect());
  EventStream events(engine.places());

  engine.spawn("fds", {child_binary(), "fds"});
  engine.wait_sealed("fds");
  const std::string listing = engine.history("fds");
  ASSERT_NE(listing.find("fds done"), std::string::npos) << listing;
  std::istringstream lines(listing);
  std::set<int> fds;
  std::set<std::string> targets;
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("fd ", 0) != 0) continue;
    std::istringstream fields(line.substr(3));
    int fd = -1;
    std::string target;
    fields >> fd >> target;
    fds.insert(fd);
    targets.insert(target);
  }
  EXPECT_EQ(fds, (std::set<int>{0, 1, 2})) << listing;
  ASSERT_EQ(targets.size(), 1u) << listing;
  EXPECT_EQ(targets.begin()->rfind("/dev/pts/", 0), 0u) << listing;
}

TEST(Hygiene, ThousandSpawnStopCyclesLeaveNoTrace) {
  SKIP_MEMORY_MEASURE_UNDER_SANITIZER();
  EngineProcess engine;
  ASSERT_TRUE(engine.start());
  constexpr int kThreads = 4;
  constexpr int kCyclesPerThread = 250;
  // Half the programs exit by themselves, half are stopped (SIGHUP) by the delete.
  auto cycles = [&](control::ControlClient& client, const std::string& prefix, int count) {
    for (int i = 0; i < count; ++i) {
      const std::string name = prefix + "-" + std::to_string(i);
      const std::vector<std::string> argv =
          i % 2 == 0 ? std::vector<std::string>{"true"} : std::vector<std::string>{"sleep", "1000"};
      expect_ok(client.call("spawn", {{"actor", name}, {"argv", argv}}), "spawn " + name);
      expect_ok(client.call("delete", {{"actor", name}}), "delete " + name);
    }
  };
  // Warm up on the engine's own connection (which stays open), so the allocator and the
  // kernel's caches settle before the baseline.
  cycles(engine.client(), "warm", 20);
  const Footprint before = footprint(engine);

  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        auto client = engine.connect();
        cycles(client, "cycle" + std::to_string(t), kCyclesPerThread);
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(t)] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto took = std::chrono::steady_clock::now() - started;
  for (const auto& f : failures) EXPECT_EQ(f, "");
  std::printf(
      "%d spawn/delete cycles took %lld ms\n", kThreads * kCyclesPerThread,
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));

  // The cycling connections are closed by now; the engine reaps them as it sees the hang-ups.
  Footprint after;
  try {
    wait_until(
        [&] {
          after = footprint(engine);
          return after.fds == before.fds && after.threads == before.threads && after.rings == 0 &&
                 after.zombies == 0;
        },
        "the engine to return to its baseline", std::chrono::seconds(10));
  } catch (const std::exception&) {
  }
  EXPECT_EQ(after.fds, before.fds) << describe_fds(engine.pid());
  EXPECT_EQ(after.threads, before.threads);
  EXPECT_EQ(after.rings, 0u);
  EXPECT_EQ(after.zombies, 0u);
  EXPECT_EQ(before.zombies, 0u);
  EXPECT_LT(after.rss_kb - before.rss_kb, 16 * 1024)
      << "VmRSS grew from " << before.rss_kb << " kB to " << after.rss_kb << " kB";
  RecordProperty("rss_before_kb", std::to_string(before.rss_kb));
  RecordProperty("rss_after_kb", std::to_string(after.rss_kb));
  std::printf("footprint before: %d fds, %d threads, %ld kB; after: %d fds, %d threads, %ld kB\n",
              before.fds, before.threads, before.rss_kb, after.fds, after.threads, after.rss_kb);
  EXPECT_EQ(engine.call("list").header.at("actors").size(), 0u);
}

}  // namespace
}  // namespace backscroll::testing
