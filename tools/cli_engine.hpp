// EngineTarget: how a CLI command reaches the engine. Commands that need the engine connect to
// <runtime dir>/engine.sock; when nothing answers they start `backscrolld` detached, as tmux
// starts its server, and wait for it (docs/cli.md, "Autostart"). Commands that only read rings
// (tail) never start an engine.
#pragma once

#include <chrono>
#include <cstdint>

#include "shm/control_client.hpp"
#include "shm/error.hpp"
#include "shm/places.hpp"

namespace backscroll::cli {

inline constexpr std::chrono::milliseconds kEngineStartTimeout{5000};

struct EngineTarget {
  Places places;
  bool autostart = true;

  // A connection to the engine, starting one first when none answers and autostart is on.
  Result<control::ControlClient> connect() const;
  // A connection only if an engine already answers (engine_unavailable otherwise).
  Result<control::ControlClient> connect_existing() const;
};

// ControlClient::connect, refusing (engine_unavailable) a socket whose owner is no longer a
// running process.
Result<control::ControlClient> connect_live(const Places& places);

// True while `pid` runs; a zombie (exited, not yet reaped by its parent) counts as gone.
bool process_running(std::int64_t pid);

// Starts backscrolld for `places` in its own session, its output appended to
// <runtime dir>/engine.log, then waits up to `timeout` until it answers. The binary is the one
// next to this executable (/proc/self/exe), else `backscrolld` from PATH.
Result<control::ControlClient> start_engine(const Places& places,
                                            std::chrono::milliseconds timeout);

}  // namespace backscroll::cli
