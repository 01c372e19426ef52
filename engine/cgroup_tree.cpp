#include "engine/cgroup_tree.hpp"
#include "engine/proc_file.hpp"
#include "engine/process_tree.hpp"
#include "engine/sanitizer_build.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <sstream>
#include <thread>

namespace backscroll::engine {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kMaxCgroupFile = 1u << 20;

bool write_file(const fs::path& path, std::string_view text) noexcept {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Whether systemd marked the cgroup as delegated to its unit (Delegate=yes): the xattr
// trusted.delegate (system instance) or user.delegate (user instance) reads "1".
bool marked_delegated(const fs::path& dir) noexcept {
  for (const char* name : {"trusted.delegate", "user.delegate"}) {
    char value[8] = {};
    const ssize_t n = ::getxattr(dir.c_str(), name, value, sizeof value - 1);
    if (n == 1 && value[0] == '1') return true;
  }
  return false;
}

// Mountinfo fields: 4 is the root of the mount within its filesystem, 5 the mount point; the
// filesystem type is the first field after the " - " separator. Octal escapes (\040) in paths
// are decoded.
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto octal = [&](std::size_t k) { return s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] <= '3' && octal(i + 1) && octal(i + 2) &&
        octal(i + 3)) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool pid_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// The unified hierarchy's path in a /proc/PID/cgroup text (its "0::" line), "" without one.
std::string unified_path(const std::string& proc_cgroup_text) {
  std::istringstream in(proc_cgroup_text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return {};
}

// Whether process `pid` (looked up now) is in the cgroup `relative` (its /proc/PID/cgroup path,
// as the kernel prints it for the reader's namespace) or below it.
bool in_cgroup(pid_t pid, const std::string& relative) {
  const std::string path =
      unified_path(read_proc_file("/proc/" + std::to_string(pid) + "/cgroup", 4096));
  return path == relative || path.rfind(relative + "/", 0) == 0;
}

}  // namespace

std::optional<CgroupPlace> cgroup_place(const fs::path& proc_cgroup, const fs::path& mountinfo) {
  const std::string relative = unified_path(read_proc_file(proc_cgroup, kMaxCgroupFile));
  if (relative.empty() || relative[0] != '/') return std::nullopt;
  std::istringstream in(read_proc_file(mountinfo, kMaxCgroupFile));
  for (std::string line; std::getline(in, line);) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream type(line.substr(dash + 3));
    std::string fstype;
    type >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, devices, root, point;
    fields >> id >> parent >> devices >> root >> point;
    root = unescape(root);
    // The mount shows the filesystem from `root` down: the cgroup must be at or below it.
    if (root != "/" && relative != root && relative.rfind(root + "/", 0) != 0) continue;
    const std::string below = root == "/" ? relative : relative.substr(root.size());
    CgroupPlace place;
    place.dir = fs::path(unescape(point));
    if (below != "/") place.dir /= fs::path(below).relative_path();
    place.relative = relative;
    return place;
  }
  return std::nullopt;
}

bool remove_cgroup(const fs::path& dir) noexcept {
  std::error_code ec;
  bool all = true;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) all &= remove_cgroup(it->path());
  }
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT ? all : false;
}

ActorCgroup::~ActorCgroup() {
  ::close(dir_fd_);
  remove_cgroup(path_);  // fails while processes are still ending: CgroupTree::sweep retries
}

std::vector<pid_t> ActorCgroup::processes() const {
  std::vector<pid_t> out;
  std::vector<fs::path> todo{path_};
  while (!todo.empty()) {
    const fs::path dir = todo.back();
    todo.pop_back();
    std::istringstream in(read_proc_file(dir / "cgroup.procs", kMaxCgroupFile));
    for (long pid; in >> pid;) out.push_back(static_cast<pid_t>(pid));
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) todo.push_back(it->path());
    }
  }
  return out;
}

bool ActorCgroup::populated() const {
  std::istringstream in(read_proc_file(path_ / "cgroup.events", 4096));
  for (std::string key, value; in >> key >> value;) {
    if (key == "populated") return value != "0";
  }
  return !processes().empty();
}

