// Wall-clock time in milliseconds since the Unix epoch: the timestamps the engine records
// (actor records, deletion archives, folders moved aside). Intervals use steady_clock instead.
#pragma once

#include <chrono>
#include <cstdint>

namespace backscroll::engine {

inline std::int64_t wall_clock_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace backscroll::engine
