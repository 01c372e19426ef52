// IoFaultPlan: a test seam under the files that keep history (transcript segments, the actor
// record, the cursor lease). Null in the engine. A plan names one kind of operation and a count:
// the Nth such operation (counted from 1) on any file of the stores sharing the plan fails with
// `error` before it reaches the OS, as a failing disk would. Tests inject it through
// TranscriptOptions::faults and check that each failure keeps an exact prefix and says so.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>

namespace backscroll::engine {

enum class IoOp : std::uint8_t {
  write,        // write / pwrite of file contents
  sync,         // fdatasync of a file
  create,       // creating a file (a segment, a temporary file, the lease)
  remove,       // deleting a file (retention, a clear, a replaced empty segment)
  rename,       // renaming a temporary file into place
  folder_sync,  // fsync of a folder (names created, renamed or removed in it)
};

struct IoFaultPlan {
  IoOp op = IoOp::write;
  std::uint64_t nth = 0;  // 0: never
  int error = EIO;
  std::atomic<std::uint64_t> count{0};  // operations of kind `op` so far

  // Counts one operation of kind `o`; true when it is the one to fail.
  bool fails(IoOp o) noexcept { return nth != 0 && o == op && count.fetch_add(1) + 1 == nth; }
};

// `plan` may be null (the engine): then nothing fails.
inline bool injected(IoFaultPlan* plan, IoOp o) noexcept { return plan != nullptr && plan->fails(o); }

}  // namespace backscroll::engine
