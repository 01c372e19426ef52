// Waiting on an actor's ring or on another thread of this process: wait_ring() sleeps until the
// ring has bytes past a cursor, the ring closes, a Doorbell rings, or a timeout passes. One
// futex_waitv (Linux 5.16) covers the ring's shared wake word and the doorbell's private one,
// so a thread that follows a ring (attach's output side) also answers commands at once instead
// of at its next timeout. On an older kernel it waits on the ring in slices of kFallbackSlice
// and looks at the doorbell between them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "shm/cursor.hpp"
#include "shm/ring_reader.hpp"

namespace backscroll::cli {

class Doorbell {
 public:
  // Read it before looking at what the ringer publishes, then hand it to wait_ring(): a ring
  // in between ends the wait at once.
  std::uint32_t seen() const noexcept { return word_.load(std::memory_order_acquire); }
  // Any thread. Publish first, then ring (release: the waiter's seen() pairs with it).
  void ring() noexcept;
  const std::atomic<std::uint32_t>& word() const noexcept { return word_; }

 private:
  std::atomic<std::uint32_t> word_{0};
};

enum class RingWake { ready, closed, doorbell, woken, timeout };

inline constexpr std::chrono::milliseconds kFallbackSlice{20};

// ready: committed > `after`; closed: the segment closed (deleted, engine stopped); doorbell:
// `bell` rang since `bell_seen` was read; woken: the engine woke the ring's readers since
// `ring_seen` (reader.wake_seen()) was read, without a new byte (a session was sealed, the
// actor's state changed). Read both before looking at what the wait is for.
RingWake wait_ring(const shm::RingReader& reader, Cursor after, std::uint32_t ring_seen,
                   const Doorbell& bell, std::uint32_t bell_seen,
                   std::chrono::milliseconds timeout) noexcept;

}  // namespace backscroll::cli
