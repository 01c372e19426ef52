// The far ends of the 64-bit cursor space through the real engine (backscrolld --first-cursor,
// a test seam): cursors are plain 64-bit numbers on the wire and in transcripts.
// - An actor whose cursors cross 2^63 streams, seals, serves history and restarts exactly, with
//   persistence (its lease) on.
// - At kCursorEnd (2^64 - 2^32) the output stops: no byte is written at or past it, nothing wraps,
//   the session still stops and seals there, and everything before it reads back exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "shm/cursor.hpp"
#include "tests/engine/engine_process.hpp"
#include "tests/engine/pattern.hpp"

namespace backscroll::testing {
namespace {

constexpr std::uint32_t kSeed = 11;

EngineConfig starting_at(Cursor first) {
  EngineConfig config;
  config.settings_yaml = "terminal_transcript:\n  persist: true\n";
  config.args.insert(config.args.end(), {"--first-cursor", std::to_string(value(first))});
  return config;
}

std::vector<std::string> pattern_argv(std::uint64_t bytes) {
  return {child_binary(), "pattern", std::to_string(kSeed), std::to_string(bytes), "raw"};
}

// The actor's history from `from` to `to` is the pattern from its first byte at `start`.
void expect_history(EngineProcess& engine, Cursor start, Cursor from, Cursor to) {
  const std::string got = engine.history("a", value(from));
  ASSERT_EQ(got.size(), to - from);
  const auto bad =
      Pattern(kSeed, false).first_mismatch(from - start, std::as_bytes(std::span(got)));
  EXPECT_FALSE(bad) << "byte " << *bad << " after the session's start differs";
}

TEST(CursorSpace, AnActorCrossingTwoToTheSixtyThreeStreamsSealsAndRestartsExactly) {
  const Cursor first{(std::uint64_t{1} << 63) - 1000};
  constexpr std::uint64_t kBytes = 3u << 20;
  TempDir dir;
  EngineConfig config = starting_at(first);
  config.runtime_dir = dir.path() / "rt";
  {
    EngineProcess engine;
    ASSERT_TRUE(engine.start(config));
    const Json spawned = engine.spawn("a", pattern_argv(kBytes));
    EXPECT_EQ(spawned.at("cursor").get<std::uint64_t>(), value(first));
    const Json sealed = engine.wait_sealed("a");
    EXPECT_EQ(sealed.at("end").get<std::uint64_t>(), value(first) + kBytes);
    expect_history(engine, first, first, first + kBytes);
    expect_history(engine, first, first + 999, first + kBytes);  // from just below 2^63
    // The mirror followed past 2^63 too: once it caught up, the snapshot is tagged at the end.
    wait_until(
        [&] {
          return engine.call("snapshot", {{"actor", "a"}})
                     .header.at("cursor")
                     .get<std::uint64_t>() == value(first) + kBytes;
        },
        "a snapshot tagged with the session's end");
    engine.stop();
  }
  EngineProcess engine;
  ASSERT_TRUE(engine.start(config));
  const Json status = engine.status("a");
  EXPECT_EQ(status.at("committed").get<std::uint64_t>(), value(first) + kBytes)
      << "exact after a clean stop";
  EXPECT_TRUE(status.at("transcript").at("damaged").empty());
  expect_history(engine, first, first + (1u << 20), first + kBytes);  // from the transcript
}

TEST(CursorSpace, AtTheEndOfTheCursorSpaceOutputStopsAndNothingWraps) {
  const Cursor first = kCursorEnd - (1u << 20);
  EngineProcess engine;
  ASSERT_TRUE(engine.start(starting_at(first)));
  engine.spawn("a", pattern_argv(2u << 20));
  wait_until(
      [&] { return engine.status("a").at("committed").get<std::uint64_t>() == value(kCursorEnd); },
      "the output to reach the end of the cursor space");
  wait_until([&] { return engine.log().find("the cursor space is used up") != std::string::npos; },
             "the engine to say why the output stops");
  EXPECT_EQ(engine.status("a").at("committed").get<std::uint64_t>(), value(kCursorEnd));
  engine.call("stop", {{"actor", "a"}, {"grace_ms", 0}});
  const Json sealed = engine.wait_sealed("a");
  EXPECT_EQ(sealed.at("end").get<std::uint64_t>(), value(kCursorEnd));
  expect_history(engine, first, first, kCursorEnd);
  const Error past =
      expect_error(engine.try_call("history", {{"actor", "a"}, {"from", value(kCursorEnd) + 1}}),
                   "history past");
  EXPECT_EQ(past.code, Errc::cursor_in_future);
  // Another actor has a cursor space of its own.
  engine.spawn("b", {"true"});
  EXPECT_EQ(engine.wait_sealed("b").at("start").get<std::uint64_t>(), value(first));
}

}  // namespace
}  // namespace backscroll::testing
