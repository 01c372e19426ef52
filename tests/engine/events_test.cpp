// The event track through the real engine (docs/recorder.md; docs/protocol.md, `events`): what
// the io thread records as it acts (spawn, resize, exit, seal, clear) carries the cursor it acted
// at, comes back from `events` in stream order and reaches subscribers live as `track` frames;
// a clear takes the events below its floor with it; a bad query is refused naming its field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shm/ring_reader.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

std::vector<Json> events_of(EngineProcess& engine, const std::string& actor,
                            Json query = Json::object()) {
  query["actor"] = actor;
  const Frame reply = engine.call("events", query);
  return reply.header.at("events").get<std::vector<Json>>();
}

std::vector<std::string> kinds(const std::vector<Json>& events) {
  std::vector<std::string> out;
  for (const Json& e : events) out.push_back(e.at("kind").get<std::string>());
  return out;
}

class Events : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.start()); }  // grace 500 ms, drain 300 ms

  EngineProcess engine_;
};

TEST_F(Events, EachActIsRecordedAtTheCursorWhereTheEngineDidIt) {
  EventStream live(engine_.places());
  // Prints 5 bytes, waits to be resized, prints 3 more, exits 3.
  const Json spawned =
      engine_.spawn("rec", {"sh", "-c", "printf 'hello'; read line; printf 'bye'; exit 3"},
                    {{"cols", 90}, {"rows", 30}, {"cwd", "/"}});
  engine_.wait_output("rec", "hello");
  engine_.call("resize", {{"actor", "rec"}, {"cols", 100}, {"rows", 40}});
  engine_.call("input", {{"actor", "rec"}}, "\r");
  const Json sealed = engine_.wait_sealed("rec");
  live.wait_for("sealed", "rec");

  // (Keyframes the mirror took are in the track too: docs/recorder.md. Here, the io thread's.)
  const Json acts{{"kinds", {"spawn", "resize", "clear", "exit", "seal"}}};
  const std::vector<Json> events = events_of(engine_, "rec", acts);
  ASSERT_EQ(kinds(events), (std::vector<std::string>{"spawn", "resize", "exit", "seal"}));
  const Json& spawn = events[0];
  EXPECT_EQ(spawn.at("actor"), "rec");
  EXPECT_EQ(spawn.at("cursor"), spawned.at("cursor"));
  EXPECT_EQ(spawn.at("session"), 1);
  EXPECT_EQ(spawn.at("pid"), spawned.at("pid"));
  EXPECT_EQ(spawn.at("argv"),
            (Json{"sh", "-c", "printf 'hello'; read line; printf 'bye'; exit 3"}));
  EXPECT_EQ(spawn.at("cwd"), "/");
  EXPECT_EQ(spawn.at("cols"), 90);
  EXPECT_EQ(spawn.at("rows"), 30);
  // "hello" was committed before the resize, the echoed "\r\n" and "bye" after it.
  EXPECT_EQ(events[1].at("cursor"), 5);
  EXPECT_EQ(events[1].at("cols"), 100);
  EXPECT_EQ(events[1].at("rows"), 40);
  EXPECT_EQ(events[2].at("exit_code"), 3);
  EXPECT_EQ(events[2].at("term_signal"), 0);
  EXPECT_EQ(events[3].at("cursor"), sealed.at("end"));
  EXPECT_EQ(events[3].at("session"), 1);
  std::uint64_t seq = 0;
  std::int64_t time = 0;
  for (const Json& e : events) {
    EXPECT_GT(e.at("seq").get<std::uint64_t>(), seq);
    EXPECT_GE(e.at("time_ms").get<std::int64_t>(), time);
    seq = e.at("seq").get<std::uint64_t>();
    time = e.at("time_ms").get<std::int64_t>();
  }

  // Each reached the subscriber as it was recorded, with the same fields.
  std::vector<Json> frames;
  for (const Json& frame : live.seen()) {
    if (frame.value("event", "") == "track" && frame.value("actor", "") == "rec" &&
        frame.value("kind", "") != "keyframe") {
      Json event = frame;
      event.erase("event");
      frames.push_back(event);
    }
  }
  EXPECT_EQ(frames, events);

  // A restart's session starts where the last one ended; a clear drops what came before it.
  engine_.call("restart", {{"actor", "rec"}});
  wait_until([&] { return engine_.status("rec").at("committed") == 15; }, "session 2's hello");
  const Frame cleared = engine_.call("clear", {{"actor", "rec"}});
  const std::uint64_t floor = cleared.header.at("floor");
  const std::vector<Json> after = events_of(engine_, "rec", acts);
  ASSERT_EQ(kinds(after), (std::vector<std::string>{"clear"}));
  EXPECT_EQ(after[0].at("cursor"), floor);
  engine_.call("stop", {{"actor", "rec"}});
}