std::size_t ActorCgroup::signal(int sig) const {
  if (sig == SIGKILL && write_file(path_ / "cgroup.kill", "1")) return 0;
  // Each listed pid is checked, through a pidfd that pins it, to still be in this cgroup: a pid
  // reused by an outside process after the listing is never signalled.
  std::size_t reached = 0;
  for (const pid_t pid : processes()) {
    if (signal_pinned(
            pid, [&] { return in_cgroup(pid, relative_); }, sig))
      ++reached;
  }
  return reached;
}

Result<std::unique_ptr<CgroupTree>> CgroupTree::open() {
  // ThreadSanitizer's runtime aborts in its fork hooks on the vfork-like clone that starts a
  // session's program inside its cgroup (pty_process.cpp): under it the engine runs without
  // cgroups, as on a host that delegates none (tools/sanitize.sh tsan).
  if constexpr (kThreadSanitizerBuild) {
    return fail(Errc::io_error,
                "not under ThreadSanitizer, which cannot follow the clone that "
                "starts a program in its cgroup");
  }
  return open_from("/proc/self/cgroup", "/proc/self/mountinfo", ::getpid());
}

Result<std::unique_ptr<CgroupTree>> CgroupTree::open_from(const fs::path& proc_cgroup,
                                                          const fs::path& mountinfo,
                                                          pid_t engine_pid) {
  const auto place = cgroup_place(proc_cgroup, mountinfo);
  if (!place) return fail(Errc::io_error, "no cgroup v2 hierarchy holds the engine");
  // A cgroup systemd did not delegate is systemd's to arrange: cgroups made in it could be
  // moved or removed under the engine. The root of a namespace has no such manager.
  if (place->relative != "/" && !marked_delegated(place->dir)) {
    return fail(Errc::permission_denied,
                "the engine's cgroup " + place->dir.string() + " is not delegated to it");
  }
  // Directories of engines that are gone: removed when empty (a populated one holds processes
  // an engine left when it crashed; they are not this engine's to end).
  std::error_code ec;
  for (fs::directory_iterator it(place->dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("backscroll-", 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + 11, nullptr, 10);
    if (pid > 0 && pid != engine_pid && !pid_alive(static_cast<pid_t>(pid)))
      remove_cgroup(it->path());
  }
  // One directory per tree: several engines may share a process (tests).
  static std::atomic<unsigned> trees{0};
  const std::string leaf = "backscroll-" + std::to_string(engine_pid) + "." +
                           std::to_string(trees.fetch_add(1, std::memory_order_relaxed));
  const fs::path dir = place->dir / leaf;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail_errno("mkdir " + dir.string(), errno);
  const std::string relative = (place->relative == "/" ? "" : place->relative) + "/" + leaf;
  return std::unique_ptr<CgroupTree>(new CgroupTree(dir, relative));
}

CgroupTree::~CgroupTree() {
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) write_file(it->path() / "cgroup.kill", "1");
  }
  for (int i = 0; i < 100 && !remove_cgroup(dir_); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

Result<std::shared_ptr<ActorCgroup>> CgroupTree::create(std::string_view name) {
  sweep();
  const std::string leaf = std::string(name) + "." + std::to_string(++created_);
  const fs::path path = dir_ / leaf;
  if (::mkdir(path.c_str(), 0755) != 0) return fail_errno("mkdir " + path.string(), errno);
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    ::rmdir(path.c_str());
    return fail_errno("open " + path.string(), err);
  }
  auto cgroup = std::make_shared<ActorCgroup>(path, relative_ + "/" + leaf, fd);
  leaves_.push_back(Leaf{path, cgroup});
  return cgroup;
}

void CgroupTree::sweep() noexcept {
  std::erase_if(leaves_,
                [](const Leaf& leaf) { return leaf.owner.expired() && remove_cgroup(leaf.path); });
}

}  // namespace backscroll::engine
