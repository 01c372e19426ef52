// RawTerminal: the user's terminal in raw mode for `attach`, restored on every way out: leave()
// and the destructor on normal paths, and a handler for fatal signals (SIGSEGV, SIGABRT, ...)
// that restores the saved mode (tcsetattr is async-signal-safe) and re-raises. Signals that
// end an attachment cleanly (SIGTERM, SIGHUP, ...) are the attach loop's business.
// One RawTerminal at a time per process.
#pragma once

#include <sys/ioctl.h>
#include <termios.h>

#include <optional>

#include "shm/error.hpp"

namespace backscroll::cli {

class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {}
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;
  ~RawTerminal() { leave(); }

  // Saves the current mode (the first time) and switches to raw mode. Again after a stop
  // (SIGCONT) to re-enter.
  Result<void> enter();
  // Restores the saved mode once pending output is written; harmless when not entered.
  // `now`: do not wait for pending output (the terminal stopped reading).
  void leave(bool now = false) noexcept;
  bool active() const noexcept { return active_; }

 private:
  int fd_;
  bool saved_ = false;
  bool active_ = false;
  termios original_{};
};

// The terminal's size, if it reports a usable one.
std::optional<winsize> terminal_size(int fd);

}  // namespace backscroll::cli
