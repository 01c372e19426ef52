// `backscroll attach`: the user's terminal becomes the actor's terminal (docs/cli.md). This is
// the input side and the policy: it attaches (as the controller at the terminal's size, or as
// a viewer with --read-only), hands the engine's snapshot to the output side (AttachView, its
// own thread) and then reads stdin, the window size, signals and the engine's events about the
// attachment. Which way the output side draws follows one rule: when this client owns the actor
// and the actor's size is the terminal's, the raw bytes go straight to the terminal
// (passthrough); otherwise (displaced by another controller, read-only, or sizes that differ)
// the actor's screen is drawn from a local model at the actor's size (render), never wrapped
// by the terminal. Keys go to the actor as `input` requests only while this client owns it; a
// displaced one offers `t` to take control back, a read-only one says keys are not sent. Ends
// on the detach key, when the watched session is sealed, when the actor is deleted, or on a
// signal; the terminal mode and the modes the program switched on are restored on every path.
// Unless --history, all of it happens on the terminal's alternate screen (the canvas), so the
// user's screen and scrollback are as they were after detaching.
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
  bool read_only = false;  // attach as a viewer: never resize, never send keys
  bool quiet = false;      // no banner
  // Passthrough on the terminal's main screen, the snapshot's history drawn into its
  // scrollback (else everything happens on the alternate screen: the user's screen comes back
  // at detach and repeated attaches add nothing to the scrollback).
  bool history = false;
  bool spawn = false;    // spawn the actor first when it does not exist
  SpawnArgs spawn_args;  // for --spawn; cols and rows default to the terminal's
};

int run_attach(const EngineTarget& engine, const AttachArgs& args);

}  // namespace backscroll::cli
