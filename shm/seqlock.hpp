// Seqlock operations over SeqlockCell: one writer thread (the engine io thread), readers in any
// process through a read-only mapping. The words are copied through relaxed atomic_refs so the
// reader's racing copy is not a data race; the seq re-check discards torn copies.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <thread>

#include "shm/ring_layout.hpp"

namespace backscroll::shm {

template <class T>
void seqlock_store(SeqlockCell<T>& cell, const T& value) noexcept {
  std::atomic_ref<std::uint64_t> seq(cell.seq);
  // relaxed: only this thread writes seq.
  const std::uint64_t s = seq.load(std::memory_order_relaxed);
  seq.store(s + 1, std::memory_order_relaxed);
  // release fence: the odd seq is ordered before every word store below; pairs with the
  // reader's acquire fence, so a reader that saw any new word also sees seq != its first load.
  std::atomic_thread_fence(std::memory_order_release);
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  for (std::size_t i = 0; i < sizeof(T); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes + i, 8);
    std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(cell.words + i))
        .store(w, std::memory_order_relaxed);
  }
  // release: the words become visible before the even seq; pairs with the reader's acquire load.
  seq.store(s + 2, std::memory_order_release);
}

// Empty only when the writer stayed mid-update for 16k attempts (yielding after the first 64,
// tens of milliseconds in all): it died there (a crashed engine's segment). A live writer
// finishes an update within a few stores, or one time slice if it was preempted mid-update.
template <class T>
std::optional<T> seqlock_load(const SeqlockCell<T>& cell) noexcept {
  // atomic_ref needs a non-const object; loads never write, so the read-only mapping is safe.
  auto& mutable_cell = const_cast<SeqlockCell<T>&>(cell);
  std::atomic_ref<std::uint64_t> seq(mutable_cell.seq);
  for (unsigned attempt = 0; attempt < (1u << 14); ++attempt) {
    // acquire: pairs with the writer's final release store of seq.
    const std::uint64_t s1 = seq.load(std::memory_order_acquire);
    if ((s1 & 1) == 0) {
      unsigned char bytes[sizeof(T)];
      for (std::size_t i = 0; i < sizeof(T); i += 8) {
        const std::uint64_t w = std::atomic_ref<std::uint64_t>(
                                    *reinterpret_cast<std::uint64_t*>(mutable_cell.words + i))
                                    .load(std::memory_order_relaxed);
        std::memcpy(bytes + i, &w, 8);
      }
      // acquire fence: the word loads above happen before the re-check; pairs with the
      // writer's release fence after it made seq odd.
      std::atomic_thread_fence(std::memory_order_acquire);
      if (seq.load(std::memory_order_relaxed) == s1) {
        T value;
        std::memcpy(&value, bytes, sizeof(T));
        return value;
      }
    }
    // The writer is mid-update (a few stores); it cannot block, so yield and retry.
    if (attempt > 64) std::this_thread::yield();
  }
  return std::nullopt;
}

}  // namespace backscroll::shm
