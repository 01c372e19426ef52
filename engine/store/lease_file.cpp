#include "engine/store/lease_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "engine/store/crc32c.hpp"
#include "engine/store/durable_file.hpp"
#include "engine/store/little_endian.hpp"

namespace backscroll::store {
namespace {

constexpr char kMagic[8] = {'B', 'S', 'L', 'E', 'A', 'S', 'E', '1'};
constexpr std::size_t kFileBytes = LeaseFile::kSlotStride + LeaseFile::kSlotBytes;

struct Slot {
  std::uint64_t sequence = 0;
  CursorLease lease;
};

std::optional<Slot> parse_slot(const char* at) {
  if (std::memcmp(at, kMagic, sizeof kMagic) != 0) return std::nullopt;
  if (le::get32(at + 28) != crc32c(at, 28)) return std::nullopt;
  const std::uint32_t flags = le::get32(at + 24);
  if ((flags & ~LeaseFile::kOpen) != 0) return std::nullopt;
  return Slot{le::get64(at + 8), {Cursor{le::get64(at + 16)}, (flags & LeaseFile::kOpen) != 0}};
}

// The newest valid slot of an open lease file; `empty` when the file holds no byte.
struct Contents {
  bool empty = false;
  std::optional<Slot> newest;
};

Result<Contents> read_contents(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail_errno("stat " + path.string(), errno);
  if (!S_ISREG(st.st_mode)) return fail(Errc::io_error, path.string() + ": not a regular file");
  std::array<char, kFileBytes> bytes{};
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno("read " + path.string(), errno);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  Contents c;
  c.empty = got == 0;
  for (std::size_t offset : {std::size_t{0}, LeaseFile::kSlotStride}) {
    if (offset + LeaseFile::kSlotBytes > got) continue;
    const auto slot = parse_slot(bytes.data() + offset);
    if (slot && (!c.newest || slot->sequence > c.newest->sequence)) c.newest = slot;
  }
  return c;
}

}  // namespace

Resumption resume_after(Cursor held, Cursor recorded,
                        const Result<std::optional<CursorLease>>& lease) {
  Resumption r;
  r.next = max(held, recorded);
  if (!lease) {
    r.next = advance_capped(r.next, LeaseFile::kUnreadableLeaseJump);
    r.reason = "unclean stop, and the cursor lease is unreadable (" + lease.error().message + ")";
  } else if (*lease && (*lease)->open) {
    r.next = max(r.next, (*lease)->limit);
    r.reason = "unclean stop: readers may have seen bytes the transcript never got";
  } else {
    if (*lease) r.next = max(r.next, (*lease)->limit);
    r.reason = "the newest segment ends before the stream's recorded end";
  }
  if (r.next > held) r.lost = std::pair{held, r.next};
  return r;
}

Result<std::optional<CursorLease>> LeaseFile::read(const std::filesystem::path& folder) {
  const auto path = folder / std::string(kFileName);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return std::optional<CursorLease>{};
  if (fd < 0) return fail_errno("open " + path.string(), errno);
  auto contents = read_contents(fd, path);
  ::close(fd);
  if (!contents) return tl::unexpected(contents.error());
  // Created but never written: the writer grants a lease only once it is on disk.
  if (contents->empty) return std::optional<CursorLease>{};
  if (!contents->newest) return fail(Errc::data_lost, path.string() + ": no lease slot checks out");
  return std::optional<CursorLease>{contents->newest->lease};
}

Result<LeaseFile> LeaseFile::open(const std::filesystem::path& folder,
                                  std::shared_ptr<IoFaultPlan> faults) {
  const auto path = folder / std::string(kFileName);
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  bool created = false;
  if (fd < 0 && errno == ENOENT) {
    if (auto r = before_io(faults.get(), IoOp::create, path); !r) return tl::unexpected(r.error());
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    created = fd >= 0;
  }
  if (fd < 0) return fail_errno("open " + path.string(), errno);
  LeaseFile file(fd, path, 0, std::move(faults));
  if (created) {
    if (::fchmod(fd, 0600) != 0) return fail_errno("chmod " + path.string(), errno);
    if (auto r = sync_folder(folder, file.faults_.get()); !r) return tl::unexpected(r.error());
    return file;
  }
  auto contents = read_contents(fd, path);
  if (!contents) return tl::unexpected(contents.error());
  // A damaged file is overwritten slot by slot; until then it reads as damaged (conservative).
  if (contents->newest) file.sequence_ = contents->newest->sequence;
  return file;
}

LeaseFile::LeaseFile(int fd, std::filesystem::path path, std::uint64_t sequence,
                     std::shared_ptr<IoFaultPlan> faults)
    : fd_(fd), path_(std::move(path)), sequence_(sequence), faults_(std::move(faults)) {}

LeaseFile::LeaseFile(LeaseFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      sequence_(other.sequence_),
      faults_(std::move(other.faults_)) {}

LeaseFile& LeaseFile::operator=(LeaseFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    sequence_ = other.sequence_;
    faults_ = std::move(other.faults_);
  }
  return *this;
}

LeaseFile::~LeaseFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<void> LeaseFile::write(const CursorLease& lease) {
  const std::uint64_t sequence = sequence_ + 1;
  char slot[kSlotBytes] = {};
  std::memcpy(slot, kMagic, sizeof kMagic);
  le::put64(slot + 8, sequence);
  le::put64(slot + 16, value(lease.limit));
  le::put32(slot + 24, lease.open ? kOpen : 0);
  le::put32(slot + 28, crc32c(slot, 28));
  const auto offset = static_cast<off_t>((sequence % 2) * kSlotStride);
  if (auto r = before_io(faults_.get(), IoOp::write, path_); !r) return r;
  for (std::size_t done = 0; done < sizeof slot;) {
    const ssize_t n =
        ::pwrite(fd_, slot + done, sizeof slot - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail_errno("write " + path_.string(), n < 0 ? errno : ENOSPC);
    done += static_cast<std::size_t>(n);
  }
  if (auto r = before_io(faults_.get(), IoOp::sync, path_); !r) return r;
  if (::fdatasync(fd_) != 0) return fail_errno("fdatasync " + path_.string(), errno);
  after_io(faults_.get(), IoOp::sync, path_);
  sequence_ = sequence;
  return {};
}

}  // namespace backscroll::store
