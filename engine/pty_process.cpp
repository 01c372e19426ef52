#include "engine/pty_process.hpp"
#include "engine/log.hpp"
#include "engine/process_tree.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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

namespace {

// The paths execvp would try for `file`, in order: itself when it names a path, else each
// directory of the engine's PATH (posix_spawnp's search).
std::vector<std::string> exec_candidates(const std::string& file) {
  if (file.find('/') != std::string::npos) return {file};
  const char* path = std::getenv("PATH");
  const std::string_view dirs = path != nullptr ? path : "/bin:/usr/bin";
  std::vector<std::string> out;
  for (std::size_t at = 0;;) {
    const std::size_t colon = std::min(dirs.find(':', at), dirs.size());
    const std::string_view dir = dirs.substr(at, colon - at);
    out.push_back((dir.empty() ? std::string(".") : std::string(dir)) + "/" + file);
    if (colon == dirs.size()) break;
    at = colon + 1;
  }
  return out;
}

// What the child of start_in_cgroup needs, all prepared before the clone: between clone and
// exec the child may make async-signal-safe calls only (it shares the engine's memory).
struct ChildPlan {
  const char* slave_path;
  const char* cwd;          // null: the engine's
  char* const* candidates;  // exec_candidates, null-terminated
  char* const* argv;
  char* const* envp;
  int cgroup_fd;
  int error = 0;         // written by the child before it exits: a step failed
  int cgroup_error = 0;  // the same, when the move into the cgroup failed
};

// The child of start_in_cgroup: the same steps as posix_spawn's attributes and file actions in
// spawn_on_pty, after moving itself into the cgroup. It runs on its own stack, in the engine's
// memory (CLONE_VM), while the engine's thread waits (CLONE_VFORK); its signal handlers are its
// own copy (no CLONE_SIGHAND), and every signal is blocked until it resets them.
int run_child(void* arg) {
  ChildPlan& plan = *static_cast<ChildPlan*>(arg);
  const auto failed = [&plan](int err) {
    plan.error = err;
    ::_exit(127);
  };
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);  // fails harmlessly for SIGKILL, SIGSTOP and libc's own
  }
  // In the cgroup before the program's first instruction, so before its first fork: "0" names
  // the writer itself.
  const int procs = ::openat(plan.cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
  if (procs < 0 || ::write(procs, "0", 1) != 1) {
    plan.cgroup_error = errno;
    ::_exit(127);
  }
  ::close(procs);
  if (::setsid() < 0) failed(errno);
  if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0) failed(errno);
  // Opened after setsid without O_NOCTTY: the slave becomes the controlling terminal.
  const int tty = ::open(plan.slave_path, O_RDWR);
  if (tty < 0) failed(errno);
  for (int fd = 0; fd < 3; ++fd) {
    if (tty != fd && ::dup2(tty, fd) < 0) failed(errno);
  }
  if (tty > 2) ::close(tty);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // execvp's rules: a path not found goes on to the next; one denied too, but then the
  // failure is EACCES; any other error ends the search.
  int err = ENOENT;
  bool denied = false;
  for (char* const* path = plan.candidates; *path != nullptr; ++path) {
    ::execve(*path, plan.argv, plan.envp);
    err = errno;
    if (err == EACCES) denied = true;
    else if (err != ENOENT && err != ENOTDIR) break;
  }
  if (denied && (err == ENOENT || err == ENOTDIR)) err = EACCES;
  failed(err);
  return 127;
}

// Starts the program inside the cgroup open at `cgroup_fd`, as posix_spawn starts one anywhere
// (vfork semantics: no copy of the engine's page tables; clone returns once the child ran exec
// or failed). Not clone3's CLONE_INTO_CGROUP: that copies the page tables (glibc has no clone3
// wrapper that runs a function on another stack), 8 ms per spawn at 300 MB against 1 here.
struct Started {
  pid_t pid = -1;
  int pidfd = -1;
  int cgroup_error = 0;  // clone failed, or the move into the cgroup (the child was reaped)
  int child_error = 0;   // another step in the child failed (it was reaped)
};
Started start_in_cgroup(const char* slave_path, const std::string& cwd,
                        std::vector<std::string>& argv_strings,
                        std::vector<std::string>& env_strings, int cgroup_fd) {
  Started out;
  std::vector<std::string> candidate_strings = exec_candidates(argv_strings[0]);
  const std::vector<char*> candidates = c_strings(candidate_strings);
  const std::vector<char*> argv = c_strings(argv_strings);
  const std::vector<char*> envp = c_strings(env_strings);
  ChildPlan plan{slave_path,        cwd.empty() ? nullptr : cwd.c_str(),
                 candidates.data(), argv.data(),
                 envp.data(),       cgroup_fd};
  constexpr std::size_t kStack = 256 * 1024;
  void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    out.cgroup_error = errno;
    return out;
  }
  // No handler of the engine may run in the child before it reset them.
  sigset_t all;
  sigset_t before;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  int pidfd = -1;
  const int pid = ::clone(run_child, static_cast<char*>(stack) + kStack,
                          CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &plan, &pidfd);
  const int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ::munmap(stack, kStack);
  if (pid < 0) {
    out.cgroup_error = clone_errno;
    return out;
  }
  out.pid = pid;
  out.pidfd = pidfd;
  out.child_error = plan.error;
  out.cgroup_error = plan.cgroup_error;
  if (plan.error != 0 || plan.cgroup_error != 0) {
    ::waitpid(pid, nullptr, 0);
    ::close(pidfd);
  }
  return out;
}

}  // namespace

Result<PtyProcess> spawn_on_pty(const SpawnSpec& spec, int cgroup_fd) {
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

  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = child_environment(spec, environ);
  const auto cannot_start = [&spec](int err) {
    return fail(Errc::spawn_failed, "cannot start '" + spec.argv[0] + "'" +
                                        (spec.cwd.empty() ? "" : " in " + spec.cwd) + ": " +
                                        std::strerror(err));
  };
  if (cgroup_fd >= 0) {
    const Started child =
        start_in_cgroup(slave_path, spec.cwd, argv_strings, env_strings, cgroup_fd);
    if (child.child_error != 0) return cannot_start(child.child_error);
    if (child.cgroup_error == 0) return PtyProcess{master.release(), child.pid, child.pidfd, true};
    log(LogLevel::warn, "cannot start '{}' in its cgroup ({}): started outside it", spec.argv[0],
        std::strerror(child.cgroup_error));
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

  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<char*> envp = c_strings(env_strings);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return cannot_start(rc);
  // pidfd_open: a zombie's pidfd is readable at once, so an exit before this call is not lost.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const int err = errno;
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return fail_errno("pidfd_open", err);
  }
  return PtyProcess{master.release(), pid, pidfd, false};
}

}  // namespace backscroll::engine
