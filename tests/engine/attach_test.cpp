// Snapshots and attachments through a real engine (docs/protocol.md, "Snapshots and attachments").
// - A snapshot of an actor with megabytes of history is small, safe to replay, and exact: a
//   fresh terminal fed it and then the raw bytes from its cursor shows what one fed every byte
//   shows (libvterm as the second emulator).
// - A controller's attach resizes first and gets a snapshot at its size; a replaced controller's
//   resize is refused (stale_controller), a viewer's too; the controller's connection ending
//   ends its control (who gets it then: ownership_test.cpp).
// - A reattach with a retained cursor resumes without a snapshot; a cleared or new-session
//   actor never shows what came before in a snapshot.
// - A client without snapshot_v1 gets raw_replay from the oldest retained cursor.
// - The engine never answers a program's terminal queries when no one is attached.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>

#include "engine/term/reference/vterm_reference.hpp"
#include "engine/term/snapshot_grammar.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

// Feeds `bytes` in writes of at most 32 KiB ending after a LF, as a terminal reads them.
void feed(ReferenceTerminal& t, std::string_view bytes) {
  while (!bytes.empty()) {
    std::size_t n = std::min<std::size_t>(bytes.size(), 32 * 1024);
    if (n < bytes.size()) {
      const std::size_t lf = bytes.substr(0, n).rfind('\n');
      if (lf != std::string_view::npos) n = lf + 1;
    }
    t.feed(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
}

class Attach : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.start()); }

  Frame snapshot(const std::string& actor, Json extra = Json::object()) {
    extra["actor"] = actor;
    return engine_.call("snapshot", std::move(extra));
  }

  EngineProcess engine_;
};

TEST_F(Attach, SnapshotOfMegabytesOfHistoryIsSmallSafeAndExact) {
  engine_.spawn("log", {"awk",
                        "BEGIN { for (i = 0; i < 60000; i++) printf "
                        "\"\\033[3%dmline %d of the output\\033[m\\n\", i % 8, i }"});
  engine_.wait_sealed("log");
  const std::string all = engine_.history("log");
  ASSERT_GT(all.size(), 1'500'000u);

  const Frame snap = snapshot("log");
  ASSERT_EQ(snap.header.value("format", ""), "snapshot_v1") << snap.header.dump();
  EXPECT_EQ(snap.header.at("cols"), 80);
  EXPECT_EQ(snap.header.at("rows"), 24);
  EXPECT_EQ(snap.header.at("bytes"), snap.payload.size());
  EXPECT_EQ(snap.header.at("scrollback_lines"), 512);
  EXPECT_LT(snap.payload.size(), 64u * 1024);
  std::string why;
  EXPECT_TRUE(term::is_safe_snapshot(snap.payload, &why)) << why;

  const std::uint64_t cursor = snap.header.at("cursor");
  ASSERT_LE(cursor, all.size());
  ReferenceTerminal fresh(80, 24);
  feed(fresh, snap.payload);
  feed(fresh, std::string_view(all).substr(cursor));
  ReferenceTerminal whole(80, 24);
  feed(whole, all);
  EXPECT_EQ(first_difference(fresh.model(), whole.model()), "");
}

TEST_F(Attach, ControllerAttachResizesFirstAndSnapshotsAtItsSize) {
  engine_.spawn("sh", {"sh", "-c", "printf 'ready\\n'; exec sleep 60"});
  engine_.wait_output("sh", "ready");
  const Frame r = engine_.call(
      "attach", {{"actor", "sh"}, {"role", "controller"}, {"cols", 100}, {"rows", 30}});
  EXPECT_EQ(r.header.at("role"), "controller");
  EXPECT_EQ(r.header.at("mode"), "snapshot");
  EXPECT_EQ(r.header.at("format"), "snapshot_v1");
  EXPECT_EQ(r.header.at("cols"), 100);
  EXPECT_EQ(r.header.at("rows"), 30);
  EXPECT_GT(r.header.at("attachment").get<std::uint64_t>(), 0u);
  EXPECT_EQ(engine_.status("sh").at("cols"), 100);
  EXPECT_NE(r.payload.find("ready"), std::string::npos);
}

