// TranscriptStore: one actor's durable transcript (docs/transcripts.md, "Files"), the file layer
// the writer thread uses. A folder (0700) of segment files (0600, whatever the umask), each holding
// the raw bytes of one session from a start cursor on:
//
//   <folder>/<start cursor: 16 hex digits>.seg
//     header   "BSTX0003", epoch (u64), session (u64), start cursor (u64), flags (u32),
//              CRC-32C of the 44 bytes before it (u32)                                 48 bytes
//     records  length (u32, 1..kMaxRecord), check (u32), cursor of the first byte (u64), bytes
//              check = CRC-32C of (length, cursor, CRC-32C of the bytes)
//   (all little-endian). Flag kContinues: the segment starts where the one before it ended, so a
//   shortfall between the two is lost data, not a clear. Version 2 segments ("BSTX0002": a
//   32-byte header without flags and CRC, records of length and CRC only) are still read.
//
// A segment's name and header map cursors to files without an index. Every record names its
// cursor and checks itself, so damage costs only the damaged bytes: open() keeps every record
// that checks out, and after a damaged one resynchronises on the next record whose length,
// cursor and check hold (docs/transcripts.md, "Damage"). Each stretch lost is a gap with its
// cursor range and reason (damaged()); a read inside one answers data_lost. The newest
// segment's torn tail (a crash leaves at most the record being written) is cut. Retention keeps
// the newest `retain_bytes` in whole segments: never less, never more than that plus one
// segment. Not thread-safe: one owner (the writer thread; tests).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/store/io_faults.hpp"
#include "engine/store/unique_fd.hpp"
#include "shm/cursor.hpp"
#include "shm/error.hpp"

namespace backscroll::store {

// A segment is closed once it holds this much. Each segment costs the writer thread a create,
// later an unlink and the close that frees its pages: 1 MiB segments spent a fifth of its CPU
// per MB of a flood there (4 MiB: 0.94 -> 0.77 ms/MB, 12 interleaved rounds). Retention keeps
// at most one segment more than it must.
inline constexpr std::uint64_t kDefaultSegmentBytes = 4u << 20;

struct TranscriptOptions {
  std::uint64_t retain_bytes = 10'485'760;  // settings.yaml terminal_transcript.per_actor_bytes
  std::uint64_t segment_bytes = kDefaultSegmentBytes;
  std::shared_ptr<IoFaultPlan> faults = nullptr;  // tests only
};

struct TranscriptSegment {
  std::filesystem::path path;
  std::uint64_t epoch = 0;
  std::uint64_t session = 0;
  Cursor start{0};
  Cursor end{0};  // after its last intact record; for a lost segment, the end of what it covered
  bool lost = false;  // its header is damaged: none of its bytes are served
  std::uint64_t bytes() const noexcept { return lost ? 0 : end - start; }
};

// Cursors whose bytes a transcript lost, [from, to), and why.
struct TranscriptGap {
  Cursor from{0};
  Cursor to{0};
  std::string reason;
  bool operator==(const TranscriptGap&) const = default;
};

class TranscriptStore {
 public:
  static constexpr std::size_t kHeaderBytes = 48;
  static constexpr std::size_t kRecordHeaderBytes = 16;
  static constexpr std::uint32_t kMaxRecord = 1u << 20;
  static constexpr std::uint32_t kContinues = 1u << 0;  // header flag

  // Opens the folder (created 0700 with its parents), reads every segment, records what is
  // damaged (damaged()), cuts the newest segment's torn tail. Files that are not segments are
  // left alone; a segment whose header is damaged is kept, lost, until retention removes it.
  static Result<TranscriptStore> open(const std::filesystem::path& folder,
                                      TranscriptOptions options);

  TranscriptStore(TranscriptStore&&) noexcept;
  TranscriptStore& operator=(TranscriptStore&&) noexcept;
  ~TranscriptStore();

  // Appends the stream's bytes from cursor `at`. A new segment starts when the session or epoch
  // changes, when the current one is full, or when `at` is not where the transcript ends (the
  // bytes between were cleared or never seen). `at` must not be before end().
  Result<void> append(Cursor at, std::uint64_t epoch, std::uint64_t session,
                      std::span<const char> bytes);
  // Makes everything appended durable: fdatasync of every segment written since the last sync
  // (closed ones had their writeback started when they closed), fsync of the folder.
  Result<void> sync();
  // Annexes (annex_file.hpp): records about the stream that are not its bytes (the flight
  // recorder's), opaque to the store. Appends one to the newest segment's annex (before any
  // segment, to one named for `at`, the stream's cursor when the record was made). An annex is
  // deleted with the segments before the next one: once the next annex starts before the
  // oldest byte retained, and by clear(). Durable with the next sync().
  Result<void> append_annex(Cursor at, std::string_view record);
  // The intact annex records open() found, oldest annex first, each in the order appended;
  // moved out (once).
  std::vector<std::string> take_annex() noexcept { return std::move(annex_records_); }
  // Stretches of the annexes open() found damaged (the newest one's torn tail is cut, not
  // counted).
  std::size_t annex_damaged() const noexcept { return annex_damaged_; }

