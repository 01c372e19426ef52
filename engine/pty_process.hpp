// PtyProcess: starting a program on a fresh PTY (docs/design.md, "Sessions"): its own session and
// process group (so SIGHUP/SIGKILL reach the whole group), the PTY as controlling terminal and fds
// 0-2, TERM=xterm-256color, UTF-8 line discipline, the requested size and working directory.
// Used by the io thread. The child is started with vfork semantics (no copy of the engine's
// page tables; exec errors come back as errno): posix_spawn, or, to start it inside a cgroup
// (cgroup_tree.hpp), which posix_spawn cannot ask for, clone(CLONE_VM | CLONE_VFORK) with a
// child that moves itself into the cgroup before it runs the program.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shm/error.hpp"

namespace backscroll::engine {

struct WindowSize {
  std::uint16_t cols = 80;
  std::uint16_t rows = 24;
};

inline constexpr std::uint16_t kMaxWindowDimension = 1000;

struct SpawnSpec {
  std::vector<std::string> argv;                         // argv[0] is looked up in PATH
  std::string cwd;                                       // empty: the engine's working directory
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) the engine's
  // true: `env` is the whole environment (the CLI sends its caller's); false: `env` is added to
  // the engine's own environment minus the engine's variables (kEngineOnlyVariables). Either
  // way TERM is xterm-256color.
  bool env_replace = false;
  WindowSize size;
  // Set as BACKSCROLL_SESSION last, over any inherited value (process_tree.hpp): marks every
  // process the session starts. Empty: not set.
  std::string session_token;
};

struct PtyProcess {
  int master_fd = -1;      // non-blocking, close-on-exec
  pid_t pid = 0;           // leader of its own session and process group
  int pidfd = -1;          // readable once the process exited; close-on-exec
  bool in_cgroup = false;  // started inside the cgroup asked for
};

// Starts spec's program on a new PTY; inside the cgroup open at `cgroup_fd` when it is not -1
// (when the kernel refuses the move, e.g. a cgroup in threaded mode, outside it, with a
// warning in the log: PtyProcess::in_cgroup says which).
Result<PtyProcess> spawn_on_pty(const SpawnSpec& spec, int cgroup_fd = -1);

// The environment the program gets (see SpawnSpec::env_replace), as NAME=VALUE strings.
std::vector<std::string> child_environment(const SpawnSpec& spec, char** engine_environment);

// Where the terminal's user is: the current directory of the PTY's foreground process group
// leader (a shell, or the program it runs), else of `leader` (the session's first process);
// nullopt when neither can be read (gone, or another user's).
std::optional<std::string> working_directory_of(int master_fd, pid_t leader);

// TIOCSWINSZ on the master: the kernel sends SIGWINCH to the foreground process group.
Result<void> set_window_size(int master_fd, WindowSize size);

}  // namespace backscroll::engine
