// Sessions (docs/design.md, "Sessions"; docs/protocol.md): a program that exits is reported and
// sealed with its status; stop sends SIGHUP and SIGKILLs a program that ignores it; a descendant
// that keeps the PTY open cannot keep a session unsealed past the drain window, nor write past its
// end; restart continues the cursor space; cursors never go backwards (not across sessions, not
// on clear); delete removes the ring; SIGTERM stops, seals and removes everything.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "shm/ring_reader.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

// Live (non-zombie) processes in process group `pgid`.
std::vector<pid_t> group_members(std::int64_t pgid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(it->path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 2));
    std::string state;
    long ppid = 0;
    long pgrp = 0;
    if (!(fields >> state >> ppid >> pgrp)) continue;
    if (pgrp == pgid && state != "Z") out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// Index of the first event in `events` named `event` for `actor`; events.size() if none.
std::size_t index_of(const std::vector<Json>& events, std::string_view event,
                     std::string_view actor) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].value("event", "") == event && events[i].value("actor", "") == actor) return i;
  }
  return events.size();
}

class Lifecycle : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.start()); }  // grace 500 ms, drain 300 ms

  EngineProcess engine_;
};

TEST_F(Lifecycle, ProgramThatExitsIsReportedThenSealedWithItsExitCode) {
  EventStream events(engine_.places());
  const Json spawned = engine_.spawn("short", {"sh", "-c", "echo bye; exit 7"});
  EXPECT_EQ(spawned.at("session"), 1);
  EXPECT_EQ(spawned.at("cursor"), 0);
  const Json exited = events.wait_for("exit", "short");
  EXPECT_EQ(exited.at("session"), 1);
  EXPECT_EQ(exited.at("pid"), spawned.at("pid"));
  EXPECT_EQ(exited.at("exit_code"), 7);
  EXPECT_EQ(exited.at("term_signal"), 0);
  const Json sealed = events.wait_for("sealed", "short");
  EXPECT_EQ(sealed.at("session"), 1);
  EXPECT_EQ(sealed.at("end"), 5);  // "bye\r\n"
  EXPECT_LT(index_of(events.seen(), "spawned", "short"), index_of(events.seen(), "exit", "short"));
  EXPECT_LT(index_of(events.seen(), "exit", "short"), index_of(events.seen(), "sealed", "short"));

  const Json status = engine_.status("short");
  EXPECT_EQ(status.at("state"), "idle");
  EXPECT_TRUE(status.at("pid").is_null());  // no program: no pid, not 0
  EXPECT_EQ(status.at("exit_code"), 7);     // how the current session's program ended
  EXPECT_TRUE(status.at("term_signal").is_null());
  EXPECT_EQ(status.at("committed"), 5);
  const Json session = status.at("sessions").at(0);
  EXPECT_EQ(session.at("sealed"), true);
  EXPECT_EQ(session.at("exit_code"), 7);
  EXPECT_EQ(session.at("start"), 0);
  EXPECT_EQ(session.at("end"), 5);
  EXPECT_EQ(engine_.history("short"), "bye\r\n");

  // Readers see the same through the ring's session table and meta.
  auto reader = shm::RingReader::open(engine_.places(), "short");
  ASSERT_TRUE(reader) << reader.error().describe();
  const auto record = reader->session(1);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->flags, shm::kSessionExited | shm::kSessionSealed);
  EXPECT_EQ(record->exit_code, 7);
  EXPECT_EQ(record->end, 5u);
  EXPECT_EQ(record->pid, spawned.at("pid").get<std::int64_t>());
  const auto meta = reader->meta();
  ASSERT_TRUE(meta);
  EXPECT_EQ(meta->state, shm::ActorState::idle);
  EXPECT_EQ(meta->session, 1u);
  EXPECT_EQ(meta->pid, 0);
}

