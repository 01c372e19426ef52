// TranscriptStore: one actor's durable transcript (DESIGN section 6), the file layer the writer
// thread uses. A folder (0700) of segment files (0600, whatever the umask), each holding the raw
// bytes of one session from a start cursor on:
//
//   <folder>/<start cursor: 16 hex digits>.seg
//     header   "BSTX0002", epoch (u64 LE), session (u64 LE), start cursor (u64 LE)   32 bytes
//     records  length (u32 LE, 1..kMaxRecord), CRC-32C of the bytes (u32 LE), the bytes
//
// A segment's name and header map cursors to files without an index. Records make a torn tail
// detectable: open() keeps every record whose length and CRC check out and cuts the newest
// segment after the last one (a crash leaves at most the record being written). Retention keeps
// the newest `retain_bytes` in whole segments: never less, never more than that plus one
// segment. Not thread-safe: one owner (the writer thread; tests).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "shm/cursor.hpp"
#include "shm/error.hpp"

namespace backscroll::engine {

struct TranscriptOptions {
  std::uint64_t retain_bytes = 10'485'760;   // settings.yaml terminal_transcript.per_actor_bytes
  std::uint64_t segment_bytes = 1u << 20;    // a segment is closed once it holds this much
};

struct TranscriptSegment {
  std::filesystem::path path;
  std::uint64_t epoch = 0;
  std::uint64_t session = 0;
  Cursor start{0};
  Cursor end{0};  // after its last intact record
};

class TranscriptStore {
 public:
  static constexpr std::size_t kHeaderBytes = 32;
  static constexpr std::size_t kRecordHeaderBytes = 8;
  static constexpr std::uint32_t kMaxRecord = 1u << 20;

  // Opens the folder (created 0700 with its parents), reads every segment, cuts a torn tail.
  // Files that are not segments are left alone; a segment with a bad header is an error.
  static Result<TranscriptStore> open(std::filesystem::path folder, TranscriptOptions options);

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
  // Deletes every segment (the actor was cleared); the next append starts a new one.
  Result<void> clear();

  // Copies bytes from cursor `from` into `out`, up to its size and the end of `from`'s segment:
  // the count copied (0 at end()). cursor_expired (with oldest()) before the oldest retained
  // byte or inside a gap between segments; cursor_in_future past end().
  Result<std::size_t> read(Cursor from, std::span<char> out) const;
  // The same for a reader that does not own the store (the io thread, while the writer thread
  // appends): the folder is listed anew and each record's CRC checked, so a segment deleted
  // meanwhile answers cursor_expired and a record still being written is never served. Reads
  // stop at `limit` (the caller knows every byte before it was appended). cursor_expired
  // carries the oldest cursor the folder still holds, or `limit` when it holds none after `from`.
  static Result<std::size_t> read_folder(const std::filesystem::path& folder, Cursor from,
                                         Cursor limit, std::span<char> out);

  // Replaces the folder's actor record (ActorRecord::kFileName) with `text`: written to a
  // temporary file, synced, renamed over the old one; durable with the next sync().
  Result<void> save_record(std::string_view text);
  // Deletes a transcript folder with every segment and the record (the actor was deleted).
  static Result<void> remove_folder(const std::filesystem::path& folder);

  const std::vector<TranscriptSegment>& segments() const noexcept { return segments_; }
  bool empty() const noexcept { return segments_.empty(); }
  Cursor oldest() const noexcept { return empty() ? Cursor{0} : segments_.front().start; }
  Cursor end() const noexcept { return empty() ? Cursor{0} : segments_.back().end; }
  std::uint64_t bytes() const noexcept;  // retained, payload only

 private:
  TranscriptStore(std::filesystem::path folder, TranscriptOptions options);
  Result<void> start_segment(Cursor at, std::uint64_t epoch, std::uint64_t session);
  Result<void> enforce_retention();
  void close_fd() noexcept;

  std::filesystem::path folder_;
  TranscriptOptions options_;
  std::vector<TranscriptSegment> segments_;  // oldest first, contiguous within a session
  int fd_ = -1;                              // the newest segment, open for appending
  // Closed segments written since the last sync(), with their start cursors: sync() waits for
  // their writeback too, so a seal makes every byte durable, not just the newest segment's.
  std::vector<std::pair<Cursor, int>> unsynced_;
};

}  // namespace backscroll::engine
