#include "engine/recorder/time_index.hpp"

#include <algorithm>

namespace backscroll::recorder {

std::optional<TimeSample> TimeIndex::note(std::int64_t time_ms, Cursor committed) {
  std::optional<TimeSample> finished;
  if (!samples_.empty()) {
    TimeSample& last = samples_.back();
    if (time_ms < last.time_ms || committed < last.cursor) return std::nullopt;  // a step back
    if (time_ms / 1000 == last.time_ms / 1000) {
      last = {time_ms, committed};
      return std::nullopt;
    }
    finished = last;
  }
  if (samples_.size() >= kMaxSamples) {
    // Halve: keep every other sample, and the newest.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < samples_.size(); i += 2) samples_[kept++] = samples_[i];
    if (samples_.size() % 2 == 0) samples_[kept++] = samples_.back();
    samples_.resize(kept);
  }
  samples_.push_back({time_ms, committed});
  return finished;
}

std::optional<Cursor> TimeIndex::cursor_at(std::int64_t time_ms) const noexcept {
  const auto it =
      std::upper_bound(samples_.begin(), samples_.end(), time_ms,
                       [](std::int64_t t, const TimeSample& s) { return t < s.time_ms; });
  if (it == samples_.begin()) return std::nullopt;
  return std::prev(it)->cursor;
}

std::optional<std::int64_t> TimeIndex::time_past(Cursor cursor) const noexcept {
  const auto it = std::upper_bound(samples_.begin(), samples_.end(), cursor,
                                   [](Cursor c, const TimeSample& s) { return c < s.cursor; });
  if (it == samples_.end()) return std::nullopt;
  return it->time_ms;
}

}  // namespace backscroll::recorder
