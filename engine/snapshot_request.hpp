// What a `snapshot` request asks for (docs/protocol.md, "Snapshots and attachments") and how a
// snapshot_v1 answer reads: shared by the io thread and the control thread, which answers the
// requests the snapshot lane holds an answer for (engine/snapshot_lane.hpp).
#pragma once

#include <cstdint>

#include "engine/term/mirror.hpp"
#include "shm/control_frame.hpp"
#include "shm/error.hpp"

namespace backscroll::engine {

inline constexpr std::uint64_t kMaxSnapshotScrollback = 10'000;  // history lines per snapshot

struct SnapshotAsk {
  control::Json id;  // the request's, echoed in the answer
  term::SnapshotOptions options;
  const char* raw_reason = nullptr;  // "client": no snapshot_v1 in "formats"
  bool timing = false;               // the answer says where its time went (`timing_us`)
};
// The request's options; `scrollback` when it names none.
Result<SnapshotAsk> parse_snapshot_ask(const control::Json& request, std::uint64_t scrollback);
// Whether it asks for a past screen (`at`, `at_event` or `at_time_ms`).
bool asks_for_past(const control::Json& request);

// A snapshot_v1 answer's fields for the screen `taken` of an actor whose ring has `epoch`.
control::Json snapshot_v1_fields(std::uint64_t epoch, const term::MirrorSnapshot& taken);

}  // namespace backscroll::engine
