#include "engine/runtime_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace backscroll::engine {
namespace {

// Creates `dir` (and missing parents) with mode 0700 and checks that it is safe to use.
Result<void> secure_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (dir.has_parent_path() && !std::filesystem::exists(dir.parent_path(), ec)) {
    std::filesystem::create_directories(dir.parent_path(), ec);
    if (ec) return fail_errno("create " + dir.parent_path().string(), ec.value());
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return fail_errno("create " + dir.string(), errno);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return fail_errno("stat " + dir.string(), errno);
  if (S_ISLNK(st.st_mode)) {
    return fail(Errc::permission_denied, dir.string() + " is a symbolic link; refusing to use it");
  }
  if (!S_ISDIR(st.st_mode)) {
    return fail(Errc::permission_denied, dir.string() + " is not a directory");
  }
  if (st.st_uid != ::geteuid()) {
    return fail(Errc::permission_denied, dir.string() + " belongs to uid " +
                                             std::to_string(st.st_uid) + ", not to this user");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
    return fail(Errc::permission_denied, dir.string() + " has mode " + mode +
                                             "; it must be 0700 (chmod 700 it, or remove it)");
  }
  return {};
}

}  // namespace

Result<RuntimeDir> RuntimeDir::claim(const Places& places) {
  if (auto ok = secure_directory(places.runtime_dir); !ok) return tl::unexpected(ok.error());
  const std::string lock_path = places.lock_path().string();
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return fail_errno("open " + lock_path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    [[maybe_unused]] const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      std::string holder(pid);
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      return fail(Errc::already_running, "an engine" +
                                             (holder.empty() ? "" : " (pid " + holder + ")") +
                                             " already runs for " + places.runtime_dir.string());
    }
    return fail_errno("lock " + lock_path, err);
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t n = ::pwrite(fd, me.data(), me.size(), 0);
  }
  return RuntimeDir(places, fd);
}

RuntimeDir::RuntimeDir(RuntimeDir&& other) noexcept
    : places_(other.places_),
      lock_fd_(std::exchange(other.lock_fd_, -1)),
      listening_(std::exchange(other.listening_, false)) {}

RuntimeDir::~RuntimeDir() {
  if (lock_fd_ < 0) return;
  if (listening_) ::unlink(places_.socket_path().c_str());
  ::close(lock_fd_);  // releases the lock
}

Result<int> RuntimeDir::listen() {
  const std::string path = places_.socket_path().string();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return fail(Errc::bad_request, "socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());  // a dead engine's socket (we hold the lock)
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail_errno("socket", errno);
  // The folder is 0700 already; bind under a tight umask so the socket is 0600 from birth.
  const mode_t old_mask = ::umask(0177);
  const int bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_err = errno;
  ::umask(old_mask);
  if (bound != 0) {
    ::close(fd);
    return fail_errno("bind " + path, bind_err);
  }
  ::chmod(path.c_str(), 0600);
  if (::listen(fd, 512) != 0) {
    const int err = errno;
    ::close(fd);
    return fail_errno("listen " + path, err);
  }
  listening_ = true;
  return fd;
}

}  // namespace backscroll::engine
