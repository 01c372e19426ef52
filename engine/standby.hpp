// `backscrolld --standby` (the systemd unit runs it so): when another engine already owns the
// runtime directory (one the CLI started on first use, before the unit was enabled), this
// process does not fail with exit status 3. It stands by beside it: nothing of the running
// engine changes, its actors keep running; when that engine exits, this process claims the
// directory and becomes the engine (the unit's); when it is asked to stop (SIGTERM, SIGINT:
// `systemctl --user stop`), it stops the running engine (the `shutdown` op, which ends every
// actor as a stop of the unit would) and waits for it. docs/systemd.md.
#pragma once

#include "shm/error.hpp"
#include "shm/places.hpp"

namespace backscroll::engine {

enum class StandbyEnd {
  other_exited,  // claim the runtime directory now
  stopped,       // this process was told to stop (the other engine was stopped too): exit 0
};

// Waits beside the engine that answers on `places`' socket (its pid from the socket's peer
// credentials, followed through a pidfd). other_exited at once when none answers any more.
Result<StandbyEnd> stand_by(const Places& places);

}  // namespace backscroll::engine
