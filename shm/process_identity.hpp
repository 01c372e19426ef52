// Identifies a process across pid reuse: its pid plus its start time in clock ticks since boot
// (field 22 of /proc/PID/stat). Used to tell a live engine's segments and socket from those a
// crashed engine left behind.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace backscroll {

struct ProcessIdentity {
  pid_t pid = 0;
  std::uint64_t start_ticks = 0;

  static ProcessIdentity self();
  // Empty when no process with that pid exists, it is a zombie, or /proc cannot be read.
  static std::optional<std::uint64_t> start_ticks_of(pid_t pid);
  // True when this exact process (same pid and start time) is still alive.
  bool alive() const;
};

}  // namespace backscroll
