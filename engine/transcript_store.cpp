#include "engine/transcript_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <optional>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/actor_record.hpp"
#include "engine/crc32c.hpp"
#include "engine/durable_file.hpp"

namespace backscroll::engine {
namespace {

// Version 2: records carry CRC-32C (version 1, never released, had CRC-32).
constexpr char kMagic[8] = {'B', 'S', 'T', 'X', '0', '0', '0', '2'};

tl::unexpected<Error> os_error(const std::string& what, int err = errno) {
  return fail(Errc::io_error, what + ": " + std::strerror(err));
}

std::uint32_t crc32(const char* data, std::size_t n) { return crc32c(data, n); }

void put64(char* at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<char>(v >> (8 * i));
}
void put32(char* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<char>(v >> (8 * i));
}
std::uint64_t get64(const char* at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(at[i]);
  return v;
}
std::uint32_t get32(const char* at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(at[i]);
  return v;
}

// Whole writes and reads (a short write to a regular file means the disk is full).
Result<void> write_all(int fd, const char* data, std::size_t n, const std::filesystem::path& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return os_error("write " + path.string());
    if (w == 0) return os_error("write " + path.string(), ENOSPC);
    data += w;
    n -= static_cast<std::size_t>(w);
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


std::string segment_name(Cursor start) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.seg", static_cast<unsigned long long>(value(start)));
  return name;
}

// A segment's records from the header on: the payload end of the intact prefix and its size in
// the file. Stops at the first record whose length or CRC does not check out.
struct Scan {
  std::uint64_t payload = 0;
  std::uint64_t file_bytes = TranscriptStore::kHeaderBytes;
};
Scan scan_records(int fd) {
  Scan s;
  std::vector<char> buf;
  for (;;) {
    char head[TranscriptStore::kRecordHeaderBytes];
    if (!read_at(fd, head, sizeof head, s.file_bytes)) return s;
    const std::uint32_t len = get32(head);
    if (len == 0 || len > TranscriptStore::kMaxRecord) return s;
    buf.resize(len);
    if (!read_at(fd, buf.data(), len, s.file_bytes + sizeof head)) return s;
    if (crc32(buf.data(), len) != get32(head + 4)) return s;
    s.payload += len;
    s.file_bytes += sizeof head + len;
  }
}

// The start cursor a segment file's name holds; nullopt for any other file.
std::optional<Cursor> segment_start(const std::string& name) {
  if (name.size() != 20 || !name.ends_with(".seg") ||
      name.find_first_not_of("0123456789abcdef") != 16)
    return std::nullopt;
  std::uint64_t v = 0;
  std::from_chars(name.data(), name.data() + 16, v, 16);
  return Cursor{v};
}

// Copies from an open segment whose first byte is `start` the bytes from `from` on, at most
// out.size() and never past `stop`. Only intact records are served: a short or failing record
// ends the copy.
std::size_t copy_records(int fd, Cursor start, Cursor from, Cursor stop, std::span<char> out) {
  std::size_t copied = 0;
  Cursor at = start;
  std::uint64_t offset = TranscriptStore::kHeaderBytes;
  std::vector<char> record;
  while (at < stop && copied < out.size()) {
    char head[TranscriptStore::kRecordHeaderBytes];
    if (!read_at(fd, head, sizeof head, offset)) break;
    const std::uint32_t len = get32(head);
    if (len == 0 || len > TranscriptStore::kMaxRecord) break;
    const Cursor next = at + len;
    if (next > from + copied) {
      record.resize(len);
      if (!read_at(fd, record.data(), len, offset + sizeof head) ||
          crc32(record.data(), len) != get32(head + 4))
        break;
      const std::uint64_t skip = value(from + copied) - value(at);
      const std::uint64_t room = value(stop) - value(from + copied);
      const std::size_t n = static_cast<std::size_t>(
          std::min<std::uint64_t>({len - skip, out.size() - copied, room}));
      std::memcpy(out.data() + copied, record.data() + skip, n);
      copied += n;
    }
    at = next;
    offset += sizeof head + len;
  }
  return copied;
}

}  // namespace

TranscriptStore::TranscriptStore(std::filesystem::path folder, TranscriptOptions options)
    : folder_(std::move(folder)), options_(options) {}

TranscriptStore::TranscriptStore(TranscriptStore&& o) noexcept
    : folder_(std::move(o.folder_)), options_(o.options_), segments_(std::move(o.segments_)),
      fd_(std::exchange(o.fd_, -1)), unsynced_(std::move(o.unsynced_)) {
  o.unsynced_.clear();
}

TranscriptStore& TranscriptStore::operator=(TranscriptStore&& o) noexcept {
  if (this != &o) {
    close_fd();
    folder_ = std::move(o.folder_);
    options_ = o.options_;
    segments_ = std::move(o.segments_);
    fd_ = std::exchange(o.fd_, -1);
    unsynced_ = std::move(o.unsynced_);
    o.unsynced_.clear();
  }
  return *this;
}

TranscriptStore::~TranscriptStore() { close_fd(); }

void TranscriptStore::close_fd() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  for (const auto& [start, fd] : unsynced_) ::close(fd);
  unsynced_.clear();
}

