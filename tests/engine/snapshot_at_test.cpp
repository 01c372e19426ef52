// The screen at a past cursor through the real engine (docs/recorder.md; docs/protocol.md,
// `snapshot` with `at`, `at_event`, `at_time_ms`): the answer, fed to a fresh terminal, shows
// what a mirror fed every byte of the actor's history up to that cursor shows, the resizes
// applied where the engine made them; across a resize, a restart and a clear; and each bad
// point in time is refused with the protocol's error and the cursor to use instead.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/term/mirror.hpp"
#include "engine/term/mirror_compare.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

// A mirror fed the actor's history [from, to), resized at each `resize` event in between, as
// the engine's own mirror was.
std::unique_ptr<term::Mirror> mirror_of(EngineProcess& engine, const std::string& actor,
                                        std::uint64_t from, std::uint64_t to, std::uint16_t cols,
                                        std::uint16_t rows) {
  const std::string bytes = engine.history(actor, from).substr(0, to - from);
  const Frame events =
      engine.call("events", {{"actor", actor}, {"kinds", {"resize"}}, {"from", from}});
  auto mirror = std::make_unique<term::Mirror>(Cursor{from}, cols, rows);
  std::uint64_t fed = from;
  for (const Json& e : events.header.at("events")) {
    const std::uint64_t at = e.at("cursor");
    if (at > to) break;
    mirror->feed(std::string_view(bytes).substr(fed - from, at - fed));
    fed = at;
    mirror->resize(e.at("cols"), e.at("rows"));
  }
  mirror->feed(std::string_view(bytes).substr(fed - from, to - fed));
  return mirror;
}

// "" when the engine's screen at `at` shows what `reference` shows.
std::string check(EngineProcess& engine, const std::string& actor, const term::Mirror& reference,
                  Json point) {
  point["actor"] = actor;
  point["scrollback"] = 100;
  const Frame answer = engine.call("snapshot", point);
  if (answer.header.at("format") != "snapshot_v1") return "no snapshot: " + answer.header.dump();
  term::Mirror replayed(Cursor{0}, answer.header.at("cols"), answer.header.at("rows"));
  replayed.feed(answer.payload);
  term::CompareOptions compare;
  compare.history_lines = answer.header.at("scrollback_lines");
  return term::first_difference(reference, replayed, compare);
}

class SnapshotAt : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.start()); }

  EngineProcess engine_;
};

TEST_F(SnapshotAt, EveryCursorShowsWhatEveryByteBeforeItShowsAcrossAResize) {
  // Colours, a title, a full-screen redraw, lines that scroll; then a resize and more.
  const std::string script =
      "i=0; while [ $i -lt 150 ]; do printf '\\033[3%dmline %d\\033[m of the first part\\r\\n' "
      "$((i % 8)) $i; i=$((i+1)); done; printf '\\033]2;half\\007\\033[2J\\033[5;5Hboxed'; "
      "read x; i=0; while [ $i -lt 150 ]; do printf 'after %d \\033[1mbold\\033[m\\r\\n' $i; "
      "i=$((i+1)); done; exec sleep 1000";
  engine_.spawn("a", {"sh", "-c", script}, {{"cols", 70}, {"rows", 20}});
  engine_.wait_output("a", "boxed");
  const std::uint64_t before_resize = engine_.status("a").at("committed");
  engine_.call("resize", {{"actor", "a"}, {"cols", 100}, {"rows", 30}});
  engine_.call("input", {{"actor", "a"}}, "\r");
  engine_.wait_output("a", "after 149 ");
  wait_until([&] { return engine_.status("a").at("committed") > before_resize + 3000; }, "output");
  const std::uint64_t end = engine_.status("a").at("committed");

  std::mt19937_64 random(42);
  std::vector<std::uint64_t> cursors{0, before_resize - 1, before_resize, before_resize + 1, end};
  for (int i = 0; i < 25; ++i) cursors.push_back(random() % (end + 1));
  for (const std::uint64_t at : cursors) {
    const auto reference = mirror_of(engine_, "a", 0, at, 70, 20);
    EXPECT_EQ(check(engine_, "a", *reference, {{"at", at}}), "") << "at " << at;
  }
  // At the cursor before the resize the screen had the old size, at it the new one.
  const Frame old_size = engine_.call("snapshot", {{"actor", "a"}, {"at", before_resize - 1}});
  EXPECT_EQ(old_size.header.at("cols"), 70);
  const Frame new_size = engine_.call("snapshot", {{"actor", "a"}, {"at", before_resize}});
  EXPECT_EQ(new_size.header.at("cols"), 100);
  EXPECT_EQ(new_size.header.at("rows"), 30);
  EXPECT_EQ(new_size.header.at("cursor"), before_resize);
  EXPECT_LE(new_size.header.at("keyframe").get<std::uint64_t>(), before_resize);
}

