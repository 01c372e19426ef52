#include "engine/store/transcript_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "engine/store/annex_file.hpp"
#include "engine/store/crc32c.hpp"
#include "engine/store/cursor_file_name.hpp"
#include "engine/store/durable_file.hpp"
#include "engine/store/little_endian.hpp"

namespace backscroll::store {
namespace {

constexpr char kMagicV2[8] = {'B', 'S', 'T', 'X', '0', '0', '0', '2'};  // still read
constexpr char kMagicV3[8] = {'B', 'S', 'T', 'X', '0', '0', '0', '3'};
constexpr std::size_t kHeaderBytesV2 = 32;
constexpr std::size_t kRecordHeaderBytesV2 = 8;
// A resynchronisation reads at most this much of a damaged segment (a segment holds about
// segment_bytes; a file grown past this by something else loses what lies beyond).
constexpr std::uint64_t kMaxResyncBytes = 64u << 20;

using le::get32;
using le::get64;
using le::put32;
using le::put64;

// A version 3 record's check: binds its length and cursor to its bytes.
std::uint32_t record_check(std::uint32_t length, Cursor at, const char* bytes) {
  char fields[16];
  put32(fields, length);
  put64(fields + 4, value(at));
  put32(fields + 12, crc32c(bytes, length));
  return crc32c(fields, sizeof fields);
}

// Whole writes and reads (a short write to a regular file means the disk is full).
// The pieces in order, in as few writev calls as the kernel allows (one, unless the disk fills).
Result<void> write_all(int fd, std::span<iovec> pieces, const std::filesystem::path& path) {
  while (!pieces.empty()) {
    const ssize_t w = ::writev(fd, pieces.data(), static_cast<int>(pieces.size()));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return fail_io("write " + path.string(), errno);
    if (w == 0) return fail_io("write " + path.string(), ENOSPC);
    auto left = static_cast<std::size_t>(w);
    while (!pieces.empty() && left >= pieces.front().iov_len) {
      left -= pieces.front().iov_len;
      pieces = pieces.subspan(1);
    }
    if (left > 0) {
      pieces.front().iov_base = static_cast<char*>(pieces.front().iov_base) + left;
      pieces.front().iov_len -= left;
    }
  }
  return {};
}
bool read_at(int fd, char* out, std::size_t n, std::uint64_t offset) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    out += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
  return true;
}

std::string segment_name(Cursor start) { return cursor_file_name(start, ".seg"); }

std::optional<Cursor> segment_start(const std::string& name) {
  return cursor_of_file_name(name, ".seg");
}

// One segment file, open for reading, with its header checked.
struct SegmentFile {
  int fd = -1;
  std::uint64_t size = 0;
  Cursor named_start{0};  // from the file name
  bool header_ok = false;
  int version = 3;
  std::uint64_t epoch = 0;
  std::uint64_t session = 0;
  std::uint32_t flags = 0;

