// TimeIndex: which cursor an actor's stream had reached at a wall-clock time, to the second
// (docs/recorder.md, "--at-time"). The io thread notes the committed cursor after each batch of
// reads; one sample per second of activity is kept (the last of that second). Bounded: when
// full, every other sample goes, so old times keep coarser samples rather than none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "shm/cursor.hpp"

namespace backscroll::recorder {

struct TimeSample {
  std::int64_t time_ms = 0;
  Cursor cursor{0};
};

class TimeIndex {
 public:
  static constexpr std::size_t kMaxSamples = 1u << 16;

  // The stream had reached `committed` at `time_ms`. Times and cursors never go back. Returns
  // the sample of the second before when this one starts a new second (that one is final now).
  std::optional<TimeSample> note(std::int64_t time_ms, Cursor committed);
  // The newest sample (it changes until its second is over).
  std::optional<TimeSample> newest() const noexcept {
    if (samples_.empty()) return std::nullopt;
    return samples_.back();
  }
  // The cursor the stream had reached at `time_ms`: the newest sample at or before it; none
  // before the first.
  std::optional<Cursor> cursor_at(std::int64_t time_ms) const noexcept;
  // When the stream went past `cursor` (the bytes after it were committed): the time of the
  // oldest sample beyond it, to the second; none when no sample is (nothing came after it, or
  // too long ago for the samples kept).
  std::optional<std::int64_t> time_past(Cursor cursor) const noexcept;
  std::size_t size() const noexcept { return samples_.size(); }

 private:
  std::vector<TimeSample> samples_;
};

}  // namespace backscroll::recorder
