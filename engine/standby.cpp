#include "engine/standby.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "engine/log.hpp"
#include "shm/control_client.hpp"

namespace backscroll::engine {
namespace {

// How long a stopped standby waits for the other engine to end its actors and exit.
constexpr std::chrono::seconds kStopWait{60};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits until `pidfd` is readable (the process exited) or `timeout` passes.
bool wait_exit(int pidfd, std::chrono::milliseconds timeout) {
  pollfd p{pidfd, POLLIN, 0};
  for (;;) {
    const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n < 0 && errno == EINTR) continue;
    return n > 0;
  }
}

}  // namespace

Result<StandbyEnd> stand_by(const Places& places) {
  auto client = control::ControlClient::connect(places);
  if (!client) {
    if (client.error().code == Errc::engine_unavailable) return StandbyEnd::other_exited;
    return tl::unexpected(client.error());
  }
  const pid_t other = client->peer_pid();
  const Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, other, 0)));
  if (pidfd.get() < 0) {
    if (errno == ESRCH) return StandbyEnd::other_exited;
    return fail_errno("pidfd_open", errno);
  }
  // SIGTERM and SIGINT through a signalfd, as the engine itself takes them (the mask stays:
  // an engine this process becomes blocks the same signals).
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  const Fd signals(::signalfd(-1, &mask, SFD_CLOEXEC));
  if (signals.get() < 0) return fail_errno("signalfd", errno);

  log(LogLevel::info,
      "another engine (pid {}) owns {}: standing by; this process becomes the engine when it "
      "exits, and stopping this process stops it",
      other, places.runtime_dir.string());
  pollfd fds[2] = {{pidfd.get(), POLLIN, 0}, {signals.get(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return fail_errno("poll", errno);
    }
    if (fds[0].revents != 0) {
      log(LogLevel::info, "the engine (pid {}) exited: taking over", other);
      return StandbyEnd::other_exited;
    }
    if (fds[1].revents != 0) break;
  }
  log(LogLevel::info, "stopping: asking the engine (pid {}) to shut down", other);
  if (auto r = client->call("shutdown"); !r) {
    log(LogLevel::warn, "shutdown of the engine (pid {}) failed: {}", other, r.error().describe());
  }
  if (!wait_exit(pidfd.get(), kStopWait)) {
    log(LogLevel::warn, "the engine (pid {}) is still running after {} s", other,
        kStopWait.count());
  }
  return StandbyEnd::stopped;
}

}  // namespace backscroll::engine
