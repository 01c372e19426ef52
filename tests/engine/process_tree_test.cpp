// The whole process tree ends with its actor (docs/architecture.md, "Process trees"): stop,
// delete and shutdown end every process the actor's program started, also ones that forked
// twice and left the session and process group (setsid) and ignore SIGHUP, within the grace
// period plus a second; processes that are not the actor's (another actor's, the test's own)
// are never signalled; the orphans the engine inherits as a subreaper are reaped. The test finds
// the processes by scanning /proc for a marker in their command line.
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

class ProcessTree : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.start()); }
  // Whatever a failed test left (each test has markers of its own: ctest runs them at once).
  void TearDown() override {
    for (const std::string& marker : markers_) {
      for (pid_t pid : processes_with(marker)) ::kill(pid, SIGKILL);
    }
  }
  const std::string& marker(std::string m) { return markers_.emplace_back(std::move(m)); }
  EngineProcess engine_;
  std::vector<std::string> markers_;
};

TEST_F(ProcessTree, StopEndsProcessesThatDaemonizedTwiceAndIgnoreHangUp) {
  marker("7301.5");
  engine_.spawn("tree", {"sh", "-c", daemonizing("7301.5") + "; exec sleep 1000"});
  engine_.wait_output("tree", "armed");
  wait_for_processes("7301.5", 2);
  const auto asked = steady_clock::now();
  engine_.call("stop", {{"actor", "tree"}});
  EXPECT_TRUE(gone_by("7301.5", asked + kGrace + milliseconds(1000)))
      << processes_with("7301.5").size() << " processes of the actor survived its stop";
  // The engine inherited them as a subreaper and reaped them.
  wait_until([&] { return zombie_children(engine_.pid()).empty(); }, "the orphans to be reaped");
}

TEST_F(ProcessTree, DeleteEndsWhatAProgramThatExitedLeftRunning) {
  marker("7302.5");
  engine_.spawn("left", {"sh", "-c", daemonizing("7302.5") + "; sleep 1"});
  engine_.wait_sealed("left");
  wait_for_processes("7302.5", 2);
  std::this_thread::sleep_for(milliseconds(100));
  // Its own exit ends nothing: a program may leave a server running on purpose.
  EXPECT_EQ(processes_with("7302.5").size(), 2u);
  const auto asked = steady_clock::now();
  engine_.call("delete", {{"actor", "left"}});
  EXPECT_TRUE(gone_by("7302.5", asked + kGrace + milliseconds(1000)));
}

TEST_F(ProcessTree, NoOtherProcessIsSignalled) {
  // Another actor's daemons, and a process of the same user outside the engine, that ignore
  // nothing: any signal would end them.
  marker("7303.5");
  marker("7304.5");
  marker("7305.5");
  engine_.spawn("stopped", {"sh", "-c", daemonizing("7303.5") + "; exec sleep 1000"});
  engine_.spawn("bystander", {"sh", "-c", daemonizing("7304.5") + "; exec sleep 1000"});
  engine_.wait_output("stopped", "armed");
  engine_.wait_output("bystander", "armed");
  wait_for_processes("7303.5", 2);
  wait_for_processes("7304.5", 2);
  pid_t outsider = 0;
  const char* argv[] = {"sleep", "7305.5", nullptr};
  ASSERT_EQ(::posix_spawnp(&outsider, "sleep", nullptr, nullptr, const_cast<char**>(argv), environ),
            0);
  engine_.call("stop", {{"actor", "stopped"}});
  EXPECT_TRUE(gone_by("7303.5", steady_clock::now() + kGrace + milliseconds(1000)));
  std::this_thread::sleep_for(kGrace);  // past the grace period's SIGKILL
  EXPECT_EQ(processes_with("7304.5").size(), 2u);
  EXPECT_EQ(processes_with("7305.5").size(), 1u);
  ::kill(outsider, SIGKILL);
  ::waitpid(outsider, nullptr, 0);
}

TEST_F(ProcessTree, ShutdownEndsEveryActorsDaemons) {
  marker("7301.7");
  marker("7302.7");
  engine_.spawn("running", {"sh", "-c", daemonizing("7301.7") + "; exec sleep 1000"});
  engine_.spawn("exited", {"sh", "-c", daemonizing("7302.7") + "; sleep 1"});
  engine_.wait_output("running", "armed");
  engine_.wait_sealed("exited");
  wait_for_processes("7301.7", 2);
  wait_for_processes("7302.7", 2);
  ::kill(engine_.pid(), SIGTERM);
  ASSERT_TRUE(engine_.wait_exit());
  EXPECT_TRUE(gone_by("7301.7", steady_clock::now() + milliseconds(1000)));
  EXPECT_TRUE(gone_by("7302.7", steady_clock::now() + milliseconds(1000)));
}

}  // namespace
}  // namespace backscroll::testing
