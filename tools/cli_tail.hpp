// `backscroll tail`: writes an actor's raw output to stdout straight from its ring (shared
// memory only; the engine is never asked, and never started). Optionally follows the ring,
// sleeping on its futex word, until interrupted, until the session ends, or until the ring
// is closed.
#pragma once

#include <optional>
#include <string>

#include "shm/cursor.hpp"
#include "shm/places.hpp"
#include "tools/cli_engine.hpp"

namespace backscroll::cli {

struct TailArgs {
  std::string actor;
  std::optional<Cursor> from;  // default: the oldest retained cursor (ring, cache, transcript)
  bool follow = false;
  bool until_exit = false;  // implies follow
};

// Bytes older than the ring's floor (a stopped actor's released ring, a small ring) come first
// from the engine's `history` (completed-session cache, transcript); the ring follows.
int run_tail(const EngineTarget& engine, const TailArgs& args);

}  // namespace backscroll::cli
