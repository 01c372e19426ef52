// The whole process tree ends with its actor (docs/architecture.md, "Process trees"): stop,
// delete and shutdown end every process the actor's program started, also ones that forked
// twice and left the session and process group (setsid) and ignore SIGHUP, within the grace
// period plus a second; processes that are not the actor's (another actor's, the test's own)
// are never signalled; the orphans the engine inherits as a subreaper are reaped. Each test runs
// twice: with each actor in a cgroup of its own (--cgroups auto; skipped where the host gives
// the engine none) and with the session token and the subreaper alone (--cgroups off). The test
// finds the processes by scanning /proc for a marker in their command line.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/engine/engine_process.hpp"

extern char** environ;

namespace backscroll::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr milliseconds kGrace{500};  // EngineProcess's default grace period

// A small file whole, "" when it cannot be read.
std::string read_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// Live processes whose command line contains `marker`.
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // Read with read(2): a process that exits meanwhile makes a stream throw.
    const std::string args = read_file(it->path() / "cmdline");
    if (args.find(marker) == std::string::npos) continue;
    const std::string line = read_file(it->path() / "stat");
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') continue;
    out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// A shell command that starts `sleep SECONDS` twice daemonized (two forks, each with setsid,
// SIGHUP ignored), `sleep SECONDS1` once daemonized, then prints "armed". A program that exits
// right after must give them a moment first: one that has not called setsid yet is still in
// the terminal's foreground group, which the kernel hangs up when the session leader exits.
std::string daemonizing(const std::string& seconds) {
  return "setsid -f sh -c 'trap \"\" HUP; setsid -f sh -c \"trap \\\"\\\" HUP; exec sleep " +
         seconds + "\"; exec sleep " + seconds + "1'; echo armed";
}

