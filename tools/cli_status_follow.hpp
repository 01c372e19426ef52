// `backscroll status -f`: follows the agent status of actors (docs/cli.md, docs/status-detector.md)
// and prints one line per event: the initial state of each actor (restored from its ring), each
// live change of title, status or bells, each resync after a lap, and the close of its ring.
// Each actor's ring is followed by a thread of its own that sleeps on the ring's futex; the main
// thread subscribes to the engine's events to pick up actors spawned later.
#pragma once

#include <string>
#include <vector>

#include "tools/cli_engine.hpp"

namespace backscroll::cli {

struct StatusFollowArgs {
  std::vector<std::string> actors;  // empty: every actor, including those spawned later
  bool json = false;                // one JSON object per line
  std::string rules_path;           // empty: the built-in rules
};

int run_status_follow(const EngineTarget& engine, const StatusFollowArgs& args);

}  // namespace backscroll::cli