// The first bug of issue 15: a shell at its prompt (no line feed after it), a long line that
// wrapped and goes on, a combining mark as the last bytes. A controller attaching from another
// size used to get raw_replay (incomplete_sequence, cursor 0): the mirror held the text back.
// Now the snapshot is snapshot_v1 at the new size, tagged with the committed cursor.
TEST_F(Attach, ResizingControllerAttachAtAPromptGetsTheScreenAtTheCommittedCursor) {
  struct Program {
    std::string name, script, last_bytes;
  };
  const std::vector<Program> programs = {
      {"prompt", "printf '\\033[1;32muser@host\\033[m:~$ '", ":~$ "},
      {"wrapped", "printf 'x%.0s' $(seq 1 130)", std::string(130, 'x')},
      {"mark", "printf 'caf\\145\\314\\201'", "cafe\xcc\x81"},
  };
  for (const auto& [name, script, last_bytes] : programs) {
    engine_.spawn(name, {"sh", "-c", script + "; exec sleep 60"});
    engine_.wait_output(name, last_bytes);
    const std::uint64_t committed = engine_.status(name).at("committed");
    const Frame r = engine_.call(
        "attach", {{"actor", name}, {"role", "controller"}, {"cols", 100}, {"rows", 30}});
    ASSERT_EQ(r.header.value("format", ""), "snapshot_v1") << name << ": " << r.header.dump();
    EXPECT_EQ(r.header.at("cursor").get<std::uint64_t>(), committed) << name;
    EXPECT_EQ(r.header.at("cols"), 100) << name;
    EXPECT_EQ(r.header.at("rows"), 30) << name;
    std::string why;
    EXPECT_TRUE(term::is_safe_snapshot(r.payload, &why)) << name << ": " << why;
    // The resize ended the glyph being printed (docs/snapshot.md): the snapshot does not end
    // inside its text run with the last glyph printed again.
    const std::string last = name == "prompt" ? " " : name == "wrapped" ? "x" : "e\xcc\x81";
    EXPECT_NE(r.payload.substr(r.payload.size() - last.size()), last) << name;
  }
}

TEST_F(Attach, OnlyTheLatestControllerResizes) {
  engine_.spawn("sh", {"sleep", "60"});
  auto a = engine_.connect();
  auto b = engine_.connect();
  auto c = engine_.connect();
  const auto first = a.call("attach", {{"actor", "sh"}, {"role", "controller"}});
  ASSERT_TRUE(first) << first.error().describe();
  const auto second = b.call("attach", {{"actor", "sh"}, {"role", "controller"}});
  ASSERT_TRUE(second) << second.error().describe();
  const auto viewer = c.call("attach", {{"actor", "sh"}, {"role", "viewer"}});
  ASSERT_TRUE(viewer) << viewer.error().describe();
  const std::uint64_t a_id = first->header.at("attachment");
  const std::uint64_t b_id = second->header.at("attachment");
  const std::uint64_t c_id = viewer->header.at("attachment");
  EXPECT_NE(a_id, b_id);

  auto resize = [&](control::ControlClient& client, std::optional<std::uint64_t> id) {
    Json fields{{"actor", "sh"}, {"cols", 90}, {"rows", 20}};
    if (id) fields["attachment"] = *id;
    return client.call("resize", std::move(fields));
  };
  auto stale = resize(a, a_id);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Errc::stale_controller);
  auto by_viewer = resize(c, c_id);
  ASSERT_FALSE(by_viewer);
  EXPECT_EQ(by_viewer.error().code, Errc::bad_request);
  auto anonymous = resize(a, std::nullopt);
  ASSERT_FALSE(anonymous);
  EXPECT_EQ(anonymous.error().code, Errc::stale_controller);
  EXPECT_TRUE(resize(b, b_id));
  EXPECT_EQ(engine_.status("sh").at("cols"), 90);

  // The controller's connection ends: the one it displaced owns the actor again
  // (tests/engine/ownership_test.cpp); once that one leaves too, anyone may resize again.
  b = engine_.connect();
  wait_until([&] { return static_cast<bool>(resize(a, a_id)); },
             "the displaced controller to own the actor again");
  EXPECT_FALSE(resize(a, std::nullopt));
  a = engine_.connect();
  wait_until([&] { return static_cast<bool>(resize(c, std::nullopt)); },
             "the actor to have no controller");
}