  SegmentFile() = default;
  SegmentFile(const SegmentFile&) = delete;
  SegmentFile& operator=(const SegmentFile&) = delete;
  ~SegmentFile() {
    if (fd >= 0) ::close(fd);
  }
  std::uint64_t header_bytes() const {
    return version == 2 ? kHeaderBytesV2 : TranscriptStore::kHeaderBytes;
  }
  std::uint64_t record_header_bytes() const {
    return version == 2 ? kRecordHeaderBytesV2 : TranscriptStore::kRecordHeaderBytes;
  }
  bool continues() const { return header_ok && (flags & TranscriptStore::kContinues) != 0; }
};

// Opens `path` (a segment named for `start`) and reads its header: 0, or the errno of the OS
// call that failed (ENOENT: retention deleted it). A header that does not check out is no
// error: it leaves header_ok false.
int open_segment_file(const std::filesystem::path& path, Cursor start, int flags, SegmentFile& f) {
  f.fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (f.fd < 0) return errno;
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return errno;
  f.size = static_cast<std::uint64_t>(st.st_size);
  f.named_start = start;
  char head[TranscriptStore::kHeaderBytes];
  if (f.size >= TranscriptStore::kHeaderBytes && read_at(f.fd, head, sizeof head, 0) &&
      std::memcmp(head, kMagicV3, 8) == 0) {
    f.version = 3;
    f.header_ok = get32(head + 44) == crc32c(head, 44) && get64(head + 24) == value(start);
    f.flags = get32(head + 40);
  } else if (f.size >= kHeaderBytesV2 && read_at(f.fd, head, kHeaderBytesV2, 0) &&
             std::memcmp(head, kMagicV2, 8) == 0) {
    f.version = 2;
    f.header_ok = get64(head + 24) == value(start);
  }
  if (f.header_ok) {
    f.epoch = get64(head + 8);
    f.session = get64(head + 16);
  }
  return 0;
}

// One record header read at `offset`, checked against what it must be: a length in range and,
// in version 3, the cursor `at` the walk expects. The payload is not checked here.
struct RecordHead {
  std::uint32_t length = 0;
  std::uint32_t check = 0;
};
std::optional<RecordHead> record_head(const SegmentFile& f, std::uint64_t offset, Cursor at) {
  char head[TranscriptStore::kRecordHeaderBytes];
  const std::uint64_t n = f.record_header_bytes();
  if (offset + n > f.size || !read_at(f.fd, head, n, offset)) return std::nullopt;
  RecordHead r{get32(head), get32(head + 4)};
  if (r.length == 0 || r.length > TranscriptStore::kMaxRecord || offset + n + r.length > f.size)
    return std::nullopt;
  if (f.version == 3 && get64(head + 8) != value(at)) return std::nullopt;
  return r;
}

// Whether the record's bytes (read into `bytes`) match its check.
bool record_intact(const SegmentFile& f, const RecordHead& r, Cursor at, const char* bytes) {
  return f.version == 2 ? crc32c(bytes, r.length) == r.check
                        : record_check(r.length, at, bytes) == r.check;
}

// After damage at `offset`, where the record of cursor `at` was expected: the first later
// record that checks out and whose cursor it can be (at or after `at`, and no further past it
// than the file bytes skipped, since every byte takes at least one). Version 2 records carry no
// cursor: nothing after damage can be placed, so there is none.
struct Resync {
  std::uint64_t offset = 0;
  Cursor at{0};
};
std::optional<Resync> resync(const SegmentFile& f, std::uint64_t offset, Cursor at) {
  if (f.version != 3 || offset + 1 >= f.size) return std::nullopt;
  const std::uint64_t first = offset + 1;
  std::vector<char> rest(static_cast<std::size_t>(std::min(f.size - first, kMaxResyncBytes)));
  if (!read_at(f.fd, rest.data(), rest.size(), first)) return std::nullopt;
  constexpr std::size_t kHead = TranscriptStore::kRecordHeaderBytes;
  for (std::size_t o = 0; o + kHead < rest.size(); ++o) {
    const char* h = rest.data() + o;
    const std::uint32_t length = get32(h);
    if (length == 0 || length > TranscriptStore::kMaxRecord || o + kHead + length > rest.size())
      continue;
    const Cursor c{get64(h + 8)};
    if (c < at || c - at > first + o - offset) continue;
    if (record_check(length, c, h + kHead) != get32(h + 4)) continue;
    return Resync{first + o, c};
  }
  return std::nullopt;
}

// A whole segment, every record checked: where its intact bytes end and what it lost inside.
struct SegmentScan {
  Cursor end{0};                 // after the last intact record
  std::uint64_t file_bytes = 0;  // the offset right after it
  bool damaged_tail = false;     // bytes after it that are no record (a torn write, damage)
  std::vector<TranscriptGap> gaps;
};
SegmentScan scan_segment(const SegmentFile& f) {
  SegmentScan s{f.named_start, f.header_bytes(), false, {}};
  std::vector<char> bytes;
  std::uint64_t offset = f.header_bytes();
  Cursor at = f.named_start;
  while (offset < f.size) {
    if (auto r = record_head(f, offset, at)) {
      bytes.resize(r->length);
      if (read_at(f.fd, bytes.data(), r->length, offset + f.record_header_bytes()) &&
          record_intact(f, *r, at, bytes.data())) {
        offset += f.record_header_bytes() + r->length;
        at = at + r->length;
        s.end = at;
        s.file_bytes = offset;
        continue;
      }
    }
    const auto next = resync(f, offset, at);
    if (!next) {
      s.damaged_tail = true;
      break;
    }
    // A record found at its own cursor after damage (a block copied over the one it replaced)
    // loses nothing.
    if (next->at > at) s.gaps.push_back({at, next->at, "damaged record"});
    offset = next->offset;
    at = next->at;
  }
  return s;
}

// Copies from a segment the bytes from `from` on, at most out.size() and never at or past
// `stop`, stopping at a gap. `walked_to` is the cursor the walk ended at (the segment's end
// when it read every record before `stop`).
struct Copied {
  std::size_t n = 0;
  Cursor walked_to{0};
};
Result<Copied> copy_records(const SegmentFile& f, Cursor from, Cursor stop, std::span<char> out) {
  Copied c{0, f.named_start};
  std::uint64_t offset = f.header_bytes();
  std::vector<char> record;
  while (c.walked_to < stop && c.n < out.size()) {
    Cursor& at = c.walked_to;
    if (offset >= f.size) break;
    const Cursor want = from + c.n;
    if (auto r = record_head(f, offset, at)) {
      const Cursor next = at + r->length;
      if (next <= want) {  // before `from`: skipped on its header alone
        at = next;
        offset += f.record_header_bytes() + r->length;
        continue;
      }
      record.resize(r->length);
      if (read_at(f.fd, record.data(), r->length, offset + f.record_header_bytes()) &&
          record_intact(f, *r, at, record.data())) {
        const std::uint64_t skip = value(want) - value(at);
        const std::uint64_t room = value(stop) - value(want);
        const std::size_t n = static_cast<std::size_t>(
            std::min<std::uint64_t>({r->length - skip, out.size() - c.n, room}));
        std::memcpy(out.data() + c.n, record.data() + skip, n);
        c.n += n;
        at = next;
        offset += f.record_header_bytes() + r->length;
        continue;
      }
    }
    // Damage where the record of `at` should be: the bytes up to the next record that checks
    // out are lost (all of the segment's rest before `stop` when none does).
    const auto next = resync(f, offset, at);
    const Cursor gap_end = next ? min(next->at, stop) : stop;
    if (want < gap_end) {
      if (c.n > 0) break;  // what came before the gap first; the next read meets the gap
      return fail_data_lost(value(at), value(gap_end), "damaged record");
    }
    if (!next) break;
    offset = next->offset;  // `want` lies past the gap
    at = next->at;
  }
  return c;
}

}  // namespace

