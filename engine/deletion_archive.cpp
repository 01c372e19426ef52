#include "engine/deletion_archive.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "engine/request_fields.hpp"
#include "engine/store/durable_file.hpp"

namespace backscroll::engine {

namespace fs = std::filesystem;

Result<void> write_deletion_archive(const fs::path& dir, const DeletionArchive& s) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "create " + dir.string() + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) return fail_io("chmod " + dir.string(), errno);
  const fs::path scrollback = dir / (s.record.name + ".scrollback");
  const fs::path json_path = dir / (s.record.name + ".snapshot.json");
  if (s.scrollback) {
    if (auto r = store::write_file_durably(scrollback, *s.scrollback); !r) return r;
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
  json["spawn_cwd"] = s.spawn_cwd.empty() ? s.record.spec.cwd : s.spawn_cwd;
  json["scrollback"] = s.scrollback ? control::Json(scrollback.filename().string()) : nullptr;
  if (auto r = store::write_file_durably(json_path, json.dump(2) + "\n"); !r) {
    fs::remove(scrollback, ec);
    return r;
  }
  return store::sync_folder(dir);  // the renames are durable once the folder is
}

std::size_t purge_deletion_archives(const fs::path& dir,
                                    std::chrono::system_clock::duration max_age,
                                    std::chrono::system_clock::time_point now) {
  std::size_t purged = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const auto written = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) +
            std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    std::error_code entry_ec;
    if (now - written > max_age && fs::remove(entry.path(), entry_ec)) ++purged;
  }
  return purged;
}

}  // namespace backscroll::engine
