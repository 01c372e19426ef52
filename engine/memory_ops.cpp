// The engine's memory accounting (engine/memory_budget.hpp): each actor's reservation, what it
// holds now, and status's `memory` objects. Io thread.
#include "engine/engine.hpp"
#include "engine/settings_reload.hpp"

namespace backscroll::engine {
namespace {

using control::Json;

Json parts(const ActorMemory& m) {
  return {{"total", m.total()}, {"ring", m.ring},           {"history", m.history},
          {"screen", m.screen}, {"keyframes", m.keyframes}, {"recorder", m.recorder},
          {"input", m.input},   {"snapshot", m.snapshot}};
}

}  // namespace

ActorMemory Engine::reserved_for(WindowSize size) const {
  return MemoryBudget::reserved(
      {.ring_capacity = settings_.actor.ring_bytes,
       .cols = size.cols,
       .rows = size.rows,
       .mirror = mirror_ != nullptr,
       .keyframes = settings_.keyframes,
       .history_bytes = settings_.scrollback.max_bytes,
       .track_events = settings_.track.events + settings_.track.minor_events,
       .input_capacity = settings_.actor.input_capacity,
       .snapshot_bytes = SnapshotLane::kMaxHeldBytes});
}

ActorMemory Engine::reserved_memory(const Actor& actor) const {
  ActorMemory m = reserved_for(actor.size());
  // A released ring keeps its reservation: a restart fills it again.
  m.ring = actor.ring().capacity();
  return m;
}

ActorMemory Engine::used_memory(const Actor& actor) const {
  ActorMemory m;
  m.ring = actor.ring().committed() - actor.ring().floor();  // the bytes retained
  m.input = actor.input_queued();
  m.screen = reserved_for(actor.size()).screen;  // allocated whole at the actor's size
  if (const auto watch = mirror_watch_.find(actor.name()); watch != mirror_watch_.end())
    m.history = watch->second.usage->history_bytes.load(std::memory_order_relaxed);
  m.snapshot = lane_.held_bytes(actor.name());
  if (const auto r = recordings_.find(actor.name()); r != recordings_.end()) {
    m.keyframes = r->second.keyframes.bytes();
    m.recorder = MemoryBudget::recorder_bytes(r->second.events.size(), r->second.times.size());
  }
  return m;
}

std::uint64_t Engine::reserved_by_actors() const {
  std::uint64_t total = 0;
  for (const auto& [name, actor] : actors_) total += reserved_memory(*actor).total();
  return total;
}

Json Engine::memory_status(const Actor& actor) const {
  return {{"reserved", parts(reserved_memory(actor))}, {"used", parts(used_memory(actor))}};
}

Json Engine::memory_status() const {
  std::uint64_t used = 0;
  for (const auto& [name, actor] : actors_) used += used_memory(*actor).total();
  return {{"budget", memory_budget_of(settings_.memory_budget)},
          {"reserved", reserved_by_actors()},
          {"used", used}};
}

}  // namespace backscroll::engine