TEST_F(Lifecycle, SpawnGivesTheProgramItsArgvDirectoryEnvironmentAndSize) {
  TempDir dir;
  engine_.spawn("env",
                {"sh", "-c", "echo \"$0|$1|$(pwd)|$BS_PROBE|$TERM|$(stty size)\"", "zero", "one"},
                {{"cwd", dir.path().string()},
                 {"env", {{"BS_PROBE", "probe value"}}},
                 {"cols", 132},
                 {"rows", 43}});
  engine_.wait_sealed("env");
  EXPECT_EQ(engine_.history("env"),
            "zero|one|" + dir.path().string() + "|probe value|xterm-256color|43 132\r\n");
  const Json status = engine_.status("env");
  EXPECT_EQ(status.at("cols"), 132);
  EXPECT_EQ(status.at("rows"), 43);
  EXPECT_EQ(status.at("cwd"), dir.path().string());
  EXPECT_EQ(status.at("argv").at(1), "-c");
}

TEST_F(Lifecycle, ResizeReachesTheProgramsTerminal) {
  // The program reports its size after each line of input.
  engine_.spawn("sized", {"sh", "-c", "while read x; do echo \"size=$(stty size)\"; done"});
  engine_.call("input", {{"actor", "sized"}}, "\r");
  engine_.wait_output("sized", "size=24 80");
  const Json resized =
      engine_.call("resize", {{"actor", "sized"}, {"cols", 200}, {"rows", 50}}).header;
  EXPECT_EQ(resized.at("cols"), 200);
  engine_.call("input", {{"actor", "sized"}}, "\r");
  engine_.wait_output("sized", "size=50 200");
  auto reader = shm::RingReader::open(engine_.places(), "sized");
  ASSERT_TRUE(reader);
  const auto meta = reader->meta();
  ASSERT_TRUE(meta);
  EXPECT_EQ(meta->cols, 200u);
  EXPECT_EQ(meta->rows, 50u);
}

TEST_F(Lifecycle, StopEndsAProgramWithHangUp) {
  const Json spawned = engine_.spawn("polite", {"sleep", "1000"});
  const Json stopped = engine_.call("stop", {{"actor", "polite"}}).header;
  EXPECT_EQ(stopped.at("session"), 1);
  EXPECT_EQ(stopped.at("exit_code"), -1);
  EXPECT_EQ(stopped.at("term_signal"), SIGHUP);
  EXPECT_EQ(engine_.status("polite").at("state"), "idle");
  EXPECT_TRUE(group_members(spawned.at("pid")).empty());
}

TEST_F(Lifecycle, StopKillsAProgramThatIgnoresHangUpAfterTheGracePeriod) {
  const Json spawned = engine_.spawn(
      "stubborn", {"sh", "-c", "trap '' HUP; echo armed; while :; do sleep 0.05; done"});
  engine_.wait_output("stubborn", "armed");
  const Json stopped = engine_.call("stop", {{"actor", "stubborn"}, {"grace_ms", 200}}).header;
  EXPECT_EQ(stopped.at("exit_code"), -1);
  EXPECT_EQ(stopped.at("term_signal"), SIGKILL);
  const Json session = engine_.status("stubborn").at("sessions").at(0);
  EXPECT_EQ(session.at("sealed"), true);
  EXPECT_EQ(session.at("term_signal"), SIGKILL);
  EXPECT_EQ(stopped.at("end"), session.at("end"));
  // SIGKILL went to the whole process group: no sleep is left behind.
  wait_until([&] { return group_members(spawned.at("pid")).empty(); }, "the group to die");
  EXPECT_NE(engine_.log().find("sending SIGKILL"), std::string::npos);
}

