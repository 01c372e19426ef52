#include "shm/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include "shm/random_hex.hpp"

namespace bip = boost::interprocess;

namespace backscroll::shm {

// A created segment keeps Boost's read-write region; an opened one is mapped read-only from the
// descriptor its checks ran on.
struct Segment::Mapping {
  std::optional<bip::mapped_region> region;
  void* address = nullptr;
  std::size_t bytes = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (address != nullptr) ::munmap(address, bytes);
  }
};

Segment::Segment(std::string name, std::unique_ptr<Mapping> mapping)
    : name_(std::move(name)), mapping_(std::move(mapping)) {
  if (mapping_->region) {
    data_ = static_cast<std::byte*>(mapping_->region->get_address());
    size_ = mapping_->region->get_size();
  } else {
    data_ = static_cast<std::byte*>(mapping_->address);
    size_ = mapping_->bytes;
  }
}

Segment::Segment(Segment&&) noexcept = default;
Segment& Segment::operator=(Segment&&) noexcept = default;
Segment::~Segment() = default;

namespace {

tl::unexpected<Error> from_boost(const char* what, const std::string& name,
                                 const bip::interprocess_exception& e) {
  int err = e.get_native_error();
  if (err == 0) err = EIO;
  if (err == ENOENT) return fail(Errc::no_such_actor, "segment " + name + " does not exist");
  return fail_errno(std::string(what) + " segment " + name, err);
}

}  // namespace

Result<Segment> Segment::create(const std::string& name, std::size_t bytes) {
  bool name_taken = false;
  auto segment = create_named(name, bytes, name_taken);
  if (name_taken) return fail_errno("create segment " + name, EEXIST);
  return segment;
}

Result<Segment> Segment::create_unique(const std::string& stem, std::size_t bytes,
                                       std::vector<std::string>& taken,
                                       const SuffixSource& next_suffix) {
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    const std::string name = stem + (next_suffix ? next_suffix() : random_hex(8));
    bool name_taken = false;
    auto segment = create_named(name, bytes, name_taken);
    if (!name_taken) return segment;
    taken.push_back(name);
  }
  return fail(Errc::io_error, "no free segment name for " + stem + "*: " +
                                  std::to_string(kNameAttempts) + " names drawn were all taken");
}

Result<Segment> Segment::create_named(const std::string& name, std::size_t bytes,
                                      bool& name_taken) {
  bool created = false;
  try {
    bip::permissions owner_only(0600);  // Boost fchmods after shm_open, so the umask is moot
    bip::shared_memory_object object(bip::create_only, name.c_str(), bip::read_write, owner_only);
    created = true;
    object.truncate(static_cast<bip::offset_t>(bytes));
    // Reserve the pages now: tmpfs allocates lazily, and a full /dev/shm would otherwise surface
    // later as SIGBUS on a store or EFAULT on a PTY read into the ring.
    if (const int err = ::posix_fallocate(object.get_mapping_handle().handle, 0,
                                          static_cast<off_t>(bytes))) {
      bip::shared_memory_object::remove(name.c_str());
      return fail_errno("reserve " + std::to_string(bytes) + " bytes for segment " + name, err);
    }
    auto mapping = std::make_unique<Mapping>();
    mapping->region.emplace(object, bip::read_write);
    return Segment(name, std::move(mapping));
  } catch (const bip::interprocess_exception& e) {
    if (created) bip::shared_memory_object::remove(name.c_str());  // never leave a half-made name
    if (!created && e.get_native_error() == EEXIST) {
      name_taken = true;
      return fail(Errc::io_error, "segment " + name + " exists");
    }
    return from_boost("create", name, e);
  }
}

Result<Segment> Segment::open_read_only(const std::string& name) {
  // Every check runs on the open descriptor, and the mapping comes from it: a name replaced
  // between the checks and the mapping cannot slip through. glibc's shm_open opens
  // /dev/shm/<name> with O_NOFOLLOW: a symbolic link is ELOOP. O_NONBLOCK: a FIFO planted under
  // the name would block the open.
  const int fd =
      ::shm_open(("/" + name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return fail(Errc::no_such_actor, "segment " + name + " does not exist");
    if (err == ELOOP) return fail(Errc::bad_segment, "segment " + name + " is a symbolic link");
    return fail_errno("open segment " + name, err);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail_errno("stat segment " + name, errno);
  // Only what the engine makes is trusted (it creates segments 0600, owned by its user, one
  // name each): another local user can create a file in the sticky /dev/shm, with any mode.
  auto refuse = [&](const std::string& why) {
    return fail(Errc::bad_segment, "segment " + name + " " + why + ": not opened");
  };
  if (!S_ISREG(st.st_mode)) return refuse("is not a regular file");
  if (st.st_uid != ::geteuid())
    return refuse("belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                  std::to_string(::geteuid()) + ")");
  if ((st.st_mode & 07777) != 0600) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return refuse(std::string("has mode ") + mode + ", not 0600");
  }
  if (st.st_nlink != 1) return refuse("has " + std::to_string(st.st_nlink) + " links");
  if (st.st_size <= 0) return fail(Errc::bad_segment, "segment " + name + " is empty");
  const auto bytes = static_cast<std::size_t>(st.st_size);
  void* address = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) return fail_errno("map segment " + name, errno);
  auto mapping = std::make_unique<Mapping>();
  mapping->address = address;
  mapping->bytes = bytes;
  return Segment(name, std::move(mapping));
}

bool Segment::remove(const std::string& name) noexcept {
  return bip::shared_memory_object::remove(name.c_str());
}

std::vector<std::string> Segment::list(const std::string& prefix) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) == 0) names.push_back(file);
  }
  return names;
}

}  // namespace backscroll::shm