TEST_F(Events, TitlesBellsPromptsAndStatusesAreStampedJustPastTheirSequence) {
  EventStream live(engine_.places());
  // 3 bytes, a title (3 + 16 = 19), a bell (20), a prompt mark (20 + 9 = 29), "$ " (31), the
  // title Claude Code sets when idle (31 + 20 = 51), then a shell's command end (51 + 10).
  engine_.spawn("out", {"sh", "-c",
                        "printf 'abc\033]2;first title\007\007\033]133;A\033\\$ "
                        "\033]0;\342\234\263 Claude Code\007\033]133;D;7\007'; read x"});
  engine_.wait_output("out", "Claude Code");
  wait_until(
      [&] {
        return events_of(engine_, "out", {{"kinds", {"command_end"}}}).size() == 1;
      },
      "the command_end event");
  const std::vector<Json> events =
      events_of(engine_, "out", {{"kinds", {"title", "bell", "prompt", "status", "command_end"}}});
  ASSERT_EQ(kinds(events), (std::vector<std::string>{"title", "bell", "prompt", "title", "status",
                                                     "command_end"}));
  EXPECT_EQ(events[0].at("cursor"), 19);
  EXPECT_EQ(events[0].at("title"), "first title");
  EXPECT_EQ(events[1].at("cursor"), 20);
  EXPECT_EQ(events[1].at("count"), 1);
  EXPECT_EQ(events[2].at("cursor"), 29);
  EXPECT_EQ(events[3].at("cursor"), 51);
  EXPECT_EQ(events[3].at("title"), "\xe2\x9c\xb3 Claude Code");
  EXPECT_EQ(events[4].at("cursor"), 51);
  EXPECT_EQ(events[4].at("status"), "idle");
  EXPECT_EQ(events[4].at("previous"), "unknown");
  EXPECT_EQ(events[4].at("agent"), "claude-code");
  EXPECT_EQ(events[5].at("cursor"), 61);
  EXPECT_EQ(events[5].at("exit_status"), 7);
  // The spawn came first, at 0, recorded before the mirror read a byte.
  EXPECT_EQ(events_of(engine_, "out").front().at("kind"), "spawn");
  live.wait_for("track", "out");
  engine_.call("stop", {{"actor", "out"}});
}

