#include "engine/recorder/keyframe_store.hpp"

#include <algorithm>

namespace backscroll::recorder {

bool KeyframeStore::add(Keyframe keyframe) {
  if (!keyframes_.empty()) {
    const Keyframe& last = keyframes_.back();
    if (keyframe.cursor < last.cursor || keyframe.stretch < last.stretch) return false;
    if (keyframe.cursor == last.cursor && keyframe.stretch == last.stretch) {
      bytes_ -= keyframes_.back().snapshot.size();
      keyframes_.pop_back();
    }
  }
  next_stretch_ = std::max(next_stretch_, keyframe.stretch + 1);
  next_size_seq_ = std::max(next_size_seq_, keyframe.sizes_applied + 1);
  bytes_ += keyframe.snapshot.size();
  keyframes_.push_back(std::move(keyframe));
  trim();
  return true;
}

Keyframe KeyframeStore::add_fresh(Cursor at, std::uint16_t cols, std::uint16_t rows,
                                  std::int64_t time_ms) {
  const Keyframe fresh{at, next_stretch_++, cols, rows, next_size_seq_ - 1, time_ms, {}, 0};
  add(fresh);
  return fresh;
}

SizeChange KeyframeStore::add_size_change(Cursor cursor, std::uint16_t cols, std::uint16_t rows) {
  const SizeChange change{next_size_seq_, cursor, cols, rows};
  restore_size_change(change);
  return change;
}

void KeyframeStore::restore_size_change(const SizeChange& change) {
  if (!sizes_.empty() && change.seq <= sizes_.back().seq) return;
  sizes_.push_back(change);
  next_size_seq_ = std::max(next_size_seq_, change.seq + 1);
  trim();
}

void KeyframeStore::drop_below(Cursor cursor) {
  while (!keyframes_.empty() && keyframes_.front().cursor < cursor) {
    bytes_ -= keyframes_.front().snapshot.size();
    keyframes_.pop_front();
  }
  trim();
}

void KeyframeStore::trim() {
  // Always keep the newest: the screen now needs it.
  while (keyframes_.size() > 1 && (keyframes_.size() > kMaxKeyframes || bytes_ > kMaxBytes)) {
    bytes_ -= keyframes_.front().snapshot.size();
    keyframes_.pop_front();
  }
  // A replay from the oldest keyframe applies only the changes it does not show.
  if (keyframes_.empty()) return;
  const std::uint64_t shown = keyframes_.front().sizes_applied;
  while (!sizes_.empty() && sizes_.front().seq <= shown) sizes_.pop_front();
}

const Keyframe* KeyframeStore::fresh_at(Cursor cursor) const noexcept {
  for (auto it = keyframes_.rbegin(); it != keyframes_.rend() && it->cursor >= cursor; ++it) {
    if (it->fresh() && it->cursor == cursor) return &*it;
  }
  return nullptr;
}

const Keyframe* KeyframeStore::at_or_before(Cursor cursor, bool before_fresh) const noexcept {
  const Keyframe* fresh = before_fresh ? fresh_at(cursor) : nullptr;
  for (auto it = keyframes_.rbegin(); it != keyframes_.rend(); ++it) {
    if (it->cursor > cursor) continue;
    if (fresh && it->stretch >= fresh->stretch) continue;
    return &*it;
  }
  return nullptr;
}

std::vector<SizeChange> KeyframeStore::size_changes(const Keyframe& keyframe, Cursor to,
                                                    bool before_fresh) const {
  // Before a fresh terminal at `to`: only the changes made before it started.
  const Keyframe* fresh = before_fresh ? fresh_at(to) : nullptr;
  std::vector<SizeChange> out;
  for (const SizeChange& s : sizes_) {
    if (s.seq > keyframe.sizes_applied && s.cursor <= to &&
        (!fresh || s.seq <= fresh->sizes_applied)) {
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace backscroll::recorder