TranscriptStore::TranscriptStore(std::filesystem::path folder, TranscriptOptions options)
    : folder_(std::move(folder)), options_(std::move(options)) {}

TranscriptStore::TranscriptStore(TranscriptStore&&) noexcept = default;
TranscriptStore& TranscriptStore::operator=(TranscriptStore&&) noexcept = default;
TranscriptStore::~TranscriptStore() = default;

void TranscriptStore::close_files() noexcept {
  fd_.reset();
  annex_fd_.reset();
  unsynced_.clear();
}

std::uint64_t TranscriptStore::bytes() const noexcept {
  std::uint64_t n = 0;
  for (const auto& s : segments_) n += s.bytes();
  return n;
}

Result<TranscriptStore> TranscriptStore::open(const std::filesystem::path& folder,
                                              TranscriptOptions options) {
  std::error_code ec;
  const bool created = std::filesystem::create_directories(folder, ec);
  if (ec) return fail(Errc::io_error, "create " + folder.string() + ": " + ec.message());
  if (::chmod(folder.c_str(), 0700) != 0) return fail_io("chmod " + folder.string(), errno);
  // A new folder's own name must be durable before a seal can say its bytes are.
  if (created) {
    if (auto r = sync_folder(folder.parent_path()); !r) return tl::unexpected(r.error());
  }
  TranscriptStore store(folder, std::move(options));

  std::vector<std::pair<Cursor, std::filesystem::path>> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (auto start = segment_start(name)) files.emplace_back(*start, entry.path());
    if (auto start = annex_start(name)) store.annexes_.push_back(*start);
  }
  if (ec) return fail(Errc::io_error, "list " + folder.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::sort(store.annexes_.begin(), store.annexes_.end());
  if (auto r = store.read_annexes(); !r) return tl::unexpected(r.error());

  bool previous_damaged_tail = false;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& [start, path] = files[i];
    const bool newest = i + 1 == files.size();
    SegmentFile f;
    if (const int err = open_segment_file(path, start, O_RDWR, f)) {
      return fail_io("open " + path.string(), err);
    }
    if (!f.header_ok && newest && f.size < kHeaderBytesV2) {
      // A header never written whole: the engine died creating the newest segment.
      ::close(std::exchange(f.fd, -1));
      std::filesystem::remove(path, ec);
      break;
    }
    TranscriptSegment seg{path, f.epoch, f.session, start, start};
    // Whatever lies between the segment before and this one is lost when this one continues
    // it, or when that one ended in damage.
    if (!store.segments_.empty()) {
      const Cursor before = store.segments_.back().end;
      if (start < before) {
        return fail(Errc::io_error, path.string() + ": overlaps the segment before it");
      }
      if (start > before && (f.continues() || previous_damaged_tail)) {
        store.damaged_.push_back({before, start,
                                  previous_damaged_tail
                                      ? "damaged record"
                                      : "missing bytes (a segment missing or cut short)"});
      }
    }
    previous_damaged_tail = false;
    if (!f.header_ok) {
      // Lost: none of its bytes are trusted. It covers up to the next segment, or as many
      // cursors as its bytes could have held.
      seg.lost = true;
      seg.end = newest ? start + (f.size - std::min<std::uint64_t>(f.size, kHeaderBytesV2))
                       : min(files[i + 1].first, start + f.size);
      if (seg.end > start) store.damaged_.push_back({start, seg.end, "damaged segment header"});
      store.segments_.push_back(std::move(seg));
      continue;
    }
    const SegmentScan scan = scan_segment(f);
    seg.end = scan.end;
    store.damaged_.insert(store.damaged_.end(), scan.gaps.begin(), scan.gaps.end());
    previous_damaged_tail = scan.damaged_tail;
    if (newest && f.version == 3) {
      // The newest segment: cut a torn tail, keep it open for appending.
      if (::ftruncate(f.fd, static_cast<off_t>(scan.file_bytes)) != 0 ||
          ::lseek(f.fd, 0, SEEK_END) < 0) {
        return fail_io("truncate " + path.string(), errno);
      }
      store.fd_.reset(std::exchange(f.fd, -1));
    }
    // A newest version 2 segment is left as it is: appends start a version 3 one after it.
    store.segments_.push_back(std::move(seg));
  }
  if (auto r = store.drop_old_annexes(); !r) return tl::unexpected(r.error());
  return store;
}

