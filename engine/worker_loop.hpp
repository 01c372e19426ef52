// run_worker: the loop of an engine worker thread that follows actors' rings (the mirror thread,
// the writer thread), with the stream-order rule both depend on in one place.
//
// Each slot has `ring` (a RingReader) and `limit` (a Cursor). For each slot in turn: load its
// ring's committed cursor into `limit`, then drain the commands, then give the slot its turn
// (which feeds at most up to `limit` and the slot's first pending event). The io thread enqueues
// an event (at cursor c = committed then) before it commits later bytes, each commit a release
// store: if the load saw a commit after the enqueue, the drain finds the event, so a turn never
// feeds past an event it has not seen (docs/memory-ordering.md). Draining before every slot also
// answers requests for caught-up actors within one turn. A round without work sleeps.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/wake_signal.hpp"

namespace backscroll::engine {

// How a round without work sleeps: at most `ms` (-1: until woken), woken by new bytes
// (WakeSignal::wake_for_data) only with `wake_on_data`; commands always wake it.
struct WorkerSleep {
  int ms = -1;
  bool wake_on_data = true;
};

// `drain()`: false once the stop command was drained (run_worker returns). `turn(slot)`: whether
// it did anything. `has_work()`: for WakeSignal::sleep. `sleep()`: the WorkerSleep of a round
// without work.
template <class Slots, class Drain, class Turn, class HasWork, class Sleep>
void run_worker(WakeSignal& wake, Slots& slots, Drain drain, Turn turn, HasWork has_work,
                Sleep sleep) {
  for (;;) {
    bool worked = false;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      slots[i]->limit = slots[i]->ring->committed();
      if (!drain()) return;
      if (i >= slots.size()) break;  // a remove shifted the slots; a stale limit stays safe
      worked |= turn(*slots[i]);
    }
    if (!drain()) return;
    if (!worked) {
      const WorkerSleep how = sleep();
      wake.sleep(has_work, how.ms, how.wake_on_data);
    }
  }
}

// The tick of a thread that, while its actors stream, looks for new bytes on a timer
// (WorkerSleep{ms, false}) instead of at each commit: `max_ms`, shorter when some slot, at the
// pace its bytes came over the last `elapsed_ms`, would gather more than `room(slot)` bytes
// meanwhile (a quarter of its ring, so the consumer gate seldom pauses a PTY for the sleep; or
// less), at least 1 ms. `came(slot)`: the bytes that reached the slot's ring since the previous
// call (the caller keeps that mark).
template <class Slots, class Came, class Room>
int paced_tick_ms(Slots& slots, int max_ms, double elapsed_ms, Came came, Room room) {
  double tick = max_ms;
  for (auto& slot : slots) {
    const std::uint64_t bytes = came(*slot);
    if (bytes == 0 || elapsed_ms <= 0) continue;
    const double fill_ms =
        static_cast<double>(room(*slot)) / (static_cast<double>(bytes) / elapsed_ms);
    tick = std::min(tick, fill_ms);
  }
  return std::max(1, static_cast<int>(tick));
}

}  // namespace backscroll::engine