std::uint64_t TranscriptStore::bytes() const noexcept {
  std::uint64_t n = 0;
  for (const auto& s : segments_) n += s.end - s.start;
  return n;
}

Result<TranscriptStore> TranscriptStore::open(std::filesystem::path folder, TranscriptOptions options) {
  std::error_code ec;
  const bool created = std::filesystem::create_directories(folder, ec);
  if (ec) return fail(Errc::io_error, "create " + folder.string() + ": " + ec.message());
  if (::chmod(folder.c_str(), 0700) != 0) return os_error("chmod " + folder.string());
  // A new folder's own name must be durable before a seal can say its bytes are.
  if (created) {
    if (auto r = sync_folder(folder.parent_path()); !r) return tl::unexpected(r.error());
  }
  TranscriptStore store(folder, options);

  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    if (segment_start(entry.path().filename().string())) files.push_back(entry.path());
  }
  if (ec) return fail(Errc::io_error, "list " + folder.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());  // fixed-width hex: by start cursor

  for (std::size_t i = 0; i < files.size(); ++i) {
    const int fd = ::open(files[i].c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return os_error("open " + files[i].string());
    char head[kHeaderBytes];
    if (!read_at(fd, head, sizeof head, 0) || std::memcmp(head, kMagic, sizeof kMagic) != 0) {
      ::close(fd);
      // A header never written whole: the engine died creating the newest segment.
      if (i + 1 == files.size() && std::filesystem::file_size(files[i], ec) < kHeaderBytes) {
        std::filesystem::remove(files[i], ec);
        break;
      }
      return fail(Errc::io_error, files[i].string() + ": not a transcript segment");
    }
    TranscriptSegment seg{files[i], get64(head + 8), get64(head + 16), Cursor{get64(head + 24)},
                          Cursor{get64(head + 24)}};
    const Scan scan = scan_records(fd);
    seg.end = seg.start + scan.payload;
    if (i + 1 == files.size()) {
      // The newest segment: cut a torn tail, keep it open for appending.
      if (::ftruncate(fd, static_cast<off_t>(scan.file_bytes)) != 0 ||
          ::lseek(fd, 0, SEEK_END) < 0) {
        const int err = errno;
        ::close(fd);
        return os_error("truncate " + files[i].string(), err);
      }
      store.fd_ = fd;
    } else {
      ::close(fd);
    }
    if (!store.segments_.empty() && seg.start < store.segments_.back().end)
      return fail(Errc::io_error, files[i].string() + ": overlaps the segment before it");
    store.segments_.push_back(std::move(seg));
  }
  return store;
}