TEST_F(Lifecycle, DescendantHoldingThePtyOpenCannotKeepTheSessionUnsealedOrWritePastItsEnd) {
  EventStream events(engine_.places());
  // The subshell ignores SIGHUP (which the kernel sends to the foreground group when the
  // leader exits; the trap is set before the fork, so there is no race) and keeps printing
  // through its copy of the PTY; it gives up once the PTY is gone (echo fails) or after 20 s.
  const Json spawned = engine_.spawn(
      "leaky", {"sh", "-c",
                "trap '' HUP; (i=0; while [ $i -lt 400 ] && echo x; do i=$((i+1)); sleep 0.05; "
                "done) & echo leader-done; exit 0"});
  const std::int64_t pgid = spawned.at("pid");
  const Json exited = events.wait_for("exit", "leaky");
  EXPECT_EQ(exited.at("exit_code"), 0);
  // Still printing after the leader's exit (it stops only once the engine closes the PTY).
  EXPECT_FALSE(group_members(pgid).empty()) << "the descendant died: the test proves nothing";
  const Json sealed = events.wait_for("sealed", "leaky");
  const std::uint64_t end = sealed.at("end");

  // Late output of the old session never lands past its end.
  const std::string history = engine_.history("leaky");
  EXPECT_EQ(history.size(), end);
  EXPECT_NE(history.find("leader-done"), std::string::npos);
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_EQ(engine_.status("leaky").at("committed"), end);
  }
  // With the master closed the descendant's writes fail and it ends by itself.
  wait_until([&] { return group_members(pgid).empty(); }, "the descendant to notice the hang-up");
}

TEST_F(Lifecycle, ProgramThatClosesItsTerminalStaysRunningAndStillStopsAndSeals) {
  // Once no fd of the PTY's slave is open the engine reads EOF/EIO, but the program lives on.
  const Json spawned = engine_.spawn(
      "closed", {"sh", "-c", "echo going-dark; exec </dev/null >/dev/null 2>&1; exec sleep 1000"});
  engine_.wait_output("closed", "going-dark");
  // The output arrives before sh has closed its terminal; only once it runs sleep are all slave
  // fds gone (else the line discipline still echoes the input below into the output).
  const std::string comm = "/proc/" + std::to_string(spawned.at("pid").get<pid_t>()) + "/comm";
  wait_until(
      [&] {
        std::ifstream in(comm);
        std::string name;
        return std::getline(in, name) && name == "sleep";
      },
      "the program to close its terminal and exec sleep");
  EXPECT_EQ(engine_.status("closed").at("state"), "running");
  // Input it can never read is dropped, not kept forever; the engine stays healthy.
  engine_.try_call("input", {{"actor", "closed"}}, "hello\r");
  const Json stopped = engine_.call("stop", {{"actor", "closed"}}).header;
  EXPECT_EQ(stopped.at("term_signal"), SIGHUP);
  EXPECT_EQ(stopped.at("end"), 12);  // "going-dark\r\n"
  EXPECT_EQ(engine_.status("closed").at("state"), "idle");
  EXPECT_TRUE(group_members(spawned.at("pid")).empty());
}

TEST_F(Lifecycle, RestartStartsTheNextSessionAtThePreviousEnd) {
  engine_.spawn("cycler", {"sh", "-c", "echo run"});
  const Json first = engine_.wait_sealed("cycler");
  const std::uint64_t end1 = first.at("end");
  ASSERT_EQ(end1, 5u);
  const Json second = engine_.call("restart", {{"actor", "cycler"}}).header;
  EXPECT_EQ(second.at("session"), 2);
  EXPECT_EQ(second.at("cursor"), end1);
  const Json sealed2 = engine_.wait_sealed("cycler");
  EXPECT_EQ(sealed2.at("id"), 2);
  EXPECT_EQ(sealed2.at("start"), end1);
  EXPECT_EQ(sealed2.at("end"), 2 * end1);
  EXPECT_EQ(engine_.history("cycler", end1), "run\r\n");

  // Restarting a live program: the old session is stopped and sealed first.
  const Json sleeper = engine_.spawn("sleeper", {"sleep", "1000"});
  const Json replaced = engine_.call("restart", {{"actor", "sleeper"}}).header;
  EXPECT_EQ(replaced.at("session"), 2);
  EXPECT_NE(replaced.at("pid"), sleeper.at("pid"));
  const Json status = engine_.status("sleeper");
  EXPECT_EQ(status.at("state"), "running");
  const Json old_session = status.at("sessions").at(0);
  EXPECT_EQ(old_session.at("sealed"), true);
  EXPECT_EQ(old_session.at("term_signal"), SIGHUP);
  EXPECT_EQ(replaced.at("cursor"), old_session.at("end"));
}