Result<void> TranscriptStore::read_annexes() {
  for (const Cursor start : annexes_) {
    // An annex that cannot be read costs its records, never the transcript: counted as damage.
    const std::filesystem::path path = folder_ / annex_name(start);
    const UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
      ++annex_damaged_;
      continue;
    }
    std::string bytes(static_cast<std::size_t>(std::min<std::uint64_t>(
                          static_cast<std::uint64_t>(st.st_size), kMaxAnnexFileBytes)),
                      '\0');
    if (!read_at(fd.get(), bytes.data(), bytes.size(), 0)) {
      ++annex_damaged_;
      continue;
    }
    AnnexScan scan = scan_annex(bytes);
    const bool newest = start == annexes_.back();
    annex_damaged_ += scan.damaged + (scan.torn_tail && !newest ? 1 : 0);
    // The newest annex's torn tail (a crash mid-append) is cut, as a segment's is.
    if (newest && scan.torn_tail &&
        ::ftruncate(fd.get(), static_cast<off_t>(scan.intact_bytes)) != 0) {
      return fail_io("truncate " + path.string(), errno);
    }
    for (std::string& r : scan.records) annex_records_.push_back(std::move(r));
  }
  return {};
}

Result<void> TranscriptStore::write(int fd, const char* data, std::size_t n,
                                    const std::filesystem::path& path) {
  iovec piece{const_cast<char*>(data), n};
  return write(fd, std::span(&piece, 1), path);
}