TEST_F(Attach, OfTwoControllersAttachingAtOnceExactlyOneControls) {
  engine_.spawn("sh", {"sleep", "60"});
  for (int round = 0; round < 20; ++round) {
    auto a = engine_.connect();
    auto b = engine_.connect();
    auto attach = [](control::ControlClient& client, int cols) {
      return client.call("attach",
                         {{"actor", "sh"}, {"role", "controller"}, {"cols", cols}, {"rows", 24}});
    };
    auto fa = std::async(std::launch::async, [&] { return attach(a, 70); });
    auto fb = std::async(std::launch::async, [&] { return attach(b, 71); });
    const auto ra = fa.get();
    const auto rb = fb.get();
    ASSERT_TRUE(ra && rb);
    const int controls =
        static_cast<int>(
            static_cast<bool>(a.call("resize", {{"actor", "sh"},
                                                {"cols", 72},
                                                {"rows", 24},
                                                {"attachment", ra->header.at("attachment")}}))) +
        static_cast<int>(
            static_cast<bool>(b.call("resize", {{"actor", "sh"},
                                                {"cols", 73},
                                                {"rows", 24},
                                                {"attachment", rb->header.at("attachment")}})));
    EXPECT_EQ(controls, 1) << "round " << round;
    // Each snapshot is at the size its own attach set (taken after its resize).
    EXPECT_EQ(ra->header.at("cols"), 70);
    EXPECT_EQ(rb->header.at("cols"), 71);
  }
}

TEST_F(Attach, ReattachWithARetainedCursorResumesAndAfterAClearSnapshots) {
  engine_.spawn("sh", {"sh", "-c", "printf 'secret output\\n'; exec sleep 60"});
  engine_.wait_output("sh", "secret");
  const std::string epoch = engine_.status("sh").at("epoch");
  const Frame first = engine_.call("attach", {{"actor", "sh"}, {"role", "viewer"}});
  const std::uint64_t cursor = first.header.at("cursor");

  const Frame again = engine_.call(
      "attach", {{"actor", "sh"}, {"role", "viewer"}, {"since", cursor}, {"epoch", epoch}});
  EXPECT_EQ(again.header.at("mode"), "resume");
  EXPECT_EQ(again.header.at("cursor"), cursor);
  EXPECT_TRUE(again.payload.empty());

  const Frame other_epoch = engine_.call(
      "attach", {{"actor", "sh"}, {"role", "viewer"}, {"since", cursor}, {"epoch", "0"}});
  EXPECT_EQ(other_epoch.header.at("mode"), "snapshot");

  engine_.call("clear", {{"actor", "sh"}, {"screen", true}});  // the screen showed the secret
  const Frame after =
      engine_.call("attach", {{"actor", "sh"}, {"role", "viewer"}, {"since", 0}, {"epoch", epoch}});
  EXPECT_EQ(after.header.at("mode"), "snapshot");
  EXPECT_EQ(after.payload.find("secret"), std::string::npos);
  const Frame snap = snapshot("sh");
  EXPECT_EQ(snap.payload.find("secret"), std::string::npos);
  EXPECT_GE(snap.header.at("cursor").get<std::uint64_t>(),
            engine_.status("sh").at("floor").get<std::uint64_t>());
}

TEST_F(Attach, ANewSessionStartsAFreshScreen) {
  engine_.spawn("sh", {"sh", "-c", "printf 'pid:%s\\n' $$; exec sleep 60"});
  engine_.wait_output("sh", "pid:");
  const std::string old_pid = std::to_string(engine_.status("sh").at("pid").get<int>());
  engine_.call("restart", {{"actor", "sh"}, {"grace_ms", 100}});
  const std::uint64_t start = engine_.status("sh").at("sessions").back().at("start");
  const Frame snap = snapshot("sh");
  EXPECT_GE(snap.header.at("cursor").get<std::uint64_t>(), start);
  EXPECT_EQ(snap.payload.find("pid:" + old_pid), std::string::npos);
}

