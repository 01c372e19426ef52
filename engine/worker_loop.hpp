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

#include <cstddef>

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

}  // namespace backscroll::engine
