// CrashRecorder: a power loss at any file operation, for the writer thread's files (segments,
// the actor record, the cursor lease). An IoFaultPlan that
// - remembers, at each fdatasync, the file's contents (by inode: a renamed file keeps them) and,
//   at each folder fsync, which names the folder durably holds;
// - freezes the writer thread inside the Nth operation of any kind (the moment the power goes),
//   until the test has drawn its crash images, then fails that operation (the engine is gone);
// - draws crash images: what a disk could hold after the power loss. Every synced byte under a
//   durable name is kept; every other byte written since is independently kept, lost (the
//   file shorter), reordered (a later sector kept, an earlier one lost) or zero-filled, sector by
//   sector; a name created, removed or renamed since the last folder fsync may be either way.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <string>

#include "engine/store/io_faults.hpp"

namespace backscroll::testing {

class CrashRecorder : public store::IoFaultPlan {
 public:
  // `freeze_at`: the operation (of any kind, counted from 1) during which the power goes.
  explicit CrashRecorder(std::uint64_t freeze_at) : freeze_at_(freeze_at) {}

  bool before(store::IoOp op, const std::filesystem::path& path) override;
  void after(store::IoOp op, const std::filesystem::path& path) override;

  // Test thread: whether the writer is frozen at the crash point.
  bool frozen();
  // Test thread: lets the frozen operation fail (and every later one).
  void release();
  // Test thread, while frozen: writes into `to` (created) one crash image of `folder`.
  void write_image(const std::filesystem::path& folder, const std::filesystem::path& to,
                   std::mt19937_64& gen);

 private:
  using Inode = std::uint64_t;
  const std::uint64_t freeze_at_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t operations_ = 0;
  bool frozen_ = false;
  bool released_ = false;
  // A durable name: its file and what the file's data held at its last sync. Kept apart from
  // synced_ so a removed file's data survives the reuse of its inode number.
  struct Durable {
    Inode inode = 0;
    std::string synced;
  };
  std::map<Inode, std::string> synced_;  // each existing file's data at its last sync
  std::map<std::filesystem::path, std::map<std::string, Durable>> durable_names_;  // per folder
};

}  // namespace backscroll::testing