// What the output says now is in the ring header (zero-copy readers) and in `status`: exact
// whatever the event track's rate limit dropped; a fresh terminal (a clear, a new session)
// forgets the title and status, not the bells.
TEST_F(Events, TheRingHeaderAndStatusCarryTheTitleBellsAndAgentStatus) {
  // 1000 titles and bells: more than the track's burst, so events are dropped; the state is not.
  engine_.spawn("s", {"sh", "-c",
                      "i=0; while [ $i -lt 1000 ]; do printf '\033]2;spin %d\007\007' $i; "
                      "i=$((i+1)); done; printf '\033]0;\342\234\263 Claude Code\007'; "
                      "read x"});
  engine_.wait_output("s", "Claude Code");
  auto ring = shm::RingReader::open_announced(engine_.ring_of("s"));
  ASSERT_TRUE(ring) << ring.error().describe();
  const std::uint64_t committed = engine_.status("s").at("committed");
  wait_until([&] { return ring->output() && ring->output()->cursor >= committed; },
             "the mirror's report in the ring header");
  const shm::OutputStatus out = *ring->output();
  EXPECT_EQ(std::string_view(out.title, out.title_bytes), "\xe2\x9c\xb3 Claude Code");
  EXPECT_EQ(out.bells, 1000u);
  EXPECT_EQ(out.agent_status, shm::OutputAgentStatus::idle);
  EXPECT_EQ(std::string_view(out.agent, out.agent_bytes), "claude-code");
  const Json status = engine_.status("s");
  EXPECT_EQ(status.at("title"), "\xe2\x9c\xb3 Claude Code");
  EXPECT_EQ(status.at("bells"), 1000);
  EXPECT_EQ(status.at("agent_status"), "idle");
  EXPECT_EQ(status.at("agent"), "claude-code");
  wait_until(
      [&] {
        return !engine_.call("events", {{"actor", "s"}, {"kinds", {"dropped"}}})
                    .header.at("events")
                    .empty();
      },
      "the track's rate limit to drop some");

  // A clear of the screen too: a fresh terminal, without the title.
  const std::uint64_t floor =
      engine_.call("clear", {{"actor", "s"}, {"screen", true}}).header.at("floor");
  wait_until([&] { return ring->output() && ring->output()->title_bytes == 0; }, "a fresh title");
  EXPECT_EQ(ring->output()->agent_status, shm::OutputAgentStatus::unknown);
  EXPECT_EQ(ring->output()->bells, 1000u);
  EXPECT_GE(ring->output()->cursor, floor);
  engine_.call("stop", {{"actor", "s"}});
}

TEST_F(Events, QueriesPageThroughEventsThatShareACursor) {
  engine_.spawn("quiet", {"sh", "-c", "read line"});
  for (int i = 0; i < 5; ++i) {
    engine_.call("resize", {{"actor", "quiet"}, {"cols", 50 + i}, {"rows", 20}});
  }
  const std::vector<Json> all = events_of(engine_, "quiet", {{"kinds", {"resize"}}});
  ASSERT_EQ(all.size(), 5u);
  std::vector<Json> paged;
  Json query{{"actor", "quiet"}, {"kinds", {"resize"}}, {"limit", 2}};
  for (int pages = 0; pages < 10; ++pages) {
    const Frame page = engine_.call("events", query);
    const auto events = page.header.at("events").get<std::vector<Json>>();
    paged.insert(paged.end(), events.begin(), events.end());
    if (!page.header.at("more").get<bool>()) break;
    query["from"] = events.back().at("cursor");
    query["skip"] = query.value("skip", 0) + events.size();  // all at one cursor here
  }
  EXPECT_EQ(paged, all);
  EXPECT_EQ(events_of(engine_, "quiet", {{"kinds", {"spawn"}}}).size(), 1u);
  engine_.call("stop", {{"actor", "quiet"}});
}

TEST_F(Events, ABadQueryIsRefusedNamingItsField) {
  engine_.spawn("q", {"sh", "-c", "read line"});
  const auto refused = [this](Json query) {
    query["actor"] = "q";
    return expect_error(engine_.try_call("events", query), query.dump());
  };
  Error e = refused({{"kinds", {"titel"}}});
  EXPECT_EQ(e.code, Errc::bad_request);
  EXPECT_NE(e.message.find("titel"), std::string::npos) << e.message;
  EXPECT_EQ(refused({{"kinds", "title"}}).code, Errc::bad_request);
  EXPECT_EQ(refused({{"limit", 0}}).code, Errc::bad_request);
  EXPECT_EQ(refused({{"limit", 10'001}}).code, Errc::bad_request);
  EXPECT_EQ(refused({{"from", -1}}).code, Errc::bad_request);
  EXPECT_EQ(refused({{"since_ms", "yesterday"}}).code, Errc::bad_request);
  EXPECT_EQ(expect_error(engine_.try_call("events", {{"actor", "nobody"}}), "unknown").code,
            Errc::no_such_actor);
  engine_.call("stop", {{"actor", "q"}});
}

}  // namespace
}  // namespace backscroll::testing
