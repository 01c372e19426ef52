#include "tools/status_follower.hpp"

#include <algorithm>
#include <string_view>

namespace backscroll::status {
namespace {

std::string_view text(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

StatusFollower::StatusFollower(const shm::RingReader& reader, const StatusRules& rules,
                               std::size_t span_bytes)
    : reader_(&reader), rules_(&rules), span_bytes_(std::max<std::size_t>(span_bytes, 1)) {}

StatusEvent StatusFollower::start() {
  restore_from(reader_->oldest(), 0);
  confirmed_ = detector_->finish_restore();
  return StatusEvent{StatusEventKind::initial, confirmed_, std::nullopt, 0};
}

void StatusFollower::poll(std::int64_t now_ms, std::vector<StatusEvent>& out,
                          const std::function<void()>& before_check) {
  // Committed is read once: a flooding actor cannot keep one poll going forever.
  const Cursor target = reader_->committed();
  while (cursor_ < target) {
    const auto lapped = scan_until(target, now_ms, &out, before_check);
    if (!lapped) break;
    // The bytes from cursor_ on were overwritten before they were confirmed: what the detector
    // made of them is discarded with it. Restore from what the ring still holds.
    const ActorStatus before = confirmed_;
    const Cursor from = restore_from(max(*lapped, cursor_), before.bells);
    confirmed_ = detector_->finish_restore();
    confirmed_.last_output_ms = now_ms;  // the lap itself is output seen now
    out.push_back(
        StatusEvent{StatusEventKind::resync, confirmed_, before.status, from - before.cursor});
  }
}

std::optional<Cursor> StatusFollower::scan_until(Cursor target, std::int64_t now_ms,
                                                 std::vector<StatusEvent>* out,
                                                 const std::function<void()>& before_check) {
  while (cursor_ < target) {
    const auto want =
        static_cast<std::size_t>(std::min<std::uint64_t>(target - cursor_, span_bytes_));
    auto view = reader_->read(cursor_, want);
    if (!view) {
      // cursor_ <= target <= committed, so the only refusal is cursor_expired (a lap, or a
      // clear), which carries the oldest retained cursor.
      return Cursor{view.error().cursor.value_or(value(reader_->oldest()))};
    }
    detector_->scan(text(view->first), now_ms);
    detector_->scan(text(view->second), now_ms);
    if (before_check) before_check();
    if (!reader_->intact(view->from)) return reader_->oldest();
    cursor_ = view->to;
    if (detector_->restoring()) continue;
    confirmed_ = detector_->state();
    if (out != nullptr) {
      for (StatusEvent& e : detector_->take_changes()) out->push_back(std::move(e));
    }
  }
  return std::nullopt;
}

Cursor StatusFollower::restore_from(Cursor from, std::uint64_t bells_before) {
  for (;;) {
    detector_.emplace(*rules_, from, bells_before);
    cursor_ = from;
    const auto lapped = scan_until(reader_->committed(), 0, nullptr, {});
    if (!lapped) return from;
    from = max(*lapped, from);
  }
}

}  // namespace backscroll::status
