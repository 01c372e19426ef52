// The engine's memory cap: a spawn that would bring the engine's address space near its limit
// is refused with out_of_memory, so the engine never meets the limit inside an allocation it
// cannot refuse (a mirror's history, a reply) and crashes. The limit is RLIMIT_AS when set, and
// the cgroup v2 memory.max of the engine's cgroup when set (compared with the cgroup's
// memory.current); with neither, nothing is refused.
#pragma once

#include <cstdint>
#include <string>

#include "shm/error.hpp"

namespace backscroll::engine {

struct MemoryBudget {
  // What one more actor costs beyond its ring: its mirror's screen and history, its writer's
  // buffers and the engine's bookkeeping, rounded up.
  static constexpr std::uint64_t kActorOverhead = 16u << 20;
  // Room kept free under the cap for everything else (replies, snapshots, bursts).
  static constexpr std::uint64_t kHeadroom = 64u << 20;

  // Ok when an actor with a ring of `ring_bytes` fits; out_of_memory saying what it needs and
  // what the cap leaves otherwise.
  static Result<void> check_spawn(const std::string& actor, std::uint64_t ring_bytes);
};

}  // namespace backscroll::engine