Result<void> TranscriptStore::write(int fd, std::span<iovec> pieces,
                                    const std::filesystem::path& path) {
  if (auto r = before_io(faults(), IoOp::write, path); !r) return r;
  return write_all(fd, pieces, path);
}

Result<void> TranscriptStore::sync_fd(int fd, const std::filesystem::path& path) {
  if (auto r = before_io(faults(), IoOp::sync, path); !r) return r;
  if (::fdatasync(fd) != 0) return fail_io("fdatasync " + path.string(), errno);
  after_io(faults(), IoOp::sync, path);
  return {};
}

Result<void> TranscriptStore::start_segment(Cursor at, std::uint64_t epoch, std::uint64_t session) {
  // Not synced here (docs/transcripts.md, "Files": fsync at seal, not per chunk): its writeback
  // starts now, and the next sync() waits for it. Retention closes it if it goes first.
  if (fd_) set_aside(std::move(fd_), segments_.back().path);
  const bool continues =
      !empty() && (at == segments_.back().end || (at == lost_until_ && at > segments_.back().end));
  if (!empty() && segments_.back().end == segments_.back().start && !segments_.back().lost) {
    // A segment without a record (the engine died right after creating it): replaced, since
    // the new one may start at the same cursor.
    if (auto r = remove_file(segments_.back().path); !r) return r;
    segments_.pop_back();
  }
  TranscriptSegment seg{folder_ / segment_name(at), epoch, session, at, at};
  if (auto r = before_io(faults(), IoOp::create, seg.path); !r) return r;
  const int fd = ::open(seg.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return fail_io("create " + seg.path.string(), errno);
  fd_.reset(fd);
  if (::fchmod(fd, 0600) != 0) return fail_io("chmod " + seg.path.string(), errno);
  char head[kHeaderBytes];
  std::memcpy(head, kMagicV3, sizeof kMagicV3);
  put64(head + 8, epoch);
  put64(head + 16, session);
  put64(head + 24, value(at));
  put32(head + 40, continues ? kContinues : 0);
  put32(head + 44, crc32c(head, 44));
  if (auto r = write(fd, head, sizeof head, seg.path); !r) {
    fd_.reset();
    std::error_code ec;
    std::filesystem::remove(seg.path, ec);  // no half header left behind
    return r;
  }
  segments_.push_back(std::move(seg));
  return {};
}

Result<void> TranscriptStore::append(Cursor at, std::uint64_t epoch, std::uint64_t session,
                                     std::span<const char> bytes) {
  if (at < end()) return fail(Errc::bad_request, "append before the transcript's end");
  while (!bytes.empty()) {
    const bool fresh = empty() || !fd_ || at != end() || segments_.back().epoch != epoch ||
                       segments_.back().session != session ||
                       end() - segments_.back().start >= options_.segment_bytes;
    if (fresh) {
      if (auto r = start_segment(at, epoch, session); !r) return r;
    }
    TranscriptSegment& seg = segments_.back();
    const std::uint64_t room =
        options_.segment_bytes - std::min(options_.segment_bytes, end() - seg.start);
    const std::size_t n = static_cast<std::size_t>(
        std::min<std::uint64_t>({bytes.size(), kMaxRecord, std::max<std::uint64_t>(room, 1)}));
    char head[kRecordHeaderBytes];
    put32(head, static_cast<std::uint32_t>(n));
    put32(head + 4, record_check(static_cast<std::uint32_t>(n), at, bytes.data()));
    put64(head + 8, value(at));
    // Invariant: a record is written header first, then its bytes (one writev); one cut short
    // by a crash or a full disk fails its check and is cut at the next open.
    std::array<iovec, 2> record{iovec{head, sizeof head},
                                iovec{const_cast<char*>(bytes.data()), n}};
    if (auto r = write(fd_.get(), record, seg.path); !r) return r;
    seg.end = seg.end + n;
    at = at + n;
    bytes = bytes.subspan(n);
  }
  return enforce_retention();
}

Result<void> TranscriptStore::enforce_retention() {
  // Whole segments, oldest first, while the rest still holds retain_bytes: never less than
  // that, never more than that plus the oldest segment.
  std::uint64_t total = bytes();
  while (segments_.size() > 1) {
    const std::uint64_t oldest = segments_.front().bytes();
    if (total - oldest < options_.retain_bytes) break;
    if (auto r = remove_file(segments_.front().path); !r) return r;
    total -= oldest;
    segments_.erase(segments_.begin());
  }
  return drop_old_annexes();
}

Result<void> TranscriptStore::sync() {
  while (!unsynced_.empty()) {
    if (auto r = sync_fd(unsynced_.front().second.get(), unsynced_.front().first); !r) return r;
    unsynced_.erase(unsynced_.begin());
  }
  if (fd_) {
    if (auto r = sync_fd(fd_.get(), segments_.back().path); !r) return r;
  }
  if (annex_fd_) {
    if (auto r = sync_fd(annex_fd_.get(), folder_ / annex_name(annex_start_)); !r) return r;
  }
  return sync_folder(folder_, faults());
}

Result<void> TranscriptStore::clear() {
  close_files();
  while (!segments_.empty()) {
    if (auto r = remove_file(segments_.back().path); !r) return r;
    segments_.pop_back();
  }
  while (!annexes_.empty()) {
    if (auto r = remove_file(folder_ / annex_name(annexes_.back())); !r) return r;
    annexes_.pop_back();
  }
  return sync_folder(folder_, faults());
}

void TranscriptStore::set_aside(UniqueFd fd, std::filesystem::path path) {
  if (!fd) return;
  unsynced_.emplace_back(std::move(path), std::move(fd));
}

Result<void> TranscriptStore::append_annex(Cursor at, std::string_view record) {
  if (record.empty() || record.size() > kMaxAnnexRecord) {
    return fail(Errc::bad_request,
                "an annex record must hold 1.." + std::to_string(kMaxAnnexRecord) + " bytes");
  }
  // Before any segment: the annex open already, or one named for `at`.
  const Cursor start = !empty() ? segments_.back().start : annex_fd_ ? annex_start_ : at;
  if (!annex_fd_ || start > annex_start_) {
    // The stream moved on to a newer segment: its annex from here on.
    set_aside(std::move(annex_fd_), folder_ / annex_name(annex_start_));
    const std::filesystem::path path = folder_ / annex_name(start);
    if (auto r = before_io(faults(), IoOp::create, path); !r) return r;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return fail_io("create " + path.string(), errno);
    annex_fd_.reset(fd);
    annex_start_ = start;
    struct stat st {};
    if (::fchmod(fd, 0600) != 0 || ::fstat(fd, &st) != 0)
      return fail_io("stat " + path.string(), errno);
    if (st.st_size == 0) {
      if (auto r = write(fd, annex_header().data(), annex_header().size(), path); !r) return r;
    }
    if (annexes_.empty() || annexes_.back() < start) annexes_.push_back(start);
  }
  const std::string framed = frame_annex_record(record);
  return write(annex_fd_.get(), framed.data(), framed.size(), folder_ / annex_name(annex_start_));
}

Result<void> TranscriptStore::drop_old_annexes() {
  // An annex holds records about cursors up to where the next one starts: it goes once that
  // is older than every byte retained.
  while (annexes_.size() > 1 && !empty() && annexes_[1] < oldest()) {
    if (annexes_.front() == annex_start_) annex_fd_.reset();
    if (auto r = remove_file(folder_ / annex_name(annexes_.front())); !r) return r;
    annexes_.erase(annexes_.begin());
  }
  return {};
}

Result<std::size_t> TranscriptStore::read(Cursor from, std::span<char> out) const {
  if (from > end()) return fail(Errc::cursor_in_future, "past the transcript's end", value(end()));
  return read_folder(folder_, from, end(), out);
}

Result<std::size_t> TranscriptStore::read_folder(const std::filesystem::path& folder, Cursor from,
                                                 Cursor limit, std::span<char> out) {
  if (from >= limit) return std::size_t{0};
  std::error_code ec;
  std::vector<Cursor> starts;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    if (auto start = segment_start(entry.path().filename().string())) starts.push_back(*start);
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return fail(Errc::io_error, "list " + folder.string() + ": " + ec.message());
  std::sort(starts.begin(), starts.end());
  const auto next = std::upper_bound(starts.begin(), starts.end(), from);
  // The oldest cursor still held after `from`'s loss: the next segment, else `limit`.
  const auto expired = [&](Cursor oldest) {
    return fail(Errc::cursor_expired, "no longer in the transcript", value(min(oldest, limit)));
  };
  if (next == starts.begin()) return expired(starts.empty() ? limit : starts.front());
  const Cursor start = *std::prev(next);
  const Cursor stop = next == starts.end() ? limit : min(*next, limit);
  SegmentFile f;
  const auto path = folder / segment_name(start);
  if (const int err = open_segment_file(path, start, O_RDONLY, f)) {
    if (err == ENOENT) return expired(stop);  // retention deleted it meanwhile
    return fail_io("open " + path.string(), err);
  }
  if (!f.header_ok) return fail_data_lost(value(start), value(stop), "damaged segment header");
  auto copied = copy_records(f, from, stop, out);
  if (!copied) return tl::unexpected(copied.error());
  if (copied->n > 0 || out.empty()) return copied->n;
  // Nothing at `from` although bytes follow: past the segment's last record. Lost when the
  // next segment continues this one; otherwise a clear (or a cut torn tail) skipped them.
  if (next != starts.end() && *next <= limit) {
    SegmentFile after;
    if (open_segment_file(folder / segment_name(*next), *next, O_RDONLY, after) == 0 &&
        after.continues()) {
      return fail_data_lost(value(copied->walked_to), value(*next),
                            "missing bytes (a segment missing or cut short)");
    }
  }
  return expired(stop);
}

Result<void> TranscriptStore::save_record(std::string_view text) {
  return write_file_durably(folder_ / std::string(kRecordFileName), text, faults());
}

Result<void> TranscriptStore::remove_file(const std::filesystem::path& path) {
  if (auto r = before_io(faults(), IoOp::remove, path); !r) return r;
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (ec) return fail(Errc::io_error, "remove " + path.string() + ": " + ec.message());
  // Deleted: nothing of it needs to reach the disk.
  std::erase_if(unsynced_, [&](const auto& u) { return u.first == path; });
  return {};
}

Result<void> TranscriptStore::remove_folder(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::remove_all(folder, ec);
  if (ec) return fail(Errc::io_error, "remove " + folder.string() + ": " + ec.message());
  return {};
}

}  // namespace backscroll::store
