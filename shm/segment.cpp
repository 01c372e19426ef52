#include "shm/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>

namespace backscroll::shm {
namespace {

constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

int seals_for(Sealing sealing) noexcept {
  return sealing == Sealing::size_and_writes ? kSizeSeals | F_SEAL_FUTURE_WRITE : kSizeSeals;
}

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
  int release() noexcept { return std::exchange(fd, -1); }
};

constexpr std::size_t kSmallPage = 4096;  // the size kLargePageBytes is the large page of

// Maps `bytes` of `fd` shared. A segment that spans a large page is placed at an address aligned
// to one, so that the kernel can map a large page of the file with one page-table entry
// wherever the file has one (RingWriter makes them for a flooding ring); a placement of the
// kernel's own choosing is aligned only when the machine-wide setting gives shared memory
// large pages, which Debian leaves off. The alignment comes from mapping the file inside a
// larger reservation, then giving the reservation's ends back. Where pages are not 4 KiB
// (some arm64 kernels), the large page is another size: no alignment then.
void* map_shared(int fd, std::size_t bytes, int protection) noexcept {
  static const bool small_pages = ::sysconf(_SC_PAGESIZE) == static_cast<long>(kSmallPage);
  if (bytes < kLargePageBytes || !small_pages) {
    return ::mmap(nullptr, bytes, protection, MAP_SHARED, fd, 0);
  }
  const std::size_t room_bytes = bytes + kLargePageBytes;
  void* room =
      ::mmap(nullptr, room_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (room == MAP_FAILED) return MAP_FAILED;
  const auto room_start = reinterpret_cast<std::uintptr_t>(room);
  const std::uintptr_t room_end = room_start + room_bytes;
  const std::uintptr_t start = (room_start + kLargePageBytes - 1) & ~(kLargePageBytes - 1);
  const std::uintptr_t end = start + (bytes + kSmallPage - 1) / kSmallPage * kSmallPage;
  const auto give_back = [](std::uintptr_t from, std::uintptr_t to) {
    if (to > from) ::munmap(reinterpret_cast<void*>(from), to - from);
  };
  void* mapped =
      ::mmap(reinterpret_cast<void*>(start), bytes, protection, MAP_SHARED | MAP_FIXED, fd, 0);
  const int err = errno;
  // The ends of the reservation, whatever happened. A failed MAP_FIXED may have unmapped part
  // of [start, end) already, where another thread may have mapped since: that range is left
  // as it is (at worst some address space without memory stays reserved).
  give_back(room_start, start);
  give_back(end, room_end);
  errno = err;
  return mapped;
}

}  // namespace

Segment::Segment(Segment&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Segment::~Segment() { reset(); }

void Segment::close_descriptor() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Segment::reset() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_);
  close_descriptor();
  data_ = nullptr;
  size_ = 0;
}

Result<Segment> Segment::create(std::string_view label, std::size_t bytes, Sealing sealing) {
  const std::string name(label);
  if (bytes == 0) return fail(Errc::bad_segment, "segment " + name + " of 0 bytes");
  FdCloser fd{::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING)};
  if (fd.fd < 0) return fail_errno("create segment " + name, errno);
  if (::ftruncate(fd.fd, static_cast<off_t>(bytes)) != 0) {
    return fail_errno("size segment " + name, errno);
  }
  // tmpfs allocates lazily: a full one would otherwise surface later as SIGBUS on a store or
  // EFAULT on a PTY read into the ring.
  if (const int err = ::posix_fallocate(fd.fd, 0, static_cast<off_t>(bytes))) {
    return fail_errno("reserve " + std::to_string(bytes) + " bytes for segment " + name, err);
  }
  void* address = map_shared(fd.fd, bytes, PROT_READ | PROT_WRITE);
  if (address == MAP_FAILED) return fail_errno("map segment " + name, errno);
  Segment segment(fd.release(), static_cast<std::byte*>(address), bytes);
  // After the mapping: F_SEAL_FUTURE_WRITE leaves mappings made before it writable.
  if (::fcntl(segment.fd_, F_ADD_SEALS, seals_for(sealing)) != 0) {
    return fail_errno("seal segment " + name, errno);
  }
  return segment;
}

Result<Segment> Segment::open_read_only(pid_t pid, int fd, std::size_t bytes, Sealing sealing) {
  const std::string where = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  if (pid <= 0 || fd < 0) return fail(Errc::bad_segment, "no segment at " + where);
  // The kernel lets only processes that may inspect `pid` (its own user) open its descriptors.
  // O_NONBLOCK: a descriptor of a FIFO or a device cannot hang the reader before the checks.
  FdCloser opened{::open(where.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (opened.fd < 0) {
    const int err = errno;
    if (err == ENOENT && ::access(("/proc/" + std::to_string(pid)).c_str(), F_OK) != 0) {
      return fail(Errc::stale_segment,
                  "segment " + where + " is gone with its process (the engine stopped)");
    }
    if (err == ENOENT) {
      return fail(Errc::no_such_actor,
                  "segment " + where + " is gone (the actor was deleted meanwhile)");
    }
    if (err == EACCES || err == EPERM) {
      return fail(Errc::permission_denied, "segment " + where +
                                               " belongs to another user's "
                                               "process: not opened");
    }
    return fail_errno("open segment " + where, err);
  }
  auto refuse = [&](const std::string& why) {
    return fail(Errc::bad_segment, "segment " + where + " " + why + ": not opened");
  };
  struct stat st {};
  if (::fstat(opened.fd, &st) != 0) return fail_errno("stat segment " + where, errno);
  if (!S_ISREG(st.st_mode)) return refuse("is not a regular file");
  if (st.st_uid != ::geteuid()) {
    return refuse("belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                  std::to_string(::geteuid()) + ")");
  }
  // Sealed size: nobody can truncate it under the mapping (SIGBUS) or grow it.
  const int seals = ::fcntl(opened.fd, F_GET_SEALS);
  const int wanted = seals_for(sealing);
  if (seals < 0 || (seals & wanted) != wanted) {
    return refuse("is not a sealed memfd (seals " + std::to_string(seals < 0 ? 0 : seals) +
                  ", expected " + std::to_string(wanted) + ")");
  }
  if (static_cast<std::uint64_t>(st.st_size) != bytes) {
    return refuse("is " + std::to_string(st.st_size) + " bytes, not " + std::to_string(bytes));
  }
  void* address = map_shared(opened.fd, bytes, PROT_READ);
  if (address == MAP_FAILED) return fail_errno("map segment " + where, errno);
  return Segment(-1, static_cast<std::byte*>(address), bytes);  // the mapping outlives the fd
}

}  // namespace backscroll::shm