TEST_F(Lifecycle, RestartThatCannotSpawnLeavesTheActorIdleAndIntact) {
  TempDir dir;
  const auto cwd = dir.path() / "work";
  std::filesystem::create_directory(cwd);
  engine_.spawn("homeless", {"sh", "-c", "echo here"}, {{"cwd", cwd.string()}});
  const Json first = engine_.wait_sealed("homeless");
  std::filesystem::remove(cwd);
  const Error failed =
      expect_error(engine_.try_call("restart", {{"actor", "homeless"}}), "restart");
  EXPECT_EQ(failed.code, Errc::spawn_failed) << failed.describe();
  const Json status = engine_.status("homeless");
  EXPECT_EQ(status.at("state"), "idle");
  EXPECT_EQ(status.at("sessions").size(), 1u);
  EXPECT_EQ(status.at("committed"), first.at("end"));
  EXPECT_EQ(engine_.history("homeless"), "here\r\n");
  EXPECT_EQ(engine_.rings().size(), 1u);
  // Once the folder is back, restart works and continues the cursor space.
  std::filesystem::create_directory(cwd);
  const Json second = engine_.call("restart", {{"actor", "homeless"}}).header;
  EXPECT_EQ(second.at("session"), 2);
  EXPECT_EQ(second.at("cursor"), first.at("end"));
}

TEST_F(Lifecycle, StopIsAnsweredAtTheSealWhileLaterRequestsOnTheConnectionAreAnsweredAtOnce) {
  engine_.spawn("slow", {"sh", "-c", "trap '' HUP; echo armed; while :; do sleep 0.05; done"});
  engine_.wait_output("slow", "armed");
  RawConnection raw(engine_.places());
  raw.send(control::encode_frame({{"op", "stop"}, {"id", 1}, {"actor", "slow"}}) +
           control::encode_frame({{"op", "stop"}, {"id", 2}, {"actor", "slow"}}) +
           control::encode_frame({{"op", "ping"}, {"id", 3}}) +
           control::encode_frame({{"op", "status"}, {"id", 4}, {"actor", "slow"}}));
  std::vector<Json> answers;
  for (int i = 0; i < 4; ++i) {
    auto frame = raw.next_frame();
    ASSERT_TRUE(frame);
    answers.push_back(frame->header);
  }
  // ping and status first (the program ignores SIGHUP: the stops wait for the grace period).
  EXPECT_EQ(answers[0].at("id"), 3);
  EXPECT_EQ(answers[1].at("id"), 4);
  EXPECT_EQ(answers[1].at("actors").at(0).at("state"), "stopping");
  // Both stops, answered by the same seal.
  for (int i : {2, 3}) {
    EXPECT_EQ(answers[static_cast<std::size_t>(i)].value("ok", false), true);
    EXPECT_EQ(answers[static_cast<std::size_t>(i)].at("term_signal"), SIGKILL);
    EXPECT_EQ(answers[static_cast<std::size_t>(i)].at("end"), answers[2].at("end"));
  }
  EXPECT_EQ(answers[2].at("id"), 1);
  EXPECT_EQ(answers[3].at("id"), 2);
}

