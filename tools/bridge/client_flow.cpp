#include "tools/bridge/client_flow.hpp"

namespace backscroll::bridge {

ClientFlow::ClientFlow(Cursor at, bool visible, Clock::time_point now) noexcept
    : sent_(at), acked_(at), owed_since_(now), visible_(visible), window_start_(now) {}

bool ClientFlow::admit(Cursor from, std::uint64_t bytes, Clock::time_point now) noexcept {
  if (behind_from_) return false;
  bool fits = unacked() + bytes <= kHighWater;
  if (fits && !visible_) {
    if (now - window_start_ >= kHiddenWindow) {
      // Fixed windows counted from when it went hidden: skip to the one `now` is in.
      const auto windows = (now - window_start_) / kHiddenWindow;
      window_start_ += windows * kHiddenWindow;
      window_bytes_ = 0;
    }
    fits = window_bytes_ + bytes <= kHiddenBudget;
    if (fits) window_bytes_ += bytes;
  }
  if (!fits) fall_behind(from, now);
  return fits;
}

void ClientFlow::sent(Cursor to, Clock::time_point now) noexcept {
  const bool owed_before = unacked() >= kAckEvery;
  sent_ = max(sent_, to);
  if (!owed_before && unacked() >= kAckEvery) owed_since_ = now;
}

void ClientFlow::ack(Cursor cursor, Clock::time_point now) noexcept {
  const Cursor clamped = min(cursor, sent_);
  if (clamped > acked_) {
    acked_ = clamped;
    owed_since_ = now;
  }
}

void ClientFlow::set_visible(bool visible, Clock::time_point now) noexcept {
  if (visible_ && !visible) {  // a new hidden period: its budget starts now
    window_start_ = now;
    window_bytes_ = 0;
  }
  visible_ = visible;
}

void ClientFlow::caught_up(Cursor at, Clock::time_point now) noexcept {
  sent_ = acked_ = at;
  owed_since_ = now;
  behind_from_.reset();
  window_start_ = now;
  window_bytes_ = 0;
}

void ClientFlow::fall_behind(Cursor from, Clock::time_point now) noexcept {
  if (behind_from_) return;
  behind_from_ = from;
  behind_since_ = now;
}

ClientFlow::CatchUp ClientFlow::catch_up(Clock::time_point now, bool actor_quiet) const noexcept {
  if (!behind_from_ || !visible_) return CatchUp::wait;
  const bool stalled = unacked() >= kAckEvery && now - owed_since_ >= kAckStall;
  if (unacked() >= kAckEvery && !stalled) return CatchUp::wait;  // still parsing what it got
  if (!actor_quiet && now - behind_since_ < kMaxBehind) return CatchUp::wait;
  // Stalled acks: its cursor cannot be trusted, so never a resume from it.
  return stalled ? CatchUp::snapshot : CatchUp::resume;
}

}  // namespace backscroll::bridge
