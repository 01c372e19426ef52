#include "tools/cli_engine.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>

namespace backscroll::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::chrono::milliseconds kConnectPoll{20};

// The engine built with this CLI sits next to it (build*/bin, or an install's bin/).
std::string find_engine_binary() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    const fs::path sibling = fs::path(self).parent_path() / "backscrolld";
    if (::access(sibling.c_str(), X_OK) == 0) return sibling.string();
  }
  return "backscrolld";  // execvp searches PATH
}

Result<void> ensure_runtime_dir(const fs::path& dir) {
  std::error_code ec;
  if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);  // mkdir reports
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return fail_errno("create runtime dir " + dir.string(), errno);
  }
  return {};
}

// The last non-empty line of the engine's log, to say why it did not come up.
std::string last_log_line(const fs::path& log) {
  const int fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const off_t start = size > 4096 ? size - 4096 : 0;
  std::string text(static_cast<std::size_t>(size - start), '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), start);
  ::close(fd);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

// The pid the engine holding the runtime dir's lock wrote into the lock file; 0 if none.
std::int64_t lock_holder(const Places& places) {
  const int fd = ::open(places.lock_path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  ::close(fd);
  std::int64_t pid = 0;
  for (ssize_t i = 0; i < n && i < 10 && buf[i] >= '0' && buf[i] <= '9'; ++i) {
    pid = pid * 10 + (buf[i] - '0');
  }
  return pid;
}

bool read_exact(int fd, void* out, std::size_t bytes) {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t n = ::read(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

// Runs in the grandchild after fork: async-signal-safe calls only, then exec.
[[noreturn]] void exec_engine(const char* exe, int report_fd, int stdin_fd, int log_fd) {
  const pid_t self = ::getpid();
  (void)!::write(report_fd, &self, sizeof self);
  ::dup2(stdin_fd, STDIN_FILENO);
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  (void)!::chdir("/");  // never pin the user's working directory
  // A clean slate: no ignored or blocked signals, no descriptors but 0-2 (report_fd is
  // close-on-exec, so it stays usable until exec succeeds).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {  // kernels before 5.11
    const long max_fd = ::sysconf(_SC_OPEN_MAX);
    for (int fd = 3; fd < (max_fd > 0 && max_fd < 65536 ? max_fd : 65536); ++fd) {
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  char* const argv[] = {const_cast<char*>(exe), nullptr};
  ::execvp(exe, argv);
  const int err = errno;
  (void)!::write(report_fd, &err, sizeof err);
  ::_exit(127);
}

// Forks twice so the engine is nobody's child (no zombie if it dies while we run) and leads
// its own session (no controlling terminal; a closed terminal's SIGHUP never reaches it).
Result<pid_t> launch_engine(const Places& places) {
  if (auto dir = ensure_runtime_dir(places.runtime_dir); !dir) return tl::unexpected(dir.error());
  const fs::path log = places.runtime_dir / "engine.log";
  const std::string exe = find_engine_binary();
  const int log_fd =
      ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
  if (log_fd < 0) return fail_errno("open " + log.string(), errno);
  {
    char when[64] = "?";
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    if (::localtime_r(&now, &tm)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    const std::string line = std::string("backscroll: starting ") + exe + " at " + when + "\n";
    (void)!::write(log_fd, line.data(), line.size());
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int report[2];
  if (null_fd < 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return fail_errno("start backscrolld", err);
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::setsid();
    const pid_t grandchild = ::fork();
    if (grandchild == 0) exec_engine(exe.c_str(), report[1], null_fd, log_fd);
    ::_exit(grandchild < 0 ? 1 : 0);
  }
  const int fork_errno = errno;
  ::close(report[1]);
  ::close(log_fd);
  ::close(null_fd);
  if (child < 0) {
    ::close(report[0]);
    return fail_errno("fork", fork_errno);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  pid_t engine_pid = 0;
  int exec_errno = 0;
  const bool got_pid = read_exact(report[0], &engine_pid, sizeof engine_pid);
  const bool exec_failed = got_pid && read_exact(report[0], &exec_errno, sizeof exec_errno);
  ::close(report[0]);
  if (!got_pid) return fail(Errc::engine_unavailable, "could not fork the engine");
  if (exec_failed) {
    return fail(Errc::engine_unavailable, "cannot run " + exe + ": " + std::strerror(exec_errno));
  }
  return engine_pid;
}

}  // namespace

bool process_running(std::int64_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  const std::string_view stat(buf, static_cast<std::size_t>(n));
  const auto paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string_view::npos || paren + 2 >= stat.size()) return false;
  const char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

Result<control::ControlClient> EngineTarget::connect_existing() const {
  return connect_live(places);
}

Result<control::ControlClient> EngineTarget::connect() const {
  auto client = connect_live(places);
  if (client || client.error().code != Errc::engine_unavailable || !autostart) return client;
  return start_engine(places, kEngineStartTimeout);
}

Result<control::ControlClient> connect_live(const Places& places) {
  auto client = control::ControlClient::connect(places);
  if (!client) return client;
  // A killed engine's socket can still accept for a few milliseconds (the kernel tears its
  // io_uring down, with the accept queued there, after the process is gone): such a connection
  // is reset at the first request. Its peer is no running process: no engine answers.
  const std::string who = "the engine (pid " + std::to_string(client->peer_pid()) + ")";
  if (!process_running(client->peer_pid())) {
    return fail(Errc::engine_unavailable, who + " that owned the socket is gone");
  }
  // Nor does one that is still exiting (killed a moment ago, its files not closed yet): a
  // ping tells, and costs one round trip.
  if (auto pong = client->call("ping"); !pong) {
    if (pong.error().code == Errc::io_error) {
      return fail(Errc::engine_unavailable, who + " closed the connection: it is exiting");
    }
    return tl::unexpected(pong.error());
  }
  return client;
}

Result<control::ControlClient> start_engine(const Places& places,
                                            std::chrono::milliseconds timeout) {
  auto pid = launch_engine(places);
  if (!pid) return tl::unexpected(pid.error());
  const fs::path log = places.runtime_dir / "engine.log";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int relaunches = 0;
  for (;;) {
    auto client = connect_live(places);
    if (client || client.error().code != Errc::engine_unavailable) return client;
    if (!process_running(*pid)) {
      // It may have lost a start race to another engine, which then answers (once it listens:
      // the winner takes the lock before it binds the socket).
      client = connect_live(places);
      if (client) return client;
      const std::int64_t holder = lock_holder(places);
      if (holder > 0 && holder != *pid && process_running(holder) &&
          std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(kConnectPoll);
        continue;
      }
      // The engine it started found the lock held by one that was still exiting (killed a
      // moment before): start another, at most twice.
      if (holder > 0 && holder != *pid && !process_running(holder) && relaunches < 2 &&
          std::chrono::steady_clock::now() < deadline) {
        ++relaunches;
        pid = launch_engine(places);
        if (!pid) return tl::unexpected(pid.error());
        continue;
      }
      const std::string why = last_log_line(log);
      return fail(Errc::engine_unavailable, "backscrolld exited at startup" +
                                                (why.empty() ? "" : ": " + why) +
                                                " (log: " + log.string() + ")");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return fail(Errc::engine_unavailable, "started backscrolld (pid " + std::to_string(*pid) +
                                                ") but it did not answer within " +
                                                std::to_string(timeout.count()) +
                                                " ms (log: " + log.string() + ")");
    }
    std::this_thread::sleep_for(kConnectPoll);
  }
}

}  // namespace backscroll::cli
