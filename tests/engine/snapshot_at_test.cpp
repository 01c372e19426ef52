// The screen at a past cursor through the real engine (docs/recorder.md; docs/protocol.md,
// `snapshot` with `at`, `at_event`, `at_time_ms`): the answer, fed to a fresh terminal, shows
// what a mirror fed every byte of the actor's history up to that cursor shows, the resizes
// applied where the engine made them; across a resize, a restart and a clear; and each bad
// point in time is refused with the protocol's error and the cursor to use instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

// Whether some transcript segment under `root` holds `text`.
bool transcript_holds(const std::filesystem::path& root, std::string_view text) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".seg") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes(std::istreambuf_iterator<char>(in), {});
    if (bytes.find(text) != std::string::npos) return true;
  }
  return false;
}

// A restarted engine brings each persisted actor's recording back from its transcript folder
// (docs/recorder.md, "Persistence" and "Cold restore").
class SnapshotAtRestart : public ::testing::Test {
 protected:
  EngineConfig config() const {
    EngineConfig c;
    c.settings_yaml = "terminal_transcript:\n  persist: true\n";
    c.runtime_dir = dir_.path() / "rt";
    return c;
  }
  // Every event of the actor's track, as JSON.
  static Json events_of(EngineProcess& engine, const std::string& actor) {
    return engine.call("events", {{"actor", actor}}).header.at("events");
  }
  TempDir dir_;
};

const std::string kScreenScript =
    "i=0; while [ $i -lt 120 ]; do printf '\\033[3%dmline %d\\033[m of output\\r\\n' "
    "$((i % 8)) $i; i=$((i+1)); done; printf '\\033]2;the title\\007\\033[2J\\033[3;4H"
    "\\033[1;44mboxed\\033[m\\033[6;1Hlast words'";

TEST_F(SnapshotAtRestart, ARestoredActorShowsItsLastScreenAndEveryCursorBeforeTheRestart) {
  Json events_before;
  std::uint64_t end = 0;
  {
    EngineProcess engine;
    ASSERT_TRUE(engine.start(config()));
    engine.spawn("a", {"sh", "-c", kScreenScript}, {{"cols", 60}, {"rows", 12}});
    end = engine.wait_sealed("a").at("end");
    events_before = events_of(engine, "a");
    engine.stop();
  }
  EngineProcess engine;
  ASSERT_TRUE(engine.start(config()));
  ASSERT_EQ(engine.status("a").at("committed"), end);
  // The live screen is the last one, not a blank terminal.
  const auto last = mirror_of(engine, "a", 0, end, 60, 12);
  EXPECT_EQ(check(engine, "a", *last, Json::object()), "");
  const Frame live = engine.call("snapshot", {{"actor", "a"}});
  EXPECT_EQ(live.header.at("cursor"), end);
  EXPECT_NE(live.payload.find("boxed"), std::string::npos);
  // The track came back as it was: same events, same numbers (and the last screen's keyframe,
  // which may have come after the events were read).
  const Json events_after = events_of(engine, "a");
  for (const Json& e : events_before) {
    const auto same = std::find_if(events_after.begin(), events_after.end(),
                                   [&](const Json& a) { return a.at("seq") == e.at("seq"); });
    ASSERT_NE(same, events_after.end()) << e.dump();
    EXPECT_EQ(*same, e);
  }
  EXPECT_TRUE(std::any_of(events_after.begin(), events_after.end(), [&](const Json& e) {
    return e.at("kind") == "keyframe" && e.at("cursor") == end;
  })) << "the last screen's keyframe";
  // Any cursor of the transcript, an event, a time.
  std::mt19937_64 random(7);
  std::vector<std::uint64_t> cursors{0, end / 2, end - 1, end};
  for (int i = 0; i < 12; ++i) cursors.push_back(random() % (end + 1));
  for (const std::uint64_t at : cursors) {
    const auto reference = mirror_of(engine, "a", 0, at, 60, 12);
    EXPECT_EQ(check(engine, "a", *reference, {{"at", at}}), "") << "at " << at;
  }
  EXPECT_EQ(check(engine, "a", *last, {{"at_event", "seal:-1"}}), "");
  const Json title =
      engine.call("events", {{"actor", "a"}, {"kinds", {"title"}}}).header.at("events").at(0);
  const auto at_title = mirror_of(engine, "a", 0, title.at("cursor"), 60, 12);
  EXPECT_EQ(check(engine, "a", *at_title, {{"at_event", "title:0"}}), "");
  // A new session after the restore starts from a fresh terminal, numbered on.
  engine.call("restart", {{"actor", "a"}});
  const std::uint64_t end2 = engine.wait_sealed("a").at("end");
  const auto second = mirror_of(engine, "a", end, end2, 60, 12);
  EXPECT_EQ(check(engine, "a", *second, Json::object()), "");
  EXPECT_EQ(check(engine, "a", *last, {{"at_event", "seal:-2"}}), "");
  const Json spawns =
      engine.call("events", {{"actor", "a"}, {"kinds", {"spawn"}}}).header.at("events");
  ASSERT_EQ(spawns.size(), 2u);
  EXPECT_GT(spawns[1].at("seq"), events_before.back().at("seq"));
}

TEST_F(SnapshotAtRestart, AfterACrashTheScreenComesBackFromTheLastKeyframeWritten) {
  std::unique_ptr<term::Mirror> reference;
  {
    EngineProcess engine;
    ASSERT_TRUE(engine.start(config()));
    engine.spawn("a", {"sh", "-c", kScreenScript + "; exec sleep 1000"},
                 {{"cols", 60}, {"rows", 12}});
    engine.wait_output("a", "last words");
    // Written to the transcript (not synced: a crash of the engine alone keeps what it wrote).
    wait_until([&] { return transcript_holds(dir_.path(), "last words"); }, "the transcript");
    const std::uint64_t committed = engine.status("a").at("committed");
    reference = mirror_of(engine, "a", 0, committed, 60, 12);
    engine.kill_hard();  // no seal, no last keyframe: a replay from an older one
  }
  EngineProcess engine;
  ASSERT_TRUE(engine.start(config()));
  EXPECT_EQ(check(engine, "a", *reference, Json::object()), "");
}

TEST_F(SnapshotAtRestart, WithoutARecordingTheRestoredScreenIsBlank) {
  std::uint64_t end = 0;
  {
    EngineProcess engine;
    ASSERT_TRUE(engine.start(config()));
    engine.spawn("a", {"sh", "-c", "printf 'some text'"});
    end = engine.wait_sealed("a").at("end");
    engine.stop();
  }
  // A transcript written before recordings were kept (or whose annexes were lost).
  std::size_t removed = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path())) {
    if (entry.path().extension() == ".rec") removed += std::filesystem::remove(entry.path());
  }
  ASSERT_GT(removed, 0u);
  EngineProcess engine;
  ASSERT_TRUE(engine.start(config()));
  const auto blank = mirror_of(engine, "a", end, end, 80, 24);
  EXPECT_EQ(check(engine, "a", *blank, Json::object()), "");
  const auto text = mirror_of(engine, "a", 0, end, 80, 24);
  EXPECT_NE(check(engine, "a", *text, {{"at", end}}), "") << "no keyframe to replay from";
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
