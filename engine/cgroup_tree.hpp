// Cgroup scopes for actors (docs/architecture.md, "Process trees"). Where the engine may manage
// cgroup v2 directories below its own (its cgroup is delegated to it, or it is the root of its
// cgroup namespace: a container or VM of its own), every session of an actor runs in a cgroup
// of its own:
//
//   <engine's cgroup>/backscroll-<engine pid>.<k>/<actor name>.<n>
//
// Its program is moved inside it before it runs (pty_process.hpp), so each process it forks is
// in it, whatever it does to its session, process group or environment. Signalling "everything the
// actor started" is then exact: the members listed by the kernel, and SIGKILL through cgroup.kill,
// which also catches a process forked while it runs. No controller is enabled anywhere: the cgroups
// only group, they limit nothing. Elsewhere (no cgroup v2, not delegated, `--cgroups off`) the
// engine relies on the session token and the subreaper alone (process_tree.hpp). Io thread only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shm/error.hpp"

namespace backscroll::engine {

// One session's cgroup. Shared by its actor and a pending end of its leftovers; the last owner
// removes the directory (once its processes are gone; else the tree's sweep does later).
class ActorCgroup {
 public:
  // `relative`: the path as /proc/PID/cgroup names it; `dir_fd`: the directory, owned.
  ActorCgroup(std::filesystem::path path, std::string relative, int dir_fd)
      : path_(std::move(path)), relative_(std::move(relative)), dir_fd_(dir_fd) {}
  ~ActorCgroup();
  ActorCgroup(const ActorCgroup&) = delete;
  ActorCgroup& operator=(const ActorCgroup&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  // The directory, open (spawn_on_pty moves the program in through it).
  int dir_fd() const noexcept { return dir_fd_; }
  // The live processes in it and in any cgroup a program made below it.
  std::vector<pid_t> processes() const;
  // Whether any process is in it or below (cgroup.events "populated").
  bool populated() const;
  // Sends `sig` to every process in it. SIGKILL goes through cgroup.kill: one atomic step that
  // also reaches processes forked meanwhile. Returns how many processes another signal reached.
  std::size_t signal(int sig) const;

 private:
  std::filesystem::path path_;
  std::string relative_;
  int dir_fd_;
};

class CgroupTree {
 public:
  // The engine's tree, or why there is none: io_error (no cgroup v2 holds the engine, or the
  // directory could not be made), permission_denied (its cgroup is not delegated to it).
  static Result<std::unique_ptr<CgroupTree>> open();
  // As open(), from the given /proc files and with `engine_pid` naming the directory (tests).
  static Result<std::unique_ptr<CgroupTree>> open_from(const std::filesystem::path& proc_cgroup,
                                                       const std::filesystem::path& mountinfo,
                                                       pid_t engine_pid);
  // Ends what is still in the actors' cgroups (SIGKILL), waits up to a second for them to be
  // empty, and removes the directory.
  ~CgroupTree();
  CgroupTree(const CgroupTree&) = delete;
  CgroupTree& operator=(const CgroupTree&) = delete;

  // The directory that holds the actors' cgroups.
  const std::filesystem::path& path() const noexcept { return dir_; }
  // A new, empty cgroup for a session of actor `name`.
  Result<std::shared_ptr<ActorCgroup>> create(std::string_view name);
  // Removes the cgroups no one holds any more whose processes were still ending when they were
  // let go of; called on each create().
  void sweep() noexcept;

 private:
  CgroupTree(std::filesystem::path dir, std::string relative)
      : dir_(std::move(dir)), relative_(std::move(relative)) {}
  std::filesystem::path dir_;
  std::string relative_;  // as /proc/PID/cgroup names it
  std::uint64_t created_ = 0;
  struct Leaf {
    std::filesystem::path path;
    std::weak_ptr<ActorCgroup> owner;
  };
  std::vector<Leaf> leaves_;  // every cgroup made and not yet removed
};

// The cgroup v2 directory of the process whose /proc/PID/cgroup and mountinfo are given, and
// whether it is the root of its cgroup namespace. nullopt: no cgroup v2 mounted where the
// process's cgroup is visible.
struct CgroupPlace {
  std::filesystem::path dir;
  std::string relative;  // as /proc/PID/cgroup names it ("/" at the namespace's root)
};
std::optional<CgroupPlace> cgroup_place(const std::filesystem::path& proc_cgroup,
                                        const std::filesystem::path& mountinfo);

// Removes the cgroup at `dir` and every cgroup below it, deepest first; false if any is still
// populated (or cannot be removed).
bool remove_cgroup(const std::filesystem::path& dir) noexcept;

}  // namespace backscroll::engine