Result<void> TranscriptStore::start_segment(Cursor at, std::uint64_t epoch, std::uint64_t session) {
  if (fd_ >= 0) {
    // Not synced here (DESIGN: fsync at seal, not per chunk): its writeback starts now, and the
    // next sync() waits for it. Retention closes it if it goes first.
    ::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
    unsynced_.emplace_back(segments_.back().start, fd_);
    fd_ = -1;
  }
  if (!empty() && segments_.back().end == segments_.back().start) {
    // A segment without a record (the engine died right after creating it): replaced, since
    // the new one may start at the same cursor.
    std::error_code ec;
    std::filesystem::remove(segments_.back().path, ec);
    if (ec) return fail(Errc::io_error, "remove " + segments_.back().path.string() + ": " + ec.message());
    segments_.pop_back();
  }
  TranscriptSegment seg{folder_ / segment_name(at), epoch, session, at, at};
  const int fd = ::open(seg.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return os_error("create " + seg.path.string());
  fd_ = fd;
  if (::fchmod(fd, 0600) != 0) return os_error("chmod " + seg.path.string());
  char head[kHeaderBytes];
  std::memcpy(head, kMagic, sizeof kMagic);
  put64(head + 8, epoch);
  put64(head + 16, session);
  put64(head + 24, value(at));
  if (auto r = write_all(fd, head, sizeof head, seg.path); !r) {
    close_fd();
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
    const bool fresh = empty() || fd_ < 0 || at != end() || segments_.back().epoch != epoch ||
                       segments_.back().session != session ||
                       end() - segments_.back().start >= options_.segment_bytes;
    if (fresh) {
      if (auto r = start_segment(at, epoch, session); !r) return r;
    }
    TranscriptSegment& seg = segments_.back();
    const std::uint64_t room = options_.segment_bytes - std::min(options_.segment_bytes, end() - seg.start);
    const std::size_t n = static_cast<std::size_t>(
        std::min<std::uint64_t>({bytes.size(), kMaxRecord, std::max<std::uint64_t>(room, 1)}));
    char head[kRecordHeaderBytes];
    put32(head, static_cast<std::uint32_t>(n));
    put32(head + 4, crc32(bytes.data(), n));
    // Invariant: a record is written header first, then its bytes; one cut short by a crash
    // or a full disk fails its CRC and is cut at the next open.
    if (auto r = write_all(fd_, head, sizeof head, seg.path); !r) return r;
    if (auto r = write_all(fd_, bytes.data(), n, seg.path); !r) return r;
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
    const std::uint64_t oldest = segments_.front().end - segments_.front().start;
    if (total - oldest < options_.retain_bytes) break;
    std::error_code ec;
    std::filesystem::remove(segments_.front().path, ec);
    if (ec) return fail(Errc::io_error, "remove " + segments_.front().path.string() + ": " + ec.message());
    std::erase_if(unsynced_, [&](const auto& u) {
      if (u.first != segments_.front().start) return false;
      ::close(u.second);  // deleted: nothing of it needs to reach the disk
      return true;
    });
    total -= oldest;
    segments_.erase(segments_.begin());
  }
  return {};
}

Result<void> TranscriptStore::sync() {
  while (!unsynced_.empty()) {
    const auto [start, fd] = unsynced_.front();
    const int r = ::fdatasync(fd);
    const int err = errno;
    if (r != 0) return os_error("fdatasync segment " + segment_name(start), err);
    ::close(fd);
    unsynced_.erase(unsynced_.begin());
  }
  if (fd_ >= 0 && ::fdatasync(fd_) != 0) return os_error("fdatasync " + segments_.back().path.string());
  return sync_folder(folder_);
}

Result<void> TranscriptStore::clear() {
  close_fd();
  for (const auto& seg : segments_) {
    std::error_code ec;
    std::filesystem::remove(seg.path, ec);
    if (ec) return fail(Errc::io_error, "remove " + seg.path.string() + ": " + ec.message());
  }
  segments_.clear();
  return sync_folder(folder_);
}

Result<std::size_t> TranscriptStore::read(Cursor from, std::span<char> out) const {
  if (from > end()) return fail(Errc::cursor_in_future, "past the transcript's end", value(end()));
  if (from == end()) return std::size_t{0};
  auto seg = std::upper_bound(segments_.begin(), segments_.end(), from,
                              [](Cursor c, const TranscriptSegment& s) { return c < s.start; });
  if (seg == segments_.begin() || from >= std::prev(seg)->end)
    return fail(Errc::cursor_expired, "not in the transcript", value(oldest()));
  const TranscriptSegment& s = *std::prev(seg);
  const int fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return os_error("open " + s.path.string());
  const std::size_t copied = copy_records(fd, s.start, from, s.end, out);
  ::close(fd);
  return copied;
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
  const auto path = folder / segment_name(start);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return expired(stop);  // retention deleted it meanwhile
    return os_error("open " + path.string());
  }
  const std::size_t copied = copy_records(fd, start, from, stop, out);
  ::close(fd);
  // Nothing at `from` although bytes follow: a gap (a clear, or a cut torn tail).
  if (copied == 0 && !out.empty()) return expired(stop);
  return copied;
}

Result<void> TranscriptStore::save_record(std::string_view text) {
  return write_file_durably(folder_ / std::string(ActorRecord::kFileName), text);
}

Result<void> TranscriptStore::remove_folder(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::remove_all(folder, ec);
  if (ec) return fail(Errc::io_error, "remove " + folder.string() + ": " + ec.message());
  return {};
}

}  // namespace backscroll::engine
