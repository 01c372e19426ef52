// Cgroup scopes (engine/cgroup_tree.hpp): where the engine's cgroup is, from /proc files of
// every shape the kernel writes; when the engine may make cgroups there (delegated, or the
// namespace's root); the directories it makes and removes, its own and those of engines that
// are gone. On a host that gives this test a cgroup v2 tree of its own: a program started in an
// actor's cgroup is in it from its start, cgroup.kill ends it, and the tree leaves nothing.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "engine/cgroup_tree.hpp"
#include "engine/pty_process.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::engine {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// A pid no process has: a child's, after it was reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

std::optional<CgroupPlace> place_of(const std::string& cgroup, const std::string& mountinfo) {
  TempDir dir;
  write(dir.path() / "cgroup", cgroup);
  write(dir.path() / "mountinfo", mountinfo);
  return cgroup_place(dir.path() / "cgroup", dir.path() / "mountinfo");
}

constexpr const char* kUnified =
    "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
    "30 22 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate\n";
constexpr const char* kHybrid =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(CgroupPlace, IsTheMountPointJoinedWithTheUnifiedLine) {
  const auto user =
      place_of("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x\n", kUnified);
  ASSERT_TRUE(user);
  EXPECT_EQ(user->dir,
            fs::path("/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/x"));
  EXPECT_EQ(user->relative, "/user.slice/user-1000.slice/user@1000.service/app.slice/x");

  // Hybrid: v1 hierarchies first, the unified one mounted beside them.
  const auto hybrid = place_of("4:memory:/a\n1:cpu:/\n0::/\n", kHybrid);
  ASSERT_TRUE(hybrid);
  EXPECT_EQ(hybrid->dir, fs::path("/sys/fs/cgroup/unified"));
  EXPECT_EQ(hybrid->relative, "/");
}

TEST(CgroupPlace, AMountOfASubtreeShowsOnlyWhatIsBelowIt) {
  const std::string mount = "30 22 0:27 /outer /mnt/cg\\040dir rw - cgroup2 cgroup2 rw\n";
  const auto inside = place_of("0::/outer/inner\n", mount);
  ASSERT_TRUE(inside);
  EXPECT_EQ(inside->dir, fs::path("/mnt/cg dir/inner")) << "octal escapes decoded";
  EXPECT_FALSE(place_of("0::/outerother\n", mount)) << "a sibling that shares a prefix";
  EXPECT_FALSE(place_of("0::/elsewhere\n", mount));
}

TEST(CgroupPlace, NoneWithoutAUnifiedHierarchy) {
  EXPECT_FALSE(place_of("4:memory:/a\n1:cpu:/\n", kHybrid)) << "no 0:: line (cgroup v1 only)";
  EXPECT_FALSE(place_of("0::/\n", "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"));
  EXPECT_FALSE(place_of("", kUnified));
  EXPECT_FALSE(place_of("0::relative\n", kUnified));
}

// A tree over a plain directory standing in for the cgroup file system.
Result<std::unique_ptr<CgroupTree>> tree_in(const TempDir& dir, const std::string& cgroup,
                                            pid_t engine_pid) {
  write(dir.path() / "cgroup", cgroup);
  write(dir.path() / "mountinfo",
        "30 22 0:27 / " + (dir.path() / "fs").string() + " rw - cgroup2 cgroup2 rw\n");
  fs::create_directories(dir.path() / "fs" /
                         fs::path(cgroup.substr(3, cgroup.find('\n') - 3)).relative_path());
  return CgroupTree::open_from(dir.path() / "cgroup", dir.path() / "mountinfo", engine_pid);
}

TEST(CgroupTree, NeedsADelegatedCgroupOrTheNamespacesRoot) {
  TempDir dir;
  const auto refused = tree_in(dir, "0::/system.slice/some.service\n", ::getpid());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::permission_denied);
  EXPECT_NE(refused.error().message.find("is not delegated"), std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(fs::is_empty(dir.path() / "fs" / "system.slice" / "some.service"))
      << "nothing made in a cgroup that is not the engine's";
}

