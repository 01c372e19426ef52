// LeaseFile: an actor's durable cursor lease, `<transcript folder>/lease` (docs/transcripts.md,
// "Cursors after a crash"). While a session runs, the io thread commits bytes only below a limit
// the writer thread has made durable here first; so after any unclean stop (SIGKILL, a crash, a
// power loss) the restarted engine knows a cursor past every byte the dead engine can have
// published to a reader, even bytes its transcript never got.
//
// Two 32-byte slots, 4 KiB apart (a torn write never reaches the other one), each:
//   "BSLEASE1", sequence (u64), limit (u64), flags (u32: kOpen), CRC-32C of the 28 bytes before
// (little-endian). A write goes over the older slot and is synced before it counts; the valid
// slot with the higher sequence is the lease.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "engine/store/transcript_store.hpp"
#include "shm/cursor.hpp"
#include "shm/error.hpp"

namespace backscroll::store {

struct CursorLease {
  // open: a session runs, and no byte at or past `limit` was ever committed to the ring (bytes
  // below it may have reached readers without reaching the transcript).
  // closed: the stream stopped exactly at `limit` (a sealed session) and nothing follows it.
  Cursor limit{0};
  bool open = false;
  bool operator==(const CursorLease&) const = default;
};

// Where a restored actor's cursors continue, and the stretch an unclean stop cost.
struct Resumption {
  Cursor next{0};
  std::optional<std::pair<Cursor, Cursor>> lost;  // [from, to): readers may have seen these
  std::string reason;                             // why they are lost
};

// `held`: the transcript's end (or a clear's floor, when later); `recorded`: the stream's end in
// the actor record; `lease`: LeaseFile::read's answer. An open lease continues at its limit;
// an unreadable one far past any lease an engine grants (kUnreadableLeaseJump). Everything from
// `held` to the next cursor is lost.
Resumption resume_after(Cursor held, Cursor recorded,
                        const Result<std::optional<CursorLease>>& lease);

class LeaseFile {
 public:
  static constexpr std::string_view kFileName = "lease";
  static constexpr std::size_t kSlotBytes = 32;
  static constexpr std::size_t kSlotStride = 4096;
  static constexpr std::uint32_t kOpen = 1u << 0;
  // Leases reach at most twice the largest ring (2 x 50 MB) past the committed cursor.
  static constexpr std::uint64_t kUnreadableLeaseJump = 1ull << 40;

  // The folder's lease: nullopt when it has none (never leased: nothing was published past the
  // transcript); data_lost when the file exists but no slot checks out; io_error when unreadable.
  static Result<std::optional<CursorLease>> read(const std::filesystem::path& folder);

  // Opens the folder's lease file for writing, creating it (0600, never through a symlink) and
  // syncing the folder so its name is durable before the first lease is.
  static Result<LeaseFile> open(const std::filesystem::path& folder,
                                std::shared_ptr<IoFaultPlan> faults = nullptr);

  LeaseFile(LeaseFile&&) noexcept;
  LeaseFile& operator=(LeaseFile&&) noexcept;
  ~LeaseFile();

  // Durable when it returns: written over the older slot, fdatasync'ed. On an error the file
  // still holds the lease before this one.
  Result<void> write(const CursorLease& lease);

 private:
  LeaseFile(int fd, std::filesystem::path path, std::uint64_t sequence,
            std::shared_ptr<IoFaultPlan> faults);

  int fd_ = -1;
  std::filesystem::path path_;
  std::uint64_t sequence_ = 0;  // of the newest valid slot
  std::shared_ptr<IoFaultPlan> faults_;
};

}  // namespace backscroll::store
