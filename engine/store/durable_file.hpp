// Small files that must never be seen half written and must survive a crash once written: the
// actor record, a clear's floor, deletion snapshots. Written to a new "<path>.tmp" (created with
// O_EXCL | O_NOFOLLOW, 0600 whatever the umask; a stale one is unlinked first), fdatasync'ed,
// renamed over `path`; the folder's fsync (sync_folder) makes the rename
// itself durable. On an error the temporary file is removed and `path` is untouched.
#pragma once

#include <filesystem>
#include <string_view>

#include "engine/store/io_faults.hpp"
#include "shm/error.hpp"

namespace backscroll::store {

// `faults`: a test seam (io_faults.hpp), null in the engine.
Result<void> write_file_durably(const std::filesystem::path& path, std::string_view text,
                                IoFaultPlan* faults = nullptr);
// fsync of a folder: the names created, renamed or removed in it are durable.
Result<void> sync_folder(const std::filesystem::path& folder, IoFaultPlan* faults = nullptr);

}  // namespace backscroll::store
