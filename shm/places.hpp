// Places: where one user's engine lives (docs/settings.md, "Places"), computed the same way by the
// engine and by every tool so they meet without configuration.
//   runtime dir  $BACKSCROLL_RUNTIME_DIR, else $XDG_RUNTIME_DIR/backscroll, else
//   /tmp/backscroll-UID state dir    $BACKSCROLL_HOME, else $XDG_STATE_HOME/backscroll, else
//   ~/.local/state/backscroll
//                (settings.yaml, transcripts/<actor>/); Places::at() (tests, benchmarks) puts it
//                beside the runtime dir, in <runtime dir>/../state
//   socket       <runtime dir>/engine.sock
//   lock         <runtime dir>/engine.lock (held by the live engine: one engine per runtime dir)
// Rings have no place: they are memfds the engine announces (shm/segment.hpp).
#pragma once

#include <filesystem>

namespace backscroll {

struct Places {
  std::filesystem::path runtime_dir;
  std::filesystem::path state_dir;

  static Places from_environment();
  static Places at(std::filesystem::path runtime_dir) {
    std::filesystem::path state = runtime_dir.parent_path() / "state";
    return Places{std::move(runtime_dir), std::move(state)};
  }

  std::filesystem::path socket_path() const { return runtime_dir / "engine.sock"; }
  std::filesystem::path lock_path() const { return runtime_dir / "engine.lock"; }
  std::filesystem::path settings_path() const { return state_dir / "settings.yaml"; }
  // One folder per actor (durable transcripts, docs/transcripts.md).
  std::filesystem::path transcripts_dir() const { return state_dir / "transcripts"; }
  // What deleted actors left (<actor>.scrollback, <actor>.snapshot.json), for `restore`.
  std::filesystem::path deleted_dir() const { return state_dir / "deleted"; }
};

}  // namespace backscroll