TEST_F(SnapshotAt, AnEventOrATimeNamesTheCursor) {
  engine_.spawn(
      "p", {"sh", "-c",
            "printf 'one\\r\\n\\033]133;A\\007$ '; read x; printf 'two\\r\\n\\033]133;A\\007$ '; "
            "exec sleep 1000"});
  engine_.wait_output("p", "$ ");
  engine_.call("input", {{"actor", "p"}}, "\r");
  engine_.wait_output("p", "two");
  wait_until(
      [&] {
        return engine_.call("events", {{"actor", "p"}, {"kinds", {"prompt"}}})
                   .header.at("events")
                   .size() == 2;
      },
      "two prompts");
  const auto prompts =
      engine_.call("events", {{"actor", "p"}, {"kinds", {"prompt"}}}).header.at("events");
  const Frame last = engine_.call("snapshot", {{"actor", "p"}, {"at_event", "prompt:-1"}});
  EXPECT_EQ(last.header.at("cursor"), prompts[1].at("cursor"));
  const Frame first = engine_.call("snapshot", {{"actor", "p"}, {"at_event", "prompt:0"}});
  EXPECT_EQ(first.header.at("cursor"), prompts[0].at("cursor"));
  EXPECT_EQ(
      engine_.call("snapshot", {{"actor", "p"}, {"at_event", "prompt:-2"}}).header.at("cursor"),
      prompts[0].at("cursor"));
  // Now: everything committed so far.
  const Frame now = engine_.call(
      "snapshot",
      {{"actor", "p"}, {"at_time_ms", prompts[1].at("time_ms").get<std::int64_t>() + 60'000}});
  EXPECT_EQ(now.header.at("cursor"), engine_.status("p").at("committed"));
}

TEST_F(SnapshotAt, ARestartAndAClearStartFreshScreens) {
  engine_.spawn("r", {"sh", "-c", "printf 'first session\\r\\n'; exec sleep 1000"});
  engine_.wait_output("r", "first session");
  engine_.call("restart", {{"actor", "r"}});
  wait_until([&] { return engine_.status("r").at("session") == 2; }, "session 2");
  const std::uint64_t start2 = engine_.status("r").at("sessions").back().at("start");
  wait_until([&] { return engine_.status("r").at("committed") > start2; }, "session 2's line");
  const std::uint64_t end = engine_.status("r").at("committed");
  // Session 2's screen holds only its own line.
  const auto fresh = mirror_of(engine_, "r", start2, end, 80, 24);
  EXPECT_EQ(check(engine_, "r", *fresh, {{"at", end}}), "");
  const Frame at_start = engine_.call("snapshot", {{"actor", "r"}, {"at", start2}});
  EXPECT_EQ(at_start.header.at("cursor"), start2);
  // At start2 both session 1's last screen and session 2's first were: a cursor names the
  // latter, the seal the former.
  const auto first = mirror_of(engine_, "r", 0, start2, 80, 24);
  EXPECT_EQ(check(engine_, "r", *first, {{"at_event", "seal:-1"}}), "");
  const auto nothing = mirror_of(engine_, "r", start2, start2, 80, 24);
  EXPECT_EQ(check(engine_, "r", *nothing, {{"at", start2}}), "");

  const std::uint64_t floor = engine_.call("clear", {{"actor", "r"}}).header.at("floor");
  const Error expired =
      expect_error(engine_.try_call("snapshot", {{"actor", "r"}, {"at", floor - 1}}), "cleared");
  EXPECT_EQ(expired.code, Errc::cursor_expired);
  EXPECT_EQ(expired.cursor, floor);
  const Frame at_floor = engine_.call("snapshot", {{"actor", "r"}, {"at", floor}});
  EXPECT_EQ(at_floor.header.at("format"), "snapshot_v1");
  EXPECT_EQ(at_floor.header.at("scrollback_lines"), 0);
}

TEST_F(SnapshotAt, ABadPointInTimeIsRefusedWithTheCursorToUse) {
  engine_.spawn("b", {"sh", "-c", "printf 'abc'; exec sleep 1000"});
  engine_.wait_output("b", "abc");
  const auto refused = [this](Json point) {
    point["actor"] = "b";
    return expect_error(engine_.try_call("snapshot", point), point.dump());
  };
  Error e = refused({{"at", 4}});
  EXPECT_EQ(e.code, Errc::cursor_in_future);
  EXPECT_EQ(e.cursor, 3u);
  EXPECT_EQ(refused({{"at_event", "prompt:-1"}}).code, Errc::bad_request);
  EXPECT_EQ(refused({{"at_event", "nonsense"}}).code, Errc::bad_request);
  EXPECT_EQ(refused({{"at_event", "prompt:x"}}).code, Errc::bad_request);
  EXPECT_EQ(refused({{"at", "3"}}).code, Errc::bad_request);
  EXPECT_EQ(refused({{"at_time_ms", 1000}}).code, Errc::cursor_expired);
  EXPECT_EQ(refused({{"at_time_ms", "noon"}}).code, Errc::bad_request);
  EXPECT_EQ(refused({{"at", 1}, {"formats", {"raw_replay"}}}).code, Errc::bad_request);
}

TEST(SnapshotAtSmallRing, ACursorWhoseBytesAreGoneIsExpiredWithTheOldestItCanAnswer) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start(EngineConfig::with({"--ring-bytes", "65536"})));
  engine.spawn("s", {"sh", "-c",
                     "i=0; while [ $i -lt 4000 ]; do echo \"line $i of a flood\"; i=$((i+1)); "
                     "done; exec sleep 1000"});
  // 4000 lines of at least 20 bytes: far more than the ring holds.
  wait_until([&] { return engine.status("s").at("committed") >= 80'000; }, "the flood");
  // The mirror keeps a keyframe within the ring (every quarter of it parsed): wait for one.
  wait_until(
      [&] {
        const Json keyframes =
            engine.call("events", {{"actor", "s"}, {"kinds", {"keyframe"}}}).header.at("events");
        return !keyframes.empty() &&
               keyframes.back().at("cursor") >= engine.status("s").at("floor");
      },
      "a keyframe within the ring");
  const Error e = expect_error(engine.try_call("snapshot", {{"actor", "s"}, {"at", 10}}), "old");
  EXPECT_EQ(e.code, Errc::cursor_expired);
  ASSERT_TRUE(e.cursor);
  const std::uint64_t oldest = *e.cursor;
  EXPECT_GE(oldest, engine.status("s").at("floor").get<std::uint64_t>());
  // The cursor it names can be answered.
  const Frame there = engine.call("snapshot", {{"actor", "s"}, {"at", oldest}});
  EXPECT_EQ(there.header.at("format"), "snapshot_v1");
}

}  // namespace
}  // namespace backscroll::testing