  // Deletes every segment and annex (the actor was cleared); the next append starts a new one.
  Result<void> clear();
  // The bytes from end() up to `to` are lost (an unclean stop skipped them): the segment that
  // starts at `to` is marked as continuing this one, so every later open() reports the stretch.
  void mark_lost_until(Cursor to) noexcept { lost_until_ = to; }

  // Copies bytes from cursor `from` into `out`, up to its size, the end of `from`'s segment and
  // the next gap: the count copied (0 at end()). cursor_expired (with oldest()) before the oldest
  // retained byte or inside a cleared stretch; data_lost (with the gap) inside damage;
  // cursor_in_future past end().
  Result<std::size_t> read(Cursor from, std::span<char> out) const;
  // The same for a reader that does not own the store (the io thread, while the writer thread
  // appends): the folder is listed anew and each record checked, so a segment deleted
  // meanwhile answers cursor_expired and damage found since open() still answers data_lost.
  // Reads stop at `limit` (the caller knows every byte before it was appended). cursor_expired
  // carries the oldest cursor the folder still holds, or `limit` when it holds none after `from`.
  static Result<std::size_t> read_folder(const std::filesystem::path& folder, Cursor from,
                                         Cursor limit, std::span<char> out);

  // The actor record's file in a transcript folder (its contents are the daemon's: ActorRecord).
  static constexpr std::string_view kRecordFileName = "actor.json";
  // Replaces the folder's actor record (kRecordFileName) with `text`: written to a temporary
  // file, synced, renamed over the old one; durable with the next sync().
  Result<void> save_record(std::string_view text);
  // Deletes a transcript folder with every segment and the record (the actor was deleted).
  static Result<void> remove_folder(const std::filesystem::path& folder);

  const std::filesystem::path& folder() const noexcept { return folder_; }
  const TranscriptOptions& options() const noexcept { return options_; }
  const std::vector<TranscriptSegment>& segments() const noexcept { return segments_; }
  // What open() found lost, oldest first.
  const std::vector<TranscriptGap>& damaged() const noexcept { return damaged_; }
  bool empty() const noexcept { return segments_.empty(); }
  Cursor oldest() const noexcept { return empty() ? Cursor{0} : segments_.front().start; }
  Cursor end() const noexcept { return empty() ? Cursor{0} : segments_.back().end; }
  std::uint64_t bytes() const noexcept;  // retained, payload only

 private:
  TranscriptStore(std::filesystem::path folder, TranscriptOptions options);
  Result<void> start_segment(Cursor at, std::uint64_t epoch, std::uint64_t session);
  Result<void> enforce_retention();
  Result<void> drop_old_annexes();
  Result<void> read_annexes();
  // Keeps a file closed for appending until sync() has it written back. Its writeback is left
  // to the kernel until then: during a flood, retention deletes most segments before their
  // pages ever reach the disk.
  void set_aside(UniqueFd fd, std::filesystem::path path);
  void close_files() noexcept;
  // write_all, fdatasync and remove through the fault plan (a write of several pieces is one
  // operation).
  Result<void> write(int fd, const char* data, std::size_t n, const std::filesystem::path& path);
  Result<void> write(int fd, std::span<iovec> pieces, const std::filesystem::path& path);
  Result<void> sync_fd(int fd, const std::filesystem::path& path);
  Result<void> remove_file(const std::filesystem::path& path);
  IoFaultPlan* faults() const noexcept { return options_.faults.get(); }

  std::filesystem::path folder_;
  TranscriptOptions options_;
  std::vector<TranscriptSegment> segments_;  // oldest first, contiguous within a session
  std::vector<TranscriptGap> damaged_;
  UniqueFd fd_;  // the newest segment, open for appending
  // Files written since the last sync() and closed since: sync() waits for their writeback
  // too, so a seal makes every byte durable, not just the newest segment's.
  std::vector<std::pair<std::filesystem::path, UniqueFd>> unsynced_;
  std::vector<Cursor> annexes_;  // the annex files' start cursors, oldest first
  UniqueFd annex_fd_;            // the newest annex, open for appending once written to
  Cursor annex_start_{0};
  std::vector<std::string> annex_records_;  // what open() found, until take_annex()
  std::size_t annex_damaged_ = 0;
  Cursor lost_until_{0};  // mark_lost_until()
};

}  // namespace backscroll::store
