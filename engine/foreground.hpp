// The program in an actor's terminal right now (docs/architecture.md, "The foreground
// program"): the leader of the PTY's foreground process group (tcgetpgrp on the master), as
// tmux's pane_current_command: the shell at its prompt, or the program it runs (`vim`,
// `claude`, `npm test`). Read from /proc; io thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace backscroll::engine {

struct Foreground {
  pid_t pid = 0;
  std::string command;            // /proc/PID/comm: the name the kernel keeps (15 bytes at most)
  std::vector<std::string> argv;  // /proc/PID/cmdline, at most kMaxArgvBytes in all
  std::string cwd;                // /proc/PID/cwd; empty when it cannot be read
  bool operator==(const Foreground&) const = default;
};

inline constexpr std::size_t kMaxForegroundArgvBytes = 4096;

// The foreground process group's leader of the terminal whose master is `master_fd`, else
// `leader` (the session's first process) when the group has none or cannot be read; nullopt
// when neither can (gone, or another user's).
std::optional<Foreground> foreground_of(int master_fd, pid_t leader);

}  // namespace backscroll::engine
