#include "engine/store/durable_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace backscroll::store {

Result<void> write_file_durably(const std::filesystem::path& path, std::string_view text,
                                IoFaultPlan* faults) {
  const std::filesystem::path temporary = path.string() + ".tmp";
  // Always a new file: never one that is there already, never through a symlink. One a crash
  // left behind (or anything planted under its name) is removed first; unlink never follows.
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  if (auto r = before_io(faults, IoOp::create, temporary); !r) return r;
  int fd = ::open(temporary.c_str(), kFlags, 0600);
  if (fd < 0 && errno == EEXIST && ::unlink(temporary.c_str()) == 0) {
    fd = ::open(temporary.c_str(), kFlags, 0600);
  }
  if (fd < 0) return fail_io("create " + temporary.string(), errno);
  Result<void> r = before_io(faults, IoOp::write, temporary);
  for (std::size_t done = 0; r && done < text.size();) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) r = fail_io("write " + temporary.string(), w < 0 ? errno : ENOSPC);
    else done += static_cast<std::size_t>(w);
  }
  if (r) r = before_io(faults, IoOp::sync, temporary);
  if (r && (::fchmod(fd, 0600) != 0 || ::fdatasync(fd) != 0)) {
    r = fail_io("sync " + temporary.string(), errno);
  }
  if (r) after_io(faults, IoOp::sync, temporary);
  ::close(fd);
  if (r) r = before_io(faults, IoOp::rename, path);
  if (r && ::rename(temporary.c_str(), path.c_str()) != 0) {
    r = fail_io("rename " + path.string(), errno);
  }
  if (!r) {
    std::error_code ec;
    std::filesystem::remove(temporary, ec);
  }
  return r;
}

Result<void> sync_folder(const std::filesystem::path& folder, IoFaultPlan* faults) {
  if (auto r = before_io(faults, IoOp::folder_sync, folder); !r) return r;
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail_io("open " + folder.string(), errno);
  const int r = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (r != 0) return fail_io("fsync " + folder.string(), err);
  after_io(faults, IoOp::folder_sync, folder);
  return {};
}

}  // namespace backscroll::store
