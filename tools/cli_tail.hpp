// `backscroll tail`: writes an actor's raw output to stdout straight from its ring (shared
// memory; the engine is asked only for bytes older than the ring holds, and with -n for the
// screen's last lines, and never started). Optionally follows the ring, sleeping on its futex
// word, until interrupted, until the session ends, or until the ring is closed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "shm/cursor.hpp"
#include "shm/places.hpp"
#include "tools/cli_engine.hpp"

namespace backscroll::cli {

struct TailArgs {
  std::string actor;
  std::optional<Cursor> from;  // default: the oldest retained cursor (ring, cache, transcript)
  // Instead of raw bytes from `from`: the last N lines of the screen and history as text
  // (capture), then (following) the raw output after them.
  std::optional<std::size_t> lines;
  bool follow = false;
  bool until_exit = false;  // implies follow
};

// Bytes older than the ring's floor (a stopped actor's released ring, a small ring) come first
// from the engine's `history` (completed-session cache, transcript); the ring follows.
// With --until-exit the exit status is the program's (128 + N for signal N), as a shell's.
int run_tail(const EngineTarget& engine, const TailArgs& args);

}  // namespace backscroll::cli
