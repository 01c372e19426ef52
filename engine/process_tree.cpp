#include "engine/process_tree.hpp"
#include "engine/proc_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

namespace backscroll::engine {
namespace {

// One process as /proc/PID/stat describes it.
struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';
  std::uint64_t start_ticks = 0;
};

// An environment (or stat line) past this is not ours to search.
constexpr std::size_t kMaxProcFile = 1u << 20;

// Fields 3 (state), 4 (ppid) and 22 (starttime) of /proc/PID/stat; the command name (field 2)
// may hold spaces and parentheses, so fields are counted from the last ')'.
bool read_stat(pid_t pid, ProcStat& out) {
  const std::string line = read_proc_file("/proc/" + std::to_string(pid) + "/stat", kMaxProcFile);
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char* p = line.c_str() + close + 2;
  out.pid = pid;
  out.state = *p;
  char* end = nullptr;
  int field = 3;
  ++p;
  while (*p != '\0' && field < 22) {
    while (*p == ' ') ++p;
    ++field;
    const unsigned long long value = std::strtoull(p, &end, 10);
    if (end == p) return false;
    if (field == 4) out.ppid = static_cast<pid_t>(value);
    if (field == 22) out.start_ticks = value;
    p = end;
  }
  return field == 22;
}

// Every process of this user, from one pass over /proc.
std::vector<ProcStat> own_processes() {
  std::vector<ProcStat> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  const uid_t uid = ::geteuid();
  while (const dirent* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (name[0] < '1' || name[0] > '9') continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), name, &st, 0) != 0 || st.st_uid != uid) continue;
    ProcStat ps;
    if (read_stat(static_cast<pid_t>(std::atol(name)), ps)) out.push_back(ps);
  }
  ::closedir(dir);
  return out;
}

// Whether the environment the process was started with holds `entry` (NAME=VALUE) exactly.
bool environment_holds(pid_t pid, std::string_view entry) {
  const std::string env = read_proc_file("/proc/" + std::to_string(pid) + "/environ", kMaxProcFile);
  std::size_t at = 0;
  while (at < env.size()) {
    std::size_t end = env.find('\0', at);
    if (end == std::string::npos) end = env.size();
    if (std::string_view(env).substr(at, end - at) == entry) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

std::string new_session_token() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::vector<ProcessRef> session_processes(pid_t leader, std::string_view token) {
  const std::vector<ProcStat> all = own_processes();
  const pid_t self = ::getpid();
  std::unordered_map<pid_t, std::vector<std::size_t>> children;
  for (std::size_t i = 0; i < all.size(); ++i) children[all[i].ppid].push_back(i);
  const std::string entry = std::string(kSessionTokenVariable) + "=" + std::string(token);

  std::vector<bool> member(all.size(), false);
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].pid == self) continue;
    if ((leader > 0 && all[i].pid == leader) ||
        (!token.empty() && environment_holds(all[i].pid, entry))) {
      member[i] = true;
      todo.push_back(i);
    }
  }
  while (!todo.empty()) {  // their descendants, whatever their environment
    const std::size_t i = todo.back();
    todo.pop_back();
    const auto it = children.find(all[i].pid);
    if (it == children.end()) continue;
    for (const std::size_t c : it->second) {
      if (member[c] || all[c].pid == self) continue;
      member[c] = true;
      todo.push_back(c);
    }
  }
  std::vector<ProcessRef> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (member[i] && all[i].state != 'Z') out.push_back({all[i].pid, all[i].start_ticks});
  }
  return out;
}

bool signal_pinned(pid_t pid, const std::function<bool()>& still_the_one, int sig) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return false;  // gone
  const bool sent = still_the_one() && ::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0;
  ::close(fd);
  return sent;
}

std::size_t signal_processes(const std::vector<ProcessRef>& processes, int sig) {
  std::size_t reached = 0;
  for (const ProcessRef& p : processes) {
    // The one scanned only if it started at the same moment.
    const auto same = [&p] {
      ProcStat now;
      return read_stat(p.pid, now) && now.start_ticks == p.start_ticks;
    };
    if (signal_pinned(p.pid, same, sig)) ++reached;
  }
  return reached;
}

void reap_orphans(const std::function<bool(pid_t)>& keep) {
  const pid_t self = ::getpid();
  for (const ProcStat& p : own_processes()) {
    if (p.ppid != self || p.state != 'Z' || keep(p.pid)) continue;
    siginfo_t info{};
    ::waitid(P_PID, static_cast<id_t>(p.pid), &info, WEXITED | WNOHANG);
  }
}

bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

}  // namespace backscroll::engine
