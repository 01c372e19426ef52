// The processes an actor's program started, however they detached from it (docs/architecture.md,
// "Process trees"). A program that forks twice and calls setsid leaves its session and process
// group, so signalling the group misses it; the engine finds such processes two ways:
//   - every program of a session inherits a token in its environment (kSessionTokenVariable,
//     random per session): a process holding it, and its descendants, belong to the session;
//   - the engine is a child subreaper (PR_SET_CHILD_SUBREAPER), so an orphan is reparented to
//     the engine, not to init: the leader's descendants stay descendants, and the engine reaps
//     those orphans when they exit (reap_orphans).
// Only processes of the engine's own user are looked at (the kernel hides others' environment)
// and signalled, each through a pidfd after checking it is still the process scanned.
// Io thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace backscroll::engine {

// The environment variable that carries a session's token.
inline constexpr std::string_view kSessionTokenVariable = "BACKSCROLL_SESSION";

// A process as one scan saw it: its pid and start time (clock ticks after boot, /proc/PID/stat
// field 22), which tell it from a later process given the same pid.
struct ProcessRef {
  pid_t pid = 0;
  std::uint64_t start_ticks = 0;
  bool operator==(const ProcessRef&) const = default;
};

// A new session token: 32 hex digits from the kernel's random source.
std::string new_session_token();

// The live (not zombie) processes of this user that belong to a session: `leader` (0: gone) and
// its descendants, every process whose initial environment holds `token` and their descendants.
// Never the engine itself.
std::vector<ProcessRef> session_processes(pid_t leader, std::string_view token);

// Sends `sig` to process `pid` through a pidfd, which pins whatever process has the pid when it
// is opened, if `still_the_one()` (asked after that) confirms it is the process meant: a pid
// reused meanwhile is never hit. False when it is gone, not the one, or the signal failed.
bool signal_pinned(pid_t pid, const std::function<bool()>& still_the_one, int sig);

// Sends `sig` to each process that is still the one scanned; returns how many it reached.
std::size_t signal_processes(const std::vector<ProcessRef>& processes, int sig);

// Reaps this process's exited children for which `keep(pid)` is false (the orphans a subreaper
// inherits; the actors' leaders are kept as zombies until their sessions are sealed).
void reap_orphans(const std::function<bool(pid_t)>& keep);

// Makes this process the subreaper of its descendants. False when the kernel refuses.
bool become_subreaper();

}  // namespace backscroll::engine