TEST_F(Lifecycle, DuringShutdownNewWorkIsRefusedWithShuttingDown) {
  // The stubborn program keeps the engine shutting down for the grace period.
  engine_.spawn("stubborn", {"sh", "-c", "trap '' HUP; echo armed; while :; do sleep 0.05; done"});
  engine_.spawn("idle", {"true"});
  engine_.wait_output("stubborn", "armed");
  engine_.wait_sealed("idle");
  auto client = engine_.connect();
  expect_ok(client.call("shutdown"), "shutdown");
  EXPECT_EQ(
      expect_error(client.call("spawn", {{"actor", "late"}, {"argv", {"true"}}}), "spawn").code,
      Errc::shutting_down);
  EXPECT_EQ(expect_error(client.call("restart", {{"actor", "idle"}}), "restart").code,
            Errc::shutting_down);
  const auto status = engine_.wait_exit();
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
}

TEST_F(Lifecycle, CursorsNeverGoBackwardsAcrossSessionsAndClears) {
  EventStream events(engine_.places());
  engine_.spawn("mono", {"printf", "abcd"});
  std::uint64_t last_floor = 0;
  std::uint64_t last_committed = 0;
  std::uint64_t last_start = 0;
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(round);
    const Json sealed = engine_.wait_sealed("mono");
    const std::uint64_t start = sealed.at("start");
    const std::uint64_t end = sealed.at("end");
    EXPECT_EQ(start, last_committed) << "a session must start where the previous one ended";
    EXPECT_GE(start, last_start);
    EXPECT_EQ(end, start + 4);
    EXPECT_EQ(engine_.history("mono", start), "abcd");
    const Json cleared = engine_.call("clear", {{"actor", "mono"}}).header;
    const std::uint64_t floor = cleared.at("floor");
    EXPECT_EQ(floor, end);
    EXPECT_GE(floor, last_floor);
    EXPECT_EQ(events.wait_for("cleared", "mono").at("floor"), floor);
    const Json status = engine_.status("mono");
    EXPECT_EQ(status.at("floor"), floor);
    EXPECT_EQ(status.at("committed"), end);
    const Error expired =
        expect_error(engine_.try_call("history", {{"actor", "mono"}, {"from", start}}), "history");
    EXPECT_EQ(expired.code, Errc::cursor_expired);
    EXPECT_EQ(expired.cursor, floor);
    last_floor = floor;
    last_committed = end;
    last_start = start;
    const Json restarted = engine_.call("restart", {{"actor", "mono"}}).header;
    EXPECT_EQ(restarted.at("cursor"), end);
    EXPECT_EQ(restarted.at("session"), round + 2);
  }
  engine_.wait_sealed("mono");
  EXPECT_EQ(engine_.status("mono").at("sessions").size(), 5u);
}

TEST_F(Lifecycle, DeleteStopsTheProgramReleasesTheRingAndEmitsDeleted) {
  EventStream events(engine_.places());
  engine_.spawn("gone", {"sleep", "1000"});
  engine_.spawn("idle", {"true"});
  engine_.wait_sealed("idle");
  auto reader = shm::RingReader::open(engine_.places(), "gone");
  ASSERT_TRUE(reader) << reader.error().describe();
  ASSERT_EQ(engine_.rings().size(), 2u);

  EXPECT_EQ(engine_.call("delete", {{"actor", "gone"}}).header.at("actor"), "gone");
  events.wait_for("deleted", "gone");
  const auto& seen = events.seen();
  EXPECT_LT(index_of(seen, "exit", "gone"), index_of(seen, "sealed", "gone"));
  EXPECT_LT(index_of(seen, "sealed", "gone"), index_of(seen, "deleted", "gone"));
  EXPECT_EQ(engine_.rings().size(), 1u);
  EXPECT_EQ(expect_error(engine_.try_call("status", {{"actor", "gone"}}), "status").code,
            Errc::no_such_actor);
  // A reader that still maps it learns that it closed.
  EXPECT_EQ(reader->wait(reader->committed(), std::chrono::seconds(5)), shm::WaitResult::closed);
  EXPECT_FALSE(shm::RingReader::open(engine_.places(), "gone"));

  // An idle actor goes at once.
  engine_.call("delete", {{"actor", "idle"}});
  events.wait_for("deleted", "idle");
  EXPECT_TRUE(engine_.rings().empty());
  EXPECT_EQ(engine_.call("list").header.at("actors").size(), 0u);
  engine_.spawn("gone", {"true"});  // the name is free again
}