// The snapshot lane: an actor whose mirror has parsed every committed byte is answered from its
// last snapshot on the io thread (the mirror thread may be busy with other actors' floods),
// exactly as the mirror would answer; new output, other options, a resize or a clear go to
// the mirror again.
TEST_F(Attach, AQuietActorsSnapshotIsAnsweredAtOnceUntilAnythingChangesIt) {
  engine_.spawn("q", {"sh", "-c", "seq 1 40; exec cat"});
  engine_.wait_output("q", "40\r\n");
  const auto quick = [&] {
    return engine_.call("status").header.at("mirror").at("quick_snapshots").get<std::uint64_t>();
  };
  const auto committed = [&] { return engine_.status("q").at("committed"); };
  Frame first;
  wait_until([&] { return (first = snapshot("q")).header.at("cursor") == committed(); },
             "a snapshot at the committed cursor");
  const std::uint64_t before = quick();
  const Frame again = snapshot("q");
  EXPECT_EQ(quick(), before + 1) << "answered by the lane";
  EXPECT_EQ(again.header.at("format"), "snapshot_v1");
  for (const char* field : {"cursor", "cols", "rows", "bytes", "scrollback_lines"})
    EXPECT_EQ(again.header.at(field), first.header.at(field)) << field;
  EXPECT_EQ(again.payload, first.payload);
  snapshot("q", {{"scrollback", 5}});
  EXPECT_EQ(quick(), before + 1) << "other options go to the mirror";

  // New output: the next answer shows it.
  engine_.call("input", {{"actor", "q"}}, "fresh line\r");
  engine_.wait_output("q", "fresh line\r\nfresh line\r\n");  // echo, then cat
  Frame fresh;
  wait_until([&] { return (fresh = snapshot("q")).header.at("cursor") == committed(); },
             "a snapshot with the new line");
  EXPECT_NE(fresh.payload.find("fresh line"), std::string::npos);

  // A resize changes the screen without a byte: the kept snapshot is not used.
  engine_.call("resize", {{"actor", "q"}, {"cols", 50}, {"rows", 10}});
  const Frame resized = snapshot("q");
  EXPECT_EQ(resized.header.at("cols"), 50);
  EXPECT_EQ(resized.header.at("rows"), 10);
  EXPECT_EQ(snapshot("q").payload, resized.payload);  // kept again, at the new size

  // Neither does a clear that keeps the screen and drops the history.
  ASSERT_GT(resized.header.at("scrollback_lines").get<int>(), 0);
  engine_.call("clear", {{"actor", "q"}});
  const Frame cleared = snapshot("q");
  EXPECT_EQ(cleared.header.at("scrollback_lines"), 0) << cleared.header.dump();
}

// The lane also answers while bytes arrive that the mirror has not parsed (a mirror coasting
// through a flood, or, here, holding back an unfinished sequence): its state is still the one
// the kept snapshot shows. Once it parses on, the mirror answers again, with what it parsed.
TEST_F(Attach, TheLaneAnswersWhileTheMirrorHasParsedNothingNew) {
  engine_.spawn("h", {"sh", "-c",
                      "stty -echo; printf 'plain\\n\\033[1;'; read x; printf '7mbold\\n'; "
                      "exec sleep 60"});
  engine_.wait_output("h", "\033[1;");
  const auto quick = [&] {
    return engine_.call("status").header.at("mirror").at("quick_snapshots").get<std::uint64_t>();
  };
  const std::uint64_t committed = engine_.status("h").at("committed");
  const std::uint64_t held_back = committed - 4;  // `ESC [ 1 ;` waits for its final byte
  Frame first;
  wait_until([&] { return (first = snapshot("h")).header.at("cursor") == held_back; },
             "a snapshot up to the unfinished sequence");
  const std::uint64_t before = quick();
  const Frame again = snapshot("h");
  EXPECT_EQ(quick(), before + 1) << "answered by the lane though committed is further";
  EXPECT_EQ(again.header.at("cursor"), held_back);
  EXPECT_EQ(again.payload, first.payload);

  engine_.call("input", {{"actor", "h"}}, "go\r");
  engine_.wait_output("h", "bold\r\n");
  Frame after;
  wait_until(
      [&] {
        return (after = snapshot("h")).header.at("cursor") == engine_.status("h").at("committed");
      },
      "a snapshot with the rest parsed");
  EXPECT_NE(after.payload.find("bold"), std::string::npos);
  EXPECT_NE(after.payload.find("\033[0;1;7mbold"), std::string::npos) << after.payload;
}

// The `timing` option: the answer says where the engine spent the request's time, in parts
// that fit inside what the client waited; without it, the answer has no such field.
TEST_F(Attach, ASnapshotAskedWithTimingSaysWhereItsTimeWent) {
  engine_.spawn("t", {"sh", "-c", "seq 1 2000; exec sleep 60"});
  engine_.wait_output("t", "2000\r\n");
  EXPECT_FALSE(snapshot("t").header.contains("timing_us"));
  bool through_the_mirror = false;
  bool by_the_lane = false;
  for (int i = 0; i < 50 && !(through_the_mirror && by_the_lane); ++i) {
    // Other options than the last request's go to the mirror thread; the same ones, with
    // nothing new, are answered by the lane.
    const auto start = std::chrono::steady_clock::now();
    const Frame r = snapshot("t", {{"timing", true}, {"scrollback", i % 2 == 0 ? 100 : 200}});
    const auto waited_us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count();
    ASSERT_EQ(r.header.at("format"), "snapshot_v1");
    const Json& timing = r.header.at("timing_us");
    std::int64_t sum = 0;
    for (const char* part : {"to_mirror", "catch_up", "build", "to_answer"}) {
      ASSERT_TRUE(timing.at(part).is_number_integer()) << timing.dump();
      EXPECT_GE(timing.at(part).get<std::int64_t>(), 0) << part;
      sum += timing.at(part).get<std::int64_t>();
    }
    EXPECT_LE(sum, waited_us) << timing.dump();
    if (timing.at("build").get<std::int64_t>() > 0) through_the_mirror = true;
    const Frame again = snapshot("t", {{"timing", true}, {"scrollback", i % 2 == 0 ? 100 : 200}});
    const Json& lane = again.header.at("timing_us");
    if (lane.at("build") == 0 && lane.at("to_mirror") == 0) by_the_lane = true;
  }
  EXPECT_TRUE(through_the_mirror) << "a build of 100 history lines takes a microsecond or more";
  EXPECT_TRUE(by_the_lane);
}

