#include "engine/pty_process.hpp"
#include "engine/process_tree.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

extern char** environ;

namespace backscroll::engine {
namespace {

// Closes an fd on scope exit unless released.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::optional<std::string> working_directory_of(int master_fd, pid_t leader) {
  for (const pid_t pid : {::tcgetpgrp(master_fd), leader}) {
    if (pid <= 0) continue;
    std::error_code ec;
    const auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec);
    if (!ec && !cwd.empty()) return cwd.string();
  }
  return std::nullopt;
}

Result<void> set_window_size(int master_fd, WindowSize size) {
  winsize ws{};
  ws.ws_col = size.cols;
  ws.ws_row = size.rows;
  if (::ioctl(master_fd, TIOCSWINSZ, &ws) != 0) return fail_errno("TIOCSWINSZ", errno);
  return {};
}

namespace {

// The engine's own variables, never handed down from its environment: its settings
// (BACKSCROLL_*) and what systemd gives the service itself.
bool engine_only(std::string_view name) {
  static constexpr std::string_view kSystemd[] = {
      "NOTIFY_SOCKET",  "LISTEN_PID", "LISTEN_FDS",   "LISTEN_FDNAMES", "INVOCATION_ID",
      "JOURNAL_STREAM", "MANAGERPID", "WATCHDOG_PID", "WATCHDOG_USEC"};
  return name.rfind("BACKSCROLL_", 0) == 0 ||
         std::find(std::begin(kSystemd), std::end(kSystemd), name) != std::end(kSystemd);
}

}  // namespace

std::vector<std::string> child_environment(const SpawnSpec& spec, char** engine_environment) {
  std::vector<std::pair<std::string, std::string>> entries;
  const auto set = [&entries](std::string_view name, std::string_view value) {
    const auto same = std::find_if(entries.begin(), entries.end(),
                                   [name](const auto& e) { return e.first == name; });
    if (same != entries.end()) same->second = value;
    else entries.emplace_back(name, value);
  };
  if (!spec.env_replace) {
    for (char** e = engine_environment; e != nullptr && *e != nullptr; ++e) {
      const std::string_view entry(*e);
      const auto eq = entry.find('=');
      if (eq == std::string_view::npos || engine_only(entry.substr(0, eq))) continue;
      set(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }
  for (const auto& [k, v] : spec.env) set(k, v);
  set("TERM", "xterm-256color");
  // A caller inside another actor sends that actor's token: the new session's own replaces it.
  if (!spec.session_token.empty()) set(kSessionTokenVariable, spec.session_token);
  std::vector<std::string> env;
  env.reserve(entries.size());
  for (const auto& [k, v] : entries) env.push_back(k + "=" + v);
  return env;
}

Result<PtyProcess> spawn_on_pty(const SpawnSpec& spec) {
  if (spec.argv.empty()) return fail(Errc::bad_request, "empty argv");
  FdGuard master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
  if (master.get() < 0) return fail_errno("posix_openpt", errno);
  if (::grantpt(master.get()) != 0) return fail_errno("grantpt", errno);
  if (::unlockpt(master.get()) != 0) return fail_errno("unlockpt", errno);
  char slave_path[128];
  if (::ptsname_r(master.get(), slave_path, sizeof slave_path) != 0) {
    return fail_errno("ptsname", errno);
  }
  if (auto r = set_window_size(master.get(), spec.size); !r) return tl::unexpected(r.error());

  // Hold the slave open until the child has it, so the master never sees a hang-up in between;
  // set the line discipline to UTF-8 (erase of a whole character in cooked mode).
  FdGuard slave(::open(slave_path, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (slave.get() < 0) return fail_errno(std::string("open ") + slave_path, errno);
  termios tio{};
  if (::tcgetattr(slave.get(), &tio) == 0) {
    tio.c_iflag |= IUTF8;
    ::tcsetattr(slave.get(), TCSANOW, &tio);
  }

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  // A new session (so the PTY becomes its controlling terminal and it leads its own process
  // group), no blocked signals and default dispositions, whatever the engine uses itself.
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  // Opened after setsid without O_NOCTTY: the slave becomes the controlling terminal.
  posix_spawn_file_actions_addopen(&actions, 0, slave_path, O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&actions, 0, 1);
  posix_spawn_file_actions_adddup2(&actions, 0, 2);

  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = child_environment(spec, environ);
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<char*> envp = c_strings(env_strings);

  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return fail(Errc::spawn_failed, "cannot start '" + spec.argv[0] + "'" +
                                        (spec.cwd.empty() ? "" : " in " + spec.cwd) + ": " +
                                        std::strerror(rc));
  }
  // pidfd_open: a zombie's pidfd is readable at once, so an exit before this call is not lost.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const int err = errno;
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return fail_errno("pidfd_open", err);
  }
  return PtyProcess{master.release(), pid, pidfd};
}

}  // namespace backscroll::engine