TEST_F(Lifecycle, SigtermStopsAndSealsEveryActorThenRemovesTheSocket) {
  std::vector<std::int64_t> groups;
  groups.push_back(engine_.spawn("plain", {"sleep", "1000"}).at("pid"));
  groups.push_back(
      engine_
          .spawn("stubborn", {"sh", "-c", "trap '' HUP; echo armed; while :; do sleep 0.05; done"})
          .at("pid"));
  groups.push_back(
      engine_.spawn("flood", {child_binary(), "pattern", "3", "100000000000", "raw"}).at("pid"));
  engine_.spawn("done", {"true"});
  engine_.wait_output("stubborn", "armed");
  engine_.wait_sealed("done");

  EventStream events(engine_.places());
  ASSERT_EQ(::kill(engine_.pid(), SIGTERM), 0);
  // The subscriber hears every live actor's seal before the engine closes the connection.
  std::vector<Json> seen;
  for (;;) {
    auto next = events.client().next_event(kHangGuard);
    ASSERT_TRUE(next || next.error().code == Errc::engine_unavailable) << next.error().describe();
    if (!next) break;
    ASSERT_TRUE(*next) << "no event and no hang-up";
    seen.push_back((*next)->header);
  }
  for (const char* actor : {"plain", "stubborn", "flood"}) {
    EXPECT_LT(index_of(seen, "sealed", actor), seen.size()) << actor << " was not sealed";
  }
  const auto status = engine_.wait_exit();
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  EXPECT_FALSE(std::filesystem::exists(engine_.places().socket_path()));
  for (const std::int64_t pgid : groups) EXPECT_TRUE(group_members(pgid).empty()) << pgid;
}

// Regression (review): the leader exited on SIGHUP, which cancelled the grace timer, so a group
// member that ignores SIGHUP survived the stop. Stop means the whole process group.
TEST_F(Lifecycle, StopAlsoKillsGroupMembersThatOutliveTheLeader) {
  const Json spawned =
      engine_.spawn("family", {"sh", "-c", "(trap '' HUP; echo armed; exec sleep 1000) & wait"});
  engine_.wait_output("family", "armed");
  ASSERT_FALSE(group_members(spawned.at("pid")).empty());
  const Json stopped = engine_.call("stop", {{"actor", "family"}, {"grace_ms", 5000}}).header;
  EXPECT_EQ(stopped.at("term_signal"), SIGHUP);  // the leader itself obeyed SIGHUP
  wait_until([&] { return group_members(spawned.at("pid")).empty(); },
             "the SIGHUP-immune group member to be killed");
}

// Regression (review): started with SIGCHLD ignored (inherited across exec), the kernel reaped
// children itself, waitid failed with ECHILD, and the engine re-polled the pidfd forever at
// 100% CPU without ever sealing the session.
TEST(LifecycleLaunch, ExitStatusSurvivesALauncherThatIgnoresSigchld) {
  EngineProcess engine;
  EngineConfig config;
  config.ignore_sigchld = true;
  ASSERT_TRUE(engine.start(config));
  engine.spawn("short", {"sh", "-c", "echo bye; exit 3"});
  const Json session = engine.wait_sealed("short");
  EXPECT_EQ(session.at("exit_code"), 3);
  EXPECT_EQ(engine.history("short"), "bye\r\n");
}

}  // namespace
}  // namespace backscroll::testing
