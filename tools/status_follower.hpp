// StatusFollower: one actor's status, followed from its ring in shared memory (read-only,
// zero-copy; shm/ring_reader.hpp). Bytes are scanned in place by a StatusDetector and confirmed
// with RingReader::intact() afterwards; what a scan found is released only once its bytes are
// confirmed. When the engine laps the follower (cursor_expired, or bytes overwritten while being
// scanned) the detector, which may have seen torn bytes, is thrown away: a fresh one restores
// the state from the oldest retained cursor, and one resync event reports it with the bytes
// lost. Used by one thread. Coordinates: cursors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "engine/term/status_rules.hpp"
#include "shm/cursor.hpp"
#include "shm/ring_reader.hpp"
#include "tools/status_detector.hpp"

namespace backscroll::status {

class StatusFollower {
 public:
  // Bytes scanned per read: a lap is noticed, and the work thrown away, per span.
  static constexpr std::size_t kSpanBytes = 1 << 20;

  // `reader` and `rules` must outlive the follower.
  StatusFollower(const shm::RingReader& reader, const StatusRules& rules,
                 std::size_t span_bytes = kSpanBytes);

  // Restores the state from what the ring retains (oldest to committed, as history) and returns
  // the initial event. Call once, before poll().
  StatusEvent start();

  // Scans what was committed since, live, and appends the change and resync events, in stream
  // order. `before_check` runs after each span was scanned in place and before intact() confirms
  // it (tests lap the follower there).
  void poll(std::int64_t now_ms, std::vector<StatusEvent>& out,
            const std::function<void()>& before_check = {});

  // Everything before this cursor was scanned and confirmed.
  Cursor cursor() const noexcept { return cursor_; }
  // The state as of cursor().
  const ActorStatus& state() const noexcept { return confirmed_; }

 private:
  // Scans [cursor_, target) with detector_, moving cursor_ over confirmed spans and appending
  // their changes to `out` (when given). The oldest retained cursor when lapped, else nullopt.
  std::optional<Cursor> scan_until(Cursor target, std::int64_t now_ms,
                                   std::vector<StatusEvent>* out,
                                   const std::function<void()>& before_check);
  // A fresh detector restored from `from` to the committed cursor, starting again at the new
  // oldest cursor when lapped meanwhile. Returns where the restore that succeeded started.
  Cursor restore_from(Cursor from, std::uint64_t bells_before);

  const shm::RingReader* reader_;
  const StatusRules* rules_;
  std::size_t span_bytes_;
  Cursor cursor_{0};
  std::optional<StatusDetector> detector_;
  ActorStatus confirmed_;  // detector_'s state at cursor_ (the detector runs ahead of it)
};

}  // namespace backscroll::status
