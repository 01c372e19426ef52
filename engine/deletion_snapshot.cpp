#include "engine/deletion_snapshot.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/request_fields.hpp"

namespace backscroll::engine {
namespace {

namespace fs = std::filesystem;

tl::unexpected<Error> os_error(const std::string& what, int err = errno) {
  return fail(Errc::io_error, what + ": " + std::strerror(err));
}

// `text` into `path`, 0600 whatever the umask, through a temporary file and a rename.
Result<void> write_file(const fs::path& path, std::string_view text) {
  const fs::path temporary = path.string() + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return os_error("create " + temporary.string());
  Result<void> r;
  for (std::size_t done = 0; r && done < text.size();) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) r = os_error("write " + temporary.string(), w < 0 ? errno : ENOSPC);
    else done += static_cast<std::size_t>(w);
  }
  if (r && (::fchmod(fd, 0600) != 0 || ::fsync(fd) != 0)) r = os_error("sync " + temporary.string());
  ::close(fd);
  if (r && ::rename(temporary.c_str(), path.c_str()) != 0) r = os_error("rename " + path.string());
  if (!r) {
    std::error_code ec;
    fs::remove(temporary, ec);
  }
  return r;
}

}  // namespace

Result<void> write_deletion_snapshot(const fs::path& dir, const DeletionSnapshot& s) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "create " + dir.string() + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) return os_error("chmod " + dir.string());
  const fs::path scrollback = dir / (s.record.name + ".scrollback");
  const fs::path json_path = dir / (s.record.name + ".snapshot.json");
  if (s.scrollback) {
    if (auto r = write_file(scrollback, *s.scrollback); !r) return r;
  } else {
    fs::remove(scrollback, ec);  // an older deletion's must not pass for this one's
  }
  control::Json json = s.record.to_json();
  json.erase("env");  // the environment can hold secrets; restore opens a shell anyway
  json.erase("format");
  json["format"] = "backscroll-deleted/1";
  json["floor"] = value(s.floor);
  json["committed"] = value(s.record.cursor);
  json["deleted_ms"] = s.deleted_ms;
  json["scrollback"] = s.scrollback ? control::Json(scrollback.filename().string()) : nullptr;
  if (auto r = write_file(json_path, json.dump(2) + "\n"); !r) {
    fs::remove(scrollback, ec);
    return r;
  }
  // The renames are durable once the folder is.
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  return {};
}

std::size_t purge_deletion_snapshots(const fs::path& dir, std::chrono::system_clock::duration max_age,
                                     std::chrono::system_clock::time_point now) {
  std::size_t purged = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const auto written = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    std::error_code entry_ec;
    if (now - written > max_age && fs::remove(entry.path(), entry_ec)) ++purged;
  }
  return purged;
}

}  // namespace backscroll::engine
