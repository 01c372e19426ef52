// Stopped actors (docs/transcripts.md, "Stopped actors"): after a seal the session's last 256 KiB
// go to the completed-session cache (8 MiB in all, least recently used first out) and, after
// --release-ms, the idle ring's memory is given back.
// - History below the released ring's floor comes from the cache, seamless with a new session.
// - A released ring holds no memory (its data memfd keeps no pages).
// - Past 8 MiB the least recently used actor's tail goes; a history hit counts as a use.
// - With persistence the transcript answers what the cache no longer holds.
// - A clear drops the cached tail with the ring.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <string>
#include <vector>

#include "tests/engine/engine_process.hpp"
#include "tests/engine/pattern.hpp"

namespace backscroll::testing {
namespace {

constexpr std::uint32_t kSeed = 11;
constexpr std::uint64_t kTail = 256 * 1024;

std::string expected(std::uint64_t from, std::uint64_t to) {
  std::string out(to - from, '\0');
  Pattern(kSeed, /*crlf=*/false).fill(from, out);
  return out;
}

// The pattern child: `bytes` raw, then exits (or, with `wait`, stays until stopped).
std::vector<std::string> pattern(std::uint64_t bytes, bool wait = false) {
  std::vector<std::string> argv{child_binary(), "pattern", std::to_string(kSeed),
                                std::to_string(bytes), "raw"};
  if (wait) argv.insert(argv.end(), {"0", "wait"});
  return argv;
}

EngineConfig releasing(std::string ring_bytes = "1048576") {
  return EngineConfig::with({"--grace-ms", "500", "--drain-ms", "300", "--release-ms", "20",
                             "--ring-bytes", std::move(ring_bytes)});
}

void wait_released(EngineProcess& engine, const std::string& actor) {
  wait_until(
      [&] {
        const Json s = engine.status(actor);
        return s.at("state") == "idle" && s.at("floor") == s.at("committed");
      },
      "the ring of " + actor + " to be released");
}

Error history_error(EngineProcess& engine, const std::string& actor, std::uint64_t from) {
  return expect_error(engine.try_call("history", {{"actor", actor}, {"from", from}}),
                      "history of " + actor + " from " + std::to_string(from));
}

TEST(StoppedActor, ItsTailStaysInTheCacheAndTheRingsMemoryIsGivenBack) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start(releasing("4194304")));  // holds all of session 2
  constexpr std::uint64_t kBytes = 1'000'000;
  engine.spawn("log", pattern(kBytes, /*wait=*/true));
  engine.wait_output("log", expected(kBytes - 100, kBytes));
  engine.call("stop", {{"actor", "log"}});
  wait_released(engine, "log");

  struct stat st {};
  const std::string data = "/proc/" + std::to_string(engine.pid()) + "/fd/" +
                           std::to_string(engine.ring_of("log").data_fd);
  ASSERT_EQ(::stat(data.c_str(), &st), 0) << data;
  EXPECT_LT(static_cast<std::uint64_t>(st.st_blocks) * 512, 64u * 1024)
      << "the released ring still holds memory";

  const Error old = history_error(engine, "log", 0);
  EXPECT_EQ(old.code, Errc::cursor_expired);
  EXPECT_EQ(old.cursor, kBytes - kTail) << "the oldest retained byte is the cache's first";
  // status says so too: the ring is empty, its history is not.
  const Json status = engine.status("log");
  EXPECT_EQ(status.at("floor"), kBytes);
  EXPECT_EQ(status.at("oldest"), kBytes - kTail);
  EXPECT_EQ(engine.history("log", kBytes - kTail), expected(kBytes - kTail, kBytes));

  // A new session: the cache and the ring answer as one stream.
  engine.call("restart", {{"actor", "log"}});
  wait_until([&] { return engine.status("log").at("committed") == 2 * kBytes; }, "session 2");
  EXPECT_EQ(engine.history("log", kBytes - kTail),
            expected(kBytes - kTail, kBytes) + expected(0, kBytes));
  engine.call("stop", {{"actor", "log"}, {"grace_ms", 0}});
}

TEST(StoppedActor, TheLeastRecentlyUsedTailsGoPastEightMebibytes) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start(releasing()));
  constexpr int kActors = 33;  // 32 tails of 256 KiB fill 8 MiB
  constexpr std::uint64_t kBytes = 300'000;
  for (int i = 0; i < kActors; ++i) {
    const std::string name = "a" + std::to_string(i);
    if (i == kActors - 1) {  // a0 used last: a1 is now the least recently used
      EXPECT_EQ(engine.history("a0", kBytes - kTail), expected(kBytes - kTail, kBytes));
    }
    engine.spawn(name, pattern(kBytes));
    engine.wait_sealed(name);
    wait_released(engine, name);
  }
  EXPECT_EQ(engine.history("a0", kBytes - kTail), expected(kBytes - kTail, kBytes));
  const Error evicted = history_error(engine, "a1", kBytes - kTail);
  EXPECT_EQ(evicted.code, Errc::cursor_expired);
  EXPECT_EQ(evicted.cursor, kBytes) << "nothing below the released floor is left";
  for (int i = 2; i < kActors; ++i) {
    const std::string name = "a" + std::to_string(i);
    EXPECT_EQ(engine.history(name, kBytes - kTail), expected(kBytes - kTail, kBytes)) << name;
  }
}

TEST(StoppedActor, TheTranscriptAnswersWhatTheCacheDoesNotHold) {
  EngineProcess engine;
  EngineConfig config = releasing();
  config.settings_yaml = "terminal_transcript:\n  persist: true\n";
  ASSERT_TRUE(engine.start(config));
  constexpr std::uint64_t kBytes = 600'000;
  engine.spawn("log", pattern(kBytes));
  engine.wait_sealed("log");
  wait_released(engine, "log");
  EXPECT_EQ(engine.history("log"), expected(0, kBytes));
}

TEST(StoppedActor, AClearDropsTheCachedTail) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start(releasing()));
  constexpr std::uint64_t kBytes = 100'000;
  engine.spawn("log", pattern(kBytes));
  engine.wait_sealed("log");
  wait_released(engine, "log");
  EXPECT_EQ(engine.history("log"), expected(0, kBytes));  // all of it fits the cache
  engine.call("clear", {{"actor", "log"}});
  const Error gone = history_error(engine, "log", 0);
  EXPECT_EQ(gone.code, Errc::cursor_expired);
  EXPECT_EQ(gone.cursor, kBytes);
}

}  // namespace
}  // namespace backscroll::testing
