#include "tools/cli_ring_wait.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace backscroll::cli {
namespace {

using Clock = std::chrono::steady_clock;

timespec monotonic_deadline(Clock::time_point deadline) {
  // steady_clock is CLOCK_MONOTONIC on Linux (libstdc++).
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch());
  timespec t{};
  t.tv_sec = static_cast<time_t>(ns.count() / 1'000'000'000);
  t.tv_nsec = static_cast<long>(ns.count() % 1'000'000'000);
  return t;
}

}  // namespace

void Doorbell::ring() noexcept {
  word_.fetch_add(1, std::memory_order_release);
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, INT_MAX,
            nullptr, nullptr, 0);
}

RingWake wait_ring(const shm::RingReader& reader, Cursor after, std::uint32_t ring_seen,
                   const Doorbell& bell, std::uint32_t bell_seen,
                   std::chrono::milliseconds timeout) noexcept {
  static std::atomic<bool> no_waitv{false};  // the kernel has no futex_waitv
  const auto deadline = Clock::now() + timeout;
  auto& ring_word = const_cast<std::uint32_t&>(reader.header().wake);
  for (;;) {
    // As RingReader::wait: the wake word first, then committed (the engine stores them in the
    // opposite order), so a commit this check misses has changed the word the kernel compares.
    const std::uint32_t ring_now = reader.wake_seen();
    if (reader.committed() > after) return RingWake::ready;
    if (const auto m = reader.meta(); !m || m->closed) return RingWake::closed;
    if (bell.seen() != bell_seen) return RingWake::doorbell;
    if (ring_now != ring_seen) return RingWake::woken;
    const auto now = Clock::now();
    if (now >= deadline) return RingWake::timeout;

    if (no_waitv.load(std::memory_order_relaxed)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      (void)reader.wait(after, std::clamp(left, std::chrono::milliseconds(1), kFallbackSlice),
                        ring_seen);
      continue;
    }
    futex_waitv waiters[2]{};
    waiters[0].val = ring_seen;
    waiters[0].uaddr = reinterpret_cast<std::uintptr_t>(&ring_word);
    waiters[0].flags = FUTEX_32;  // shared: the engine wakes it from another process
    waiters[1].val = bell_seen;
    waiters[1].uaddr = reinterpret_cast<std::uintptr_t>(&bell.word());
    waiters[1].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
    const timespec until = monotonic_deadline(deadline);
    const long rc = ::syscall(SYS_futex_waitv, waiters, 2, 0, &until, CLOCK_MONOTONIC);
    if (rc < 0 && errno == ENOSYS) no_waitv.store(true, std::memory_order_relaxed);
    // Woken, a word already changed (EAGAIN), a signal, the deadline: look again.
  }
}

}  // namespace backscroll::cli
