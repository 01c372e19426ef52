// `backscroll attach`: the user's terminal becomes the actor's terminal. It attaches as the
// controller at the terminal's size, shows the actor's snapshot (its current screen and recent
// history, however much output came before) and then follows the ring from the snapshot's
// cursor (an output thread: RingReader::wait + copy, straight to stdout); with a raw_replay
// answer it replays the ring from the oldest cursor instead. Stdin goes to the actor as
// `input` requests, the window size as `resize` through the attachment. Ends on
// the detach key, when the watched session is sealed, when the actor is deleted, or on a signal;
// the terminal mode and the modes the program switched on are restored on every path.
#pragma once

#include <optional>
#include <string>

#include "tools/cli_args.hpp"
#include "tools/cli_engine.hpp"
#include "tools/cli_ops.hpp"

namespace backscroll::cli {

struct AttachArgs {
  std::string actor;
  std::optional<unsigned char> detach_key = kDefaultDetachKey;  // nullopt: no detach key
  bool spawn = false;    // spawn the actor first when it does not exist
  SpawnArgs spawn_args;  // for --spawn; cols and rows default to the terminal's
};

int run_attach(const EngineTarget& engine, const AttachArgs& args);

}  // namespace backscroll::cli
