// `backscroll events NAME`: an actor's event track (docs/recorder.md), oldest first, as lines or
// JSON objects; with -f, then the events recorded from now on, until the actor is deleted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shm/cursor.hpp"
#include "tools/cli_engine.hpp"

namespace backscroll::cli {

struct EventsArgs {
  std::string actor;
  std::optional<Cursor> from;
  std::optional<std::int64_t> since_ms;  // wall clock
  std::vector<std::string> kinds;        // empty: every kind
  bool follow = false;
  bool json = false;
};

int run_events(const EngineTarget& engine, const EventsArgs& args);

// One event as a line of text: "TIME  CURSOR  KIND  details" (exposed for tests).
std::string describe_event(const control::Json& event);

}  // namespace backscroll::cli
