// ActorRecord: what a durable transcript keeps about its actor besides the bytes (docs/design.md,
// "Durable transcripts"), so a restarted engine can bring the actor back: its epoch, the program it
// runs, its sessions and the cursor its stream had reached. Stored as actor.json in the actor's
// transcript folder (written by the writer thread, in stream order, synced with each seal) and
// the base of the metadata a deletion leaves behind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/pty_process.hpp"
#include "shm/control_frame.hpp"
#include "shm/cursor.hpp"
#include "shm/error.hpp"
#include "shm/ring_layout.hpp"

namespace backscroll::engine {

class Actor;

struct ActorRecord {
  static constexpr std::string_view kFormat = "backscroll-actor/1";

  std::string name;
  std::uint64_t epoch = 0;
  SpawnSpec spec;
  // The stream's end when the record was written (a session's start or seal, a clear's floor):
  // a restarted engine continues its cursors at or after it, so they never go backwards.
  Cursor cursor{0};
  std::vector<shm::SessionRecord> sessions;  // oldest first
  std::int64_t created_ms = 0;               // wall clock, ms since the Unix epoch
  std::int64_t updated_ms = 0;

  // What `actor` is now (its stream's end as the cursor).
  static ActorRecord of(const Actor& actor);

  control::Json to_json() const;
  // Errors: bad_request naming the field that does not check out.
  static Result<ActorRecord> from_json(const control::Json& json);
};

}  // namespace backscroll::engine
