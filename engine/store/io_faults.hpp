// IoFaultPlan: a test seam under the files that keep history (transcript segments, the actor
// record, the cursor lease). Null in the engine. Every operation those files depend on asks the
// plan first (before_io) and, for syncs, tells it afterwards (after_io), with the path.
//
// The plain plan fails the Nth operation of one kind (counted from 1) with `error` before it
// reaches the OS, as a failing disk would. Tests derive from it to do more at those points (the
// crash-image recorder of tests/engine/crash_image.hpp reads each file as it is synced).
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <string>

#include "shm/error.hpp"

namespace backscroll::store {

enum class IoOp : std::uint8_t {
  write,        // write / pwrite of file contents
  sync,         // fdatasync of a file
  create,       // creating a file (a segment, a temporary file, the lease)
  remove,       // deleting a file (retention, a clear, a replaced empty segment)
  rename,       // renaming a temporary file into place
  folder_sync,  // fsync of a folder (names created, renamed or removed in it)
};

constexpr const char* io_op_name(IoOp op) noexcept {
  switch (op) {
    case IoOp::write: return "write";
    case IoOp::sync: return "fdatasync";
    case IoOp::create: return "create";
    case IoOp::remove: return "remove";
    case IoOp::rename: return "rename";
    case IoOp::folder_sync: return "fsync";
  }
  return "?";
}

class IoFaultPlan {
 public:
  IoFaultPlan() = default;
  IoFaultPlan(IoOp op, std::uint64_t nth, int error = EIO) : op_(op), nth_(nth), error_(error) {}
  virtual ~IoFaultPlan() = default;
  IoFaultPlan(const IoFaultPlan&) = delete;
  IoFaultPlan& operator=(const IoFaultPlan&) = delete;

  // Before an operation of kind `op` on `path` (for a rename, the target): true makes it fail.
  virtual bool before(IoOp op, const std::filesystem::path&) {
    return nth_ != 0 && op == op_ && count_.fetch_add(1) + 1 == nth_;
  }
  // After a sync or folder sync of `path` succeeded.
  virtual void after(IoOp, const std::filesystem::path&) {}
  int error() const noexcept { return error_; }

 private:
  IoOp op_ = IoOp::write;
  std::uint64_t nth_ = 0;  // 0: never
  int error_ = EIO;
  std::atomic<std::uint64_t> count_{0};  // operations of kind op_ so far
};

// The injected failure of `op` on `path`, if the plan (null in the engine) has one.
inline Result<void> before_io(IoFaultPlan* plan, IoOp op, const std::filesystem::path& path) {
  if (plan == nullptr || !plan->before(op, path)) return {};
  return fail_errno(std::string(io_op_name(op)) + " " + path.string(), plan->error());
}
inline void after_io(IoFaultPlan* plan, IoOp op, const std::filesystem::path& path) {
  if (plan != nullptr) plan->after(op, path);
}

}  // namespace backscroll::store
