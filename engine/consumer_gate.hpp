// ConsumerGate: back-pressure from an actor's internal consumers (mirror, transcript writer)
// onto its PTY reads (docs/design.md, "Internal consumers").
// An internal consumer runs on its own thread, reads the ring in place and publishes how far it
// got. The io thread stops submitting reads for the actor while the slowest consumer is more
// than `high_water` bytes behind `committed`, and resumes once it is at most `low_water` behind;
// the kernel meanwhile blocks the child on a full PTY. Since high_water + one read < capacity,
// an attached consumer is never lapped. Readers in other processes never hold anything back.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "shm/cursor.hpp"

namespace backscroll::engine {

class ConsumerGate;

// The consumer thread's handle. Thread-safe.
class InternalConsumer {
 public:
  Cursor position() const noexcept { return Cursor{position_.load(std::memory_order_seq_cst)}; }
  // The consumer has used every byte below `cursor`. Wakes the io thread when the gate is paused
  // and this brings the consumer under the low-water mark.
  void advance_to(Cursor cursor) noexcept;
  // Stops holding the actor back (a transcript that failed); the gate forgets it.
  void detach() noexcept;
  bool detached() const noexcept { return detached_.load(std::memory_order_seq_cst); }

 private:
  friend class ConsumerGate;
  struct Shared;
  InternalConsumer(std::shared_ptr<Shared> shared, Cursor start)
      : shared_(std::move(shared)), position_(value(start)) {}

  std::shared_ptr<Shared> shared_;
  // seq_cst with Shared::paused: the consumer stores its position then loads `paused`; the io
  // thread stores `paused` then loads positions. Seq_cst guarantees one of them sees the other,
  // so a pause can never miss the advance that should end it (Dekker's pattern).
  std::atomic<std::uint64_t> position_;
  std::atomic<bool> detached_{false};
};

// The io thread's side, one per actor.
class ConsumerGate {
 public:
  // `notify_fd`: an eventfd the io loop watches; written when a paused gate may resume.
  ConsumerGate(std::uint64_t high_water, std::uint64_t low_water, int notify_fd);

  std::shared_ptr<InternalConsumer> attach(Cursor start);
  // Io thread, before submitting a read: true means do not read now. Pauses when over the high
  // water mark; a paused gate stays paused until the slowest consumer is under the low mark.
  bool hold(Cursor committed) noexcept;
  bool paused() const noexcept;
  // Bytes the slowest attached consumer is behind `committed` (0 without consumers).
  std::uint64_t behind(Cursor committed) noexcept { return lag(committed); }
  std::size_t consumers() const noexcept { return consumers_.size(); }
  std::uint64_t high_water() const noexcept { return high_water_; }
  std::uint64_t low_water() const noexcept { return low_water_; }

 private:
  // Bytes the slowest attached consumer is behind `committed` (0 without consumers).
  std::uint64_t lag(Cursor committed) noexcept;

  std::uint64_t high_water_;
  std::uint64_t low_water_;
  std::shared_ptr<InternalConsumer::Shared> shared_;
  std::vector<std::shared_ptr<InternalConsumer>> consumers_;
};

}  // namespace backscroll::engine