// Waits until the marker's processes are gone; false if some remain at `deadline`.
bool gone_by(const std::string& marker, steady_clock::time_point deadline) {
  while (!processes_with(marker).empty()) {
    if (steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

void wait_for_processes(const std::string& marker, std::size_t count) {
  wait_until([&] { return processes_with(marker).size() >= count; },
             "the daemonized processes to start");
}

// The cgroup an actor's status names, "" without one.
std::string cgroup_of(EngineProcess& engine, const std::string& actor) {
  const auto status = engine.status(actor);
  return status["cgroup"].is_string() ? status["cgroup"].get<std::string>() : "";
}

class ProcessTree : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    EngineConfig config;
    config.args.insert(config.args.end(), {"--cgroups", GetParam()});
    ASSERT_TRUE(engine_.start(std::move(config)));
    if (GetParam() == "auto") {
      engine_.spawn("probe", {"true"});
      if (cgroup_of(engine_, "probe").empty())
        GTEST_SKIP() << "this host gives the engine no cgroup";
    }
  }
  // Whatever a failed test left (each test has markers of its own: ctest runs them at once).
  void TearDown() override {
    for (const std::string& marker : markers_) {
      for (pid_t pid : processes_with(marker)) ::kill(pid, SIGKILL);
    }
  }
  // A marker of this test and mode (a sleep's seconds: ctest runs both modes at once).
  const std::string& marker(const std::string& base) {
    return markers_.emplace_back(base + (GetParam() == "auto" ? "2" : "3"));
  }
  EngineProcess engine_;
  std::vector<std::string> markers_;
};

TEST_P(ProcessTree, StopEndsProcessesThatDaemonizedTwiceAndIgnoreHangUp) {
  const std::string mark = marker("7301.5");
  engine_.spawn("tree", {"sh", "-c", daemonizing(mark) + "; exec sleep 1000"});
  engine_.wait_output("tree", "armed");
  wait_for_processes(mark, 2);
  const auto asked = steady_clock::now();
  engine_.call("stop", {{"actor", "tree"}});
  EXPECT_TRUE(gone_by(mark, asked + kGrace + milliseconds(1000)))
      << processes_with(mark).size() << " processes of the actor survived its stop";
  // The engine inherited them as a subreaper and reaped them.
  wait_until([&] { return zombie_children(engine_.pid()).empty(); }, "the orphans to be reaped");
}

TEST_P(ProcessTree, DeleteEndsWhatAProgramThatExitedLeftRunning) {
  const std::string mark = marker("7302.5");
  engine_.spawn("left", {"sh", "-c", daemonizing(mark) + "; sleep 1"});
  engine_.wait_sealed("left");
  wait_for_processes(mark, 2);
  std::this_thread::sleep_for(milliseconds(100));
  // Its own exit ends nothing: a program may leave a server running on purpose.
  EXPECT_EQ(processes_with(mark).size(), 2u);
  const auto asked = steady_clock::now();
  engine_.call("delete", {{"actor", "left"}});
  EXPECT_TRUE(gone_by(mark, asked + kGrace + milliseconds(1000)));
}

TEST_P(ProcessTree, NoOtherProcessIsSignalled) {
  // Another actor's daemons, and a process of the same user outside the engine, that ignore
  // nothing: any signal would end them.
  const std::string mark = marker("7303.5");
  const std::string other = marker("7304.5");
  const std::string outside = marker("7305.5");
  engine_.spawn("stopped", {"sh", "-c", daemonizing(mark) + "; exec sleep 1000"});
  engine_.spawn("bystander", {"sh", "-c", daemonizing(other) + "; exec sleep 1000"});
  engine_.wait_output("stopped", "armed");
  engine_.wait_output("bystander", "armed");
  wait_for_processes(mark, 2);
  wait_for_processes(other, 2);
  pid_t outsider = 0;
  const char* argv[] = {"sleep", outside.c_str(), nullptr};
  ASSERT_EQ(::posix_spawnp(&outsider, "sleep", nullptr, nullptr, const_cast<char**>(argv), environ),
            0);
  engine_.call("stop", {{"actor", "stopped"}});
  EXPECT_TRUE(gone_by(mark, steady_clock::now() + kGrace + milliseconds(1000)));
  std::this_thread::sleep_for(kGrace);  // past the grace period's SIGKILL
  EXPECT_EQ(processes_with(other).size(), 2u);
  EXPECT_EQ(processes_with(outside).size(), 1u);
  ::kill(outsider, SIGKILL);
  ::waitpid(outsider, nullptr, 0);
}

TEST_P(ProcessTree, ShutdownEndsEveryActorsDaemons) {
  const std::string running_mark = marker("7301.7");
  const std::string exited_mark = marker("7302.7");
  engine_.spawn("running", {"sh", "-c", daemonizing(running_mark) + "; exec sleep 1000"});
  engine_.spawn("exited", {"sh", "-c", daemonizing(exited_mark) + "; sleep 1"});
  engine_.wait_output("running", "armed");
  engine_.wait_sealed("exited");
  wait_for_processes(running_mark, 2);
  wait_for_processes(exited_mark, 2);
  ::kill(engine_.pid(), SIGTERM);
  ASSERT_TRUE(engine_.wait_exit());
  EXPECT_TRUE(gone_by(running_mark, steady_clock::now() + milliseconds(1000)));
  EXPECT_TRUE(gone_by(exited_mark, steady_clock::now() + milliseconds(1000)));
}

TEST_P(ProcessTree, TheSignalAStopNamesReachesEveryProcessOfTheSession) {
  // A daemon that ignores SIGHUP and leaves a file behind when SIGTERM reaches it; it says it
  // is ready (its traps set) with another file.
  const std::string mark = marker("7307.5");
  TempDir dir;
  const std::string ready = (dir.path() / "ready").string();
  const std::string file = (dir.path() / "got-term").string();
  engine_.spawn(
      "named",
      {"sh", "-c",
       "setsid -f sh -c 'trap \"\" HUP; trap \"touch " + file + "; exit\" TERM; touch " + ready +
           "; while :; do sleep 0.05; done; : " + mark + "'; echo armed; exec sleep 1000"});
  wait_until([&] { return std::filesystem::exists(ready); }, "the daemon to set its traps");
  const auto asked = steady_clock::now();
  engine_.call("stop", {{"actor", "named"}, {"signal", "TERM"}});
  EXPECT_TRUE(gone_by(mark, asked + kGrace + milliseconds(1000)));
  EXPECT_TRUE(std::filesystem::exists(file)) << "the daemon got SIGTERM, not only the SIGKILL";
}

// With cgroups, what neither the token nor the tree can find: a process that cleared its
// environment and left the leader's tree, its session and its group.
TEST_P(ProcessTree, InACgroupEvenAProcessThatClearedItsEnvironmentEndsWithTheStop) {
  if (GetParam() != "auto") GTEST_SKIP() << "the documented limit of the token and the subreaper";
  const std::string mark = marker("7306.5");
  engine_.spawn("hidden", {"sh", "-c",
                           "env -i setsid -f sh -c 'trap \"\" HUP; exec sleep " + mark +
                               "'; echo armed; exec sleep 1000"});
  engine_.wait_output("hidden", "armed");
  // Only the sleep itself: until they exec, the actor's shell, env and setsid name the marker
  // too, and they still carry the environment.
  const std::string sleeper = std::string("sleep\0", 6) + mark + '\0';
  const auto hidden_sleep = [&] {
    for (pid_t pid : processes_with(mark))
      if (read_file("/proc/" + std::to_string(pid) + "/cmdline") == sleeper) return pid;
    return pid_t{0};
  };
  wait_until([&] { return hidden_sleep() != 0; }, "the hidden sleep to start");
  const std::string cgroup = cgroup_of(engine_, "hidden");
  ASSERT_FALSE(cgroup.empty());
  const pid_t hidden = hidden_sleep();
  EXPECT_EQ(read_file("/proc/" + std::to_string(hidden) + "/environ").find("BACKSCROLL_SESSION"),
            std::string::npos)
      << "env -i";
  const auto asked = steady_clock::now();
  engine_.call("stop", {{"actor", "hidden"}});
  EXPECT_TRUE(gone_by(mark, asked + kGrace + milliseconds(1000)));
}

TEST_P(ProcessTree, AnActorsCgroupHoldsItsProgramAndGoesWithTheActor) {
  if (GetParam() != "auto") {
    engine_.spawn("plain", {"sleep", "1000"});
    EXPECT_EQ(cgroup_of(engine_, "plain"), "") << "--cgroups off";
    return;
  }
  engine_.spawn("held", {"sleep", "1000"});
  engine_.spawn("other", {"sleep", "1000"});
  const std::filesystem::path cgroup = cgroup_of(engine_, "held");
  ASSERT_TRUE(std::filesystem::is_directory(cgroup)) << cgroup;
  EXPECT_NE(cgroup, std::filesystem::path(cgroup_of(engine_, "other"))) << "one per actor";
  // The leader is inside from its start: the kernel lists it there.
  const pid_t leader = engine_.status("held")["pid"].get<pid_t>();
  EXPECT_NE(read_file(cgroup / "cgroup.procs").find(std::to_string(leader)), std::string::npos);
  // A restart runs the next session in a fresh cgroup (the kernel kills what is cloned into a
  // cgroup after a cgroup.kill there); the stopped session's empty one is gone.
  engine_.call("restart", {{"actor", "held"}});
  const std::filesystem::path next = cgroup_of(engine_, "held");
  EXPECT_NE(next, cgroup);
  EXPECT_EQ(next.parent_path(), cgroup.parent_path());
  EXPECT_FALSE(std::filesystem::exists(cgroup));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(engine_.status("held")["state"], "running") << "the new session was not killed";
  const std::filesystem::path tree = next.parent_path();
  engine_.call("delete", {{"actor", "held"}});
  wait_until([&] { return !std::filesystem::exists(next); }, "the deleted actor's cgroup to go");
  ::kill(engine_.pid(), SIGTERM);
  ASSERT_TRUE(engine_.wait_exit());
  EXPECT_FALSE(std::filesystem::exists(tree)) << "the engine removes its cgroups when it exits";
}

INSTANTIATE_TEST_SUITE_P(Cgroups, ProcessTree, ::testing::Values("auto", "off"),
                         [](const auto& test) { return std::string(test.param); });

}  // namespace
}  // namespace backscroll::testing
