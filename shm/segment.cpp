#include "shm/segment.hpp"

#include <fcntl.h>

#include <cerrno>
#include <filesystem>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

namespace bip = boost::interprocess;

namespace backscroll::shm {

struct Segment::Mapping {
  bip::mapped_region region;
};

Segment::Segment(std::string name, std::unique_ptr<Mapping> mapping)
    : name_(std::move(name)),
      mapping_(std::move(mapping)),
      data_(static_cast<std::byte*>(mapping_->region.get_address())),
      size_(mapping_->region.get_size()) {}

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
    auto mapping = std::make_unique<Mapping>(Mapping{bip::mapped_region(object, bip::read_write)});
    return Segment(name, std::move(mapping));
  } catch (const bip::interprocess_exception& e) {
    if (created) bip::shared_memory_object::remove(name.c_str());  // never leave a half-made name
    return from_boost("create", name, e);
  }
}

Result<Segment> Segment::open_read_only(const std::string& name) {
  try {
    bip::shared_memory_object object(bip::open_only, name.c_str(), bip::read_only);
    bip::offset_t size = 0;
    if (!object.get_size(size) || size <= 0) {
      return fail(Errc::bad_segment, "segment " + name + " is empty");
    }
    auto mapping = std::make_unique<Mapping>(Mapping{bip::mapped_region(object, bip::read_only)});
    return Segment(name, std::move(mapping));
  } catch (const bip::interprocess_exception& e) {
    return from_boost("open", name, e);
  }
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
