// The engine's memory, accounted and bounded (docs/settings.md, "memory_budget").
//
// The budget: every actor reserves what it can come to hold at most (its ring, its mirror's
// screens and history up to their limits, its keyframes, event track and time index, its input
// queue, the snapshot kept for the next request: ActorMemory). A spawn whose reservation would take
// the actors' total past memory_budget is refused with over_budget, naming the numbers; what
// already runs is never shrunk or stopped to make room, and since each actor stays within its
// reservation, the total stays within the budget whatever the actors print.
//
// The cap: a spawn that would bring the engine's address space near its limit is refused with
// out_of_memory, so the engine never meets the limit inside an allocation it cannot refuse (a
// mirror's history, a reply) and crashes. The limit is RLIMIT_AS when set, and the cgroup v2
// memory.max of the engine's cgroup when set (compared with the cgroup's memory.current); with
// neither, nothing is refused by it.
#pragma once

#include <cstdint>
#include <string>

#include "shm/error.hpp"

namespace backscroll::engine {

// One actor's memory by part, in bytes.
struct ActorMemory {
  std::uint64_t ring = 0;       // its output ring (shared memory)
  std::uint64_t history = 0;    // its mirror's history lines
  std::uint64_t screen = 0;     // its mirror's screens: its own grid and libvterm's, both screens
  std::uint64_t keyframes = 0;  // the recorder's keyframes
  std::uint64_t recorder = 0;   // the event track and the time index
  std::uint64_t input = 0;      // input waiting for the PTY
  std::uint64_t snapshot = 0;   // the last snapshot, kept to answer the next request at once

  std::uint64_t total() const noexcept {
    return ring + history + screen + keyframes + recorder + input + snapshot;
  }
};

// What bounds an actor's memory.
struct ActorLimits {
  std::uint64_t ring_capacity = 0;
  std::uint16_t cols = 80;
  std::uint16_t rows = 24;
  bool mirror = true;  // false: no screens, history or keyframes
  bool keyframes = true;
  std::uint64_t history_bytes = 0;  // the mirror's history bound (ScrollbackLimits::max_bytes)
  std::uint64_t track_events = 0;   // the event track's bound, in events (both groups)
  std::uint64_t input_capacity = 0;
  std::uint64_t snapshot_bytes = 0;  // the largest snapshot kept (SnapshotLane::kMaxHeldBytes)
};

struct MemoryBudget {
  // The cap: what one more actor costs beyond its ring, rounded up, and the room kept free under
  // the cap for everything else (replies, snapshots, bursts).
  static constexpr std::uint64_t kActorOverhead = 16u << 20;
  static constexpr std::uint64_t kHeadroom = 64u << 20;

  // The most an actor within `limits` holds: what the budget counts for it. The screens are
  // counted at the actor's size now (a resize changes them).
  static ActorMemory reserved(const ActorLimits& limits);
  // The event track and time index with this many entries.
  static std::uint64_t recorder_bytes(std::uint64_t events, std::uint64_t time_samples);

  // Ok when a new actor reserving `asked` fits beside `reserved_now` (what the other actors
  // reserve) within `budget`; over_budget with the numbers otherwise.
  static Result<void> check_budget(const std::string& actor, const ActorMemory& asked,
                                   std::uint64_t reserved_now, std::uint64_t budget);

  // Ok when an actor with a ring of `ring_bytes` fits under the cap; out_of_memory saying what
  // it needs and what the cap leaves otherwise.
  static Result<void> check_cap(const std::string& actor, std::uint64_t ring_bytes);
};

}  // namespace backscroll::engine
