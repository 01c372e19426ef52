// `backscroll wait NAME`: blocks until the actor reaches a state a script waits for (docs/cli.md):
// its program ended (--exit, exiting with the program's status), it waits for input (--idle:
// the agent status is idle, or with no agent recognised no output for --quiet seconds), or its
// output after the current cursor shows a line matching a regex (--match; the unfinished line
// counts, so a prompt without a newline matches). The first condition met ends the wait. Reads
// the ring in shared memory, never asks the engine anything but where the ring is.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "shm/cursor.hpp"
#include "tools/cli_engine.hpp"

namespace backscroll::cli {

// Exit status of `wait --timeout` when the time ran out (timeout(1)'s).
inline constexpr int kExitTimedOut = 124;

struct WaitArgs {
  std::string actor;
  bool exit = false;
  bool idle = false;
  std::optional<std::string> match;  // PCRE2, over plain text lines (search's)
  // --match looks at output from this cursor on (default: the committed cursor when wait
  // starts). A script takes it before it acts (status's `committed`, spawn's `cursor`) so output
  // that comes before wait has started is not missed.
  std::optional<Cursor> from;
  bool ignore_case = false;
  std::chrono::milliseconds quiet{3000};             // --idle without a recognised agent
  std::optional<std::chrono::milliseconds> timeout;  // none: wait as long as it takes
};

// 0 when --idle or --match was met (a match's line is printed), the program's status (128 + N
// for a signal) for --exit, kExitTimedOut, 1 when the program ended without --exit before
// another condition, 2 for a bad pattern.
int run_wait(const EngineTarget& engine, const WaitArgs& args);

}  // namespace backscroll::cli