TEST(CgroupTree, MakesOneDirectoryPerActorAndRemovesItsOwnAndThoseOfGoneEngines) {
  TempDir dir;
  const fs::path root = dir.path() / "fs";
  fs::create_directories(root);
  const pid_t gone = dead_pid();
  fs::create_directories(root / ("backscroll-" + std::to_string(gone) + ".0") / "old.1");
  const fs::path living = root / ("backscroll-" + std::to_string(::getppid()) + ".0");
  fs::create_directories(living / "busy.1");
  fs::create_directories(root / "unrelated");
  {
    auto tree = tree_in(dir, "0::/\n", ::getpid());
    ASSERT_TRUE(tree) << tree.error().message;
    EXPECT_FALSE(fs::exists(root / ("backscroll-" + std::to_string(gone) + ".0")))
        << "an engine that is gone: its empty directories removed";
    EXPECT_TRUE(fs::exists(living / "busy.1")) << "a running engine's: untouched";
    EXPECT_TRUE(fs::exists(root / "unrelated"));
    EXPECT_EQ((*tree)->path().parent_path(), root);
    EXPECT_EQ((*tree)->path().filename().string().rfind(
                  "backscroll-" + std::to_string(::getpid()) + ".", 0),
              0u);

    auto a = (*tree)->create("a");
    auto a_again = (*tree)->create("a");
    ASSERT_TRUE(a && a_again);
    EXPECT_NE((*a)->path(), (*a_again)->path()) << "an actor made again never shares one";
    EXPECT_EQ((*a)->path().parent_path(), (*tree)->path());
    EXPECT_GE((*a)->dir_fd(), 0);
    EXPECT_FALSE((*a)->populated());
    const fs::path first = (*a)->path();
    a->reset();  // the last owner lets go: removed
    EXPECT_FALSE(fs::exists(first));
  }
  EXPECT_TRUE(fs::exists(living / "busy.1"));
  EXPECT_EQ(std::distance(fs::directory_iterator(root), fs::directory_iterator()), 2)
      << "the tree's own directory is gone with it";
}

// The real thing, where the host lets this process make cgroups (CI's machines do).
TEST(CgroupTree, AProgramStartedInAnActorsCgroupIsInItUntilCgroupKillEndsIt) {
  auto tree = CgroupTree::open();
  if (!tree) GTEST_SKIP() << "no cgroup tree here: " << tree.error().message;
  auto cgroup = (*tree)->create("real");
  ASSERT_TRUE(cgroup) << cgroup.error().message;
  SpawnSpec spec;
  spec.argv = {"sh", "-c", "sleep 1000 & exec sleep 1000"};
  auto process = spawn_on_pty(spec, (*cgroup)->dir_fd());
  ASSERT_TRUE(process) << process.error().message;
  EXPECT_TRUE(process->in_cgroup);
  testing::wait_until([&] { return (*cgroup)->processes().size() == 2; },
                      "the program and its child in the cgroup");
  EXPECT_TRUE((*cgroup)->populated());
  const std::vector<pid_t> inside = (*cgroup)->processes();
  EXPECT_NE(std::find(inside.begin(), inside.end(), process->pid), inside.end());
  EXPECT_EQ((*cgroup)->signal(SIGKILL), 0u) << "through cgroup.kill";
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PIDFD, static_cast<id_t>(process->pidfd), &info, WEXITED), 0);
  EXPECT_EQ(info.si_status, SIGKILL);
  testing::wait_until([&] { return !(*cgroup)->populated(); }, "the cgroup to empty");
  ::close(process->pidfd);
  ::close(process->master_fd);
  const fs::path path = (*cgroup)->path();
  cgroup->reset();
  EXPECT_FALSE(fs::exists(path));
}

TEST(CgroupTree, AProgramThatCannotStartInItsCgroupFailsAsOutsideIt) {
  auto tree = CgroupTree::open();
  if (!tree) GTEST_SKIP() << "no cgroup tree here: " << tree.error().message;
  auto cgroup = (*tree)->create("missing");
  ASSERT_TRUE(cgroup);
  SpawnSpec spec;
  spec.argv = {"no-such-program-7311"};
  const auto inside = spawn_on_pty(spec, (*cgroup)->dir_fd());
  const auto outside = spawn_on_pty(spec);
  ASSERT_FALSE(inside);
  ASSERT_FALSE(outside);
  EXPECT_EQ(inside.error().code, Errc::spawn_failed);
  EXPECT_EQ(inside.error().message, outside.error().message);
  spec.argv = {"true"};
  spec.cwd = "/no/such/dir/7311";
  const auto bad_cwd = spawn_on_pty(spec, (*cgroup)->dir_fd());
  ASSERT_FALSE(bad_cwd);
  EXPECT_EQ(bad_cwd.error().message, spawn_on_pty(spec).error().message);
  EXPECT_FALSE((*cgroup)->populated()) << "the failed children were reaped";
}

TEST(CgroupTree, WhenTheMoveIsRefusedTheProgramStartsOutsideTheCgroup) {
  if (testing::kThreadSanitizerBuild) GTEST_SKIP() << "ThreadSanitizer cannot follow the clone";
  // A directory that is not a cgroup stands for one the kernel refuses (threaded, gone).
  TempDir dir;
  const int not_a_cgroup = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(not_a_cgroup, 0);
  SpawnSpec spec;
  spec.argv = {"sh", "-c", "exit 7"};
  auto process = spawn_on_pty(spec, not_a_cgroup);
  ::close(not_a_cgroup);
  ASSERT_TRUE(process) << process.error().message;
  EXPECT_FALSE(process->in_cgroup);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PIDFD, static_cast<id_t>(process->pidfd), &info, WEXITED), 0);
  EXPECT_EQ(info.si_status, 7) << "it ran";
  ::close(process->pidfd);
  ::close(process->master_fd);
}

}  // namespace
}  // namespace backscroll::engine
