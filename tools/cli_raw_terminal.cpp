#include "tools/cli_raw_terminal.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace backscroll::cli {
namespace {

// What the fatal-signal handler restores. Written only while no handler can run concurrently
// on this thread's data (set before the handlers are armed, cleared in leave()).
volatile sig_atomic_t g_restore_armed = 0;
int g_restore_fd = -1;
termios g_restore_mode{};

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};

extern "C" void restore_and_reraise(int sig) {
  if (g_restore_armed) ::tcsetattr(g_restore_fd, TCSANOW, &g_restore_mode);
  // SA_RESETHAND put the default action back: re-raise to die the usual way (core and all).
  ::raise(sig);
}

void arm_fatal_handlers() {
  static bool armed = false;
  if (armed) return;
  armed = true;
  struct sigaction sa {};
  sa.sa_handler = restore_and_reraise;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  ::sigemptyset(&sa.sa_mask);
  for (const int sig : kFatalSignals) ::sigaction(sig, &sa, nullptr);
}

}  // namespace

Result<void> RawTerminal::enter() {
  if (!saved_) {
    if (::tcgetattr(fd_, &original_) != 0) return fail_errno("tcgetattr", errno);
    saved_ = true;
    g_restore_fd = fd_;
    g_restore_mode = original_;
    arm_fatal_handlers();
  }
  termios raw = original_;
  ::cfmakeraw(&raw);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  g_restore_armed = 1;
  while (::tcsetattr(fd_, TCSADRAIN, &raw) != 0) {
    if (errno != EINTR) {
      g_restore_armed = 0;
      return fail_errno("tcsetattr", errno);
    }
  }
  active_ = true;
  return {};
}

void RawTerminal::leave(bool now) noexcept {
  if (!active_) return;
  while (::tcsetattr(fd_, now ? TCSANOW : TCSADRAIN, &original_) != 0 && errno == EINTR) {
  }
  g_restore_armed = 0;
  active_ = false;
}

std::optional<winsize> terminal_size(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) return std::nullopt;
  return ws;
}

}  // namespace backscroll::cli
