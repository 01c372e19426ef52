// KeyframeStore: one actor's keyframes in memory, and the size changes a replay from one of them
// must apply (docs/recorder.md, "Keyframes"). Io thread. Keyframes arrive in cursor order (the
// mirror takes them as it parses; the io thread adds fresh ones at a session's start and at a
// clear, where the mirror's stream is reset too); the newest are kept up to kMaxKeyframes and
// kMaxBytes, and size changes only as far back as the oldest keyframe kept needs.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <vector>

#include "engine/recorder/keyframe.hpp"

namespace backscroll::recorder {

class KeyframeStore {
 public:
  static constexpr std::size_t kMaxKeyframes = 1024;
  static constexpr std::size_t kMaxBytes = 8u << 20;

  // A keyframe at or after the newest one held (an older one is ignored: the stream was reset
  // past it; false). At one cursor and stretch the later keyframe replaces the earlier. Keeps
  // its stretch and sizes_applied (numbering goes on after them: a recording read back).
  bool add(Keyframe keyframe);
  // A fresh terminal of cols x rows from `at` on (a session's start, a clear): a keyframe of the
  // next stretch, showing every size change so far. Returns it.
  Keyframe add_fresh(Cursor at, std::uint16_t cols, std::uint16_t rows, std::int64_t time_ms);
  // The next size change, numbered here. Returns it.
  SizeChange add_size_change(Cursor cursor, std::uint16_t cols, std::uint16_t rows);
  // A size change read back with its number (after those held; numbering goes on after it).
  void restore_size_change(const SizeChange& change);
  // Keyframes below `cursor` can no longer be replayed from (their bytes are gone): dropped.
  void drop_below(Cursor cursor);

  // The newest keyframe at or before `cursor`, if any. With `before_fresh`, not one of a
  // fresh terminal that starts at `cursor` or later: the screen a session ended with, not the
  // next session's first.
  const Keyframe* at_or_before(Cursor cursor, bool before_fresh = false) const noexcept;
  const Keyframe* oldest() const noexcept {
    return keyframes_.empty() ? nullptr : &keyframes_.front();
  }
  const Keyframe* newest() const noexcept {
    return keyframes_.empty() ? nullptr : &keyframes_.back();
  }
  // The size changes a replay from `keyframe` to `to` applies: those it does not show, up to
  // `to` (inclusive: a snapshot at a cursor shows the changes made there), in order.
  std::vector<SizeChange> size_changes(const Keyframe& keyframe, Cursor to,
                                       bool before_fresh = false) const;
  // The seq the next size change gets (fresh keyframes show every change before it).
  std::uint64_t next_size_seq() const noexcept { return next_size_seq_; }
  // The stretch the stream is in now (the newest fresh terminal's; 0 before any).
  std::uint64_t stretch() const noexcept { return next_stretch_ == 0 ? 0 : next_stretch_ - 1; }

  std::size_t size() const noexcept { return keyframes_.size(); }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  void trim();
  const Keyframe* fresh_at(Cursor cursor) const noexcept;

  std::deque<Keyframe> keyframes_;
  std::deque<SizeChange> sizes_;
  std::size_t bytes_ = 0;
  std::uint64_t next_size_seq_ = 1;
  std::uint64_t next_stretch_ = 0;
};

}  // namespace backscroll::recorder
