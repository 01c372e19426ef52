// ClientFlow: one WebSocket client's flow control (docs/bridge.md, "Flow control"), as a pure
// policy over cursors and a clock: the session asks it before each live frame and tells it what
// was sent and acknowledged. Natamux's rules, in the engine's cursor space:
// - a live client may have at most kHighWater bytes unacknowledged; a hidden one gets at most
//   kHiddenBudget bytes per kHiddenWindow;
// - a frame past either limit is not sent, and not queued: the client falls *behind* from that
//   frame's cursor (the bytes stay in the ring);
// - a behind client is caught up (a resume from the ring, or a snapshot) once it has
//   acknowledged what it was sent and is visible, and the actor is quiet or it has been behind
//   kMaxBehind; a client whose acks stopped for kAckStall gets a snapshot rather than a resume.
// Catch-up bytes never count: caught_up() sets sent = acked = the catch-up's end.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "shm/cursor.hpp"

namespace backscroll::bridge {

class ClientFlow {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::uint64_t kHighWater = 512 * 1024;
  // A client acknowledges about every this many bytes, so a rest below it counts as all acked.
  static constexpr std::uint64_t kAckEvery = 64 * 1024;
  static constexpr std::uint64_t kHiddenBudget = 256 * 1024;
  static constexpr std::chrono::milliseconds kHiddenWindow{1000};
  static constexpr std::chrono::milliseconds kMaxBehind{2000};
  static constexpr std::chrono::milliseconds kAckStall{5000};

  ClientFlow(Cursor at, bool visible, Clock::time_point now) noexcept;

  // May the live frame [from, from + bytes) go out now? When not, the client is behind from
  // `from` (see behind()).
  bool admit(Cursor from, std::uint64_t bytes, Clock::time_point now) noexcept;
  // A live frame ending at `to` was sent.
  void sent(Cursor to, Clock::time_point now) noexcept;
  // The client says it parsed everything before `cursor`. Older acks are ignored, later ones
  // clamped to what was sent.
  void ack(Cursor cursor, Clock::time_point now) noexcept;
  void set_visible(bool visible, Clock::time_point now) noexcept;
  // Live from `at` again, nothing unacknowledged (after a catch-up ended at `at`).
  void caught_up(Cursor at, Clock::time_point now) noexcept;
  // Behind from `from` for a reason of the session's own (a lapped read, a catch-up cut short).
  void fall_behind(Cursor from, Clock::time_point now) noexcept;

  std::optional<Cursor> behind() const noexcept { return behind_from_; }
  bool visible() const noexcept { return visible_; }
  std::uint64_t unacked() const noexcept { return sent_ - acked_; }
  Cursor sent_cursor() const noexcept { return sent_; }

  enum class CatchUp { wait, resume, snapshot };
  // What to do for a behind client now. `actor_quiet`: little output lately (ActorFeed::quiet).
  // resume is only offered; the session falls back to a snapshot when the bytes are gone.
  CatchUp catch_up(Clock::time_point now, bool actor_quiet) const noexcept;

 private:
  Cursor sent_;
  Cursor acked_;
  // Since when the client owes an ack: the later of its last ack progress and the moment its
  // unacknowledged bytes reached kAckEvery (a client with nothing to ack is never stalled).
  Clock::time_point owed_since_;
  bool visible_;
  Clock::time_point window_start_;  // hidden budget: fixed windows from when it went hidden
  std::uint64_t window_bytes_ = 0;
  std::optional<Cursor> behind_from_;
  Clock::time_point behind_since_{};
};

}  // namespace backscroll::bridge