TEST_F(Attach, ClientsWithoutSnapshotV1GetARawReplayFromTheOldestCursor) {
  engine_.spawn("sh", {"sh", "-c", "printf 'a\\n'; exec sleep 60"});
  engine_.wait_output("sh", "a");
  const Frame r = snapshot("sh", {{"formats", Json::array({"raw"})}});
  EXPECT_EQ(r.header.at("format"), "raw_replay");
  EXPECT_EQ(r.header.at("reason"), "client");
  EXPECT_EQ(r.header.at("cursor"), engine_.status("sh").at("floor"));
  EXPECT_TRUE(r.payload.empty());
}

TEST_F(Attach, OutputTheMirrorCannotReproduceGetsARawReplayWithItsReason) {
  // A sixel image (DCS q ... ST): graphics no snapshot can carry.
  engine_.spawn("img",
                {"sh", "-c", "printf '\\033Pq#0;2;0;0;0#0~~@@\\033\\\\done\\n'; exec sleep 60"});
  engine_.wait_output("img", "done");
  Frame r;
  for (int i = 0; i < 200; ++i) {  // until the mirror has parsed the image
    r = snapshot("img");
    if (r.header.value("format", "") == "raw_replay") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(r.header.at("format"), "raw_replay");
  EXPECT_EQ(r.header.at("reason"), "dcs_sixel") << r.header.dump();
  EXPECT_EQ(r.header.at("cursor"), engine_.status("img").at("floor"));
  // A clear forgets it: snapshots come back. The screen with the image cannot be kept.
  const Json cleared = engine_.call("clear", {{"actor", "img"}}).header;
  EXPECT_EQ(cleared.at("screen_kept"), false);
  EXPECT_EQ(cleared.at("screen_cleared"), "snapshot_fallback");
  EXPECT_EQ(snapshot("img").header.at("format"), "snapshot_v1");
}

TEST_F(Attach, BadRequestsGetClearErrors) {
  engine_.spawn("sh", {"sleep", "60"});
  auto expect = [&](Json fields, const char* op, Errc code) {
    const auto r = engine_.try_call(op, std::move(fields));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, code) << r.error().describe();
  };
  expect({{"actor", "nobody"}}, "snapshot", Errc::no_such_actor);
  expect({{"actor", "sh"}, {"scrollback", 10001}}, "snapshot", Errc::too_large);
  expect({{"actor", "sh"}, {"formats", "snapshot_v1"}}, "snapshot", Errc::bad_request);
  expect({{"actor", "sh"}, {"timing", "yes"}}, "snapshot", Errc::bad_request);
  expect({{"actor", "sh"}, {"role", "owner"}}, "attach", Errc::bad_request);
  expect({{"actor", "sh"}, {"role", "viewer"}, {"cols", 10}, {"rows", 10}}, "attach",
         Errc::bad_request);
  expect({{"actor", "sh"}, {"role", "controller"}, {"cols", 0}, {"rows", 10}}, "attach",
         Errc::bad_request);
  expect({{"actor", "sh"}, {"role", "viewer"}, {"since", 1u << 30}}, "attach",
         Errc::cursor_in_future);
  expect({{"attachment", 12345}}, "detach", Errc::bad_request);
  expect({{"actor", "sh"}, {"role", "viewer"}, {"scrollback", 10001}}, "attach", Errc::too_large);
  // None of the refused attaches left a controller behind: anyone may still resize.
  EXPECT_TRUE(engine_.try_call("resize", {{"actor", "sh"}, {"cols", 81}, {"rows", 24}}));
}

TEST_F(Attach, NoOneAnswersAProgramsTerminalQueries) {
  engine_.spawn("q", {child_binary(), "queries"});
  engine_.wait_sealed("q");
  const std::string out = engine_.history("q");
  EXPECT_NE(out.find("replies 0"), std::string::npos) << out;
}

}  // namespace
}  // namespace backscroll::testing
