// Raising an eventfd: how a thread tells the io thread (or a sleeping worker) "look again".
// Adds 1 to the counter; the reader drains it and re-checks its state, so a signal that finds
// the counter already raised, or a failed write (the counter cannot overflow in practice), loses
// nothing: spurious and coalesced wake-ups are harmless by design.
#pragma once

#include <unistd.h>

#include <cstdint>

namespace backscroll::engine {

inline void signal_eventfd(int fd) noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(fd, &one, sizeof one);
}

}  // namespace backscroll::engine
