// `backscroll tail`: writes an actor's raw output to stdout straight from its ring (shared
// memory only; the engine is never asked, and never started). Optionally follows the ring,
// sleeping on its futex word, until interrupted, until the session ends, or until the ring
// is closed.
#pragma once

#include <optional>
#include <string>

#include "shm/cursor.hpp"
#include "shm/places.hpp"

namespace backscroll::cli {

struct TailArgs {
  std::string actor;
  std::optional<Cursor> from;  // default: the oldest readable cursor
  bool follow = false;
  bool until_exit = false;  // implies follow
};

int run_tail(const Places& places, const TailArgs& args);

}  // namespace backscroll::cli
