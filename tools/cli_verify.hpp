// `backscroll verify NAME`: checks snapshot_v1's contract on the actor's own output
// (docs/snapshot.md). It copies the newest retained raw bytes of the current session from the ring
// (read-only shared memory), feeds them to a fresh mirror, takes snapshots at random cursors,
// and for each one checks that a second fresh mirror fed the snapshot and then the raw bytes
// from its cursor ends showing what the first one shows after every byte: the check the tests
// run, on the user's sessions. Prints one verdict line (or the first difference); exit 0 when
// the contract holds, 1 when it does not (or on an error).
#pragma once

#include <cstdint>
#include <string>

#include "tools/cli_engine.hpp"

namespace backscroll::cli {

struct VerifyArgs {
  std::string actor;
  std::uint32_t cuts = 16;          // snapshots checked: at random cursors and the end
  std::uint64_t window = 1u << 20;  // newest bytes checked (the session's, at most)
  std::uint64_t seed = 0;           // 0: a random seed (printed)
  bool json = false;                // the verdict as one JSON object (docs/cli.md)
};

int run_verify(const Places& places, const VerifyArgs& args);

}  // namespace backscroll::cli
