// Segment: one named POSIX shared-memory object and its mapping. The engine creates segments
// read-write with mode 0600 (whatever the umask, through Boost.Interprocess); readers open them
// read-only, so a reader can never modify the engine's or another reader's view, and only
// after checking, on the open descriptor, that the object is one its own engine could have made
// (docs/security.md).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shm/error.hpp"

namespace backscroll::shm {

class Segment {
 public:
  // Creates `name` (it must not exist) with `bytes` zero-filled bytes, mode 0600, mapped rw.
  static Result<Segment> create(const std::string& name, std::size_t bytes);
  // Draws names `stem` + next_suffix() until one is free, and creates it. Another local user can
  // create any name in the sticky /dev/shm, so a taken name is never fatal: it is appended to
  // `taken` (the engine logs it) and another is drawn, at most kNameAttempts times. The default
  // suffix is 16 random hex digits: nobody can guess the name, let alone squat it.
  using SuffixSource = std::function<std::string()>;
  static constexpr int kNameAttempts = 16;
  static Result<Segment> create_unique(const std::string& stem, std::size_t bytes,
                                       std::vector<std::string>& taken,
                                       const SuffixSource& next_suffix = {});
  // Maps an existing segment read-only; its size is the object's size. Refused (bad_segment)
  // unless it is a regular file owned by this process's effective uid, mode 0600, with one
  // link (not a symbolic link, FIFO, or a name linked to another).
  static Result<Segment> open_read_only(const std::string& name);
  // Unlinks the name; mappings stay valid until unmapped. False when it did not exist.
  static bool remove(const std::string& name) noexcept;
  // Names of existing segments that start with `prefix` (Linux keeps them in /dev/shm).
  static std::vector<std::string> list(const std::string& prefix);

  Segment(Segment&&) noexcept;
  Segment& operator=(Segment&&) noexcept;
  ~Segment();

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  const std::string& name() const noexcept { return name_; }

 private:
  struct Mapping;
  Segment(std::string name, std::unique_ptr<Mapping> mapping);
  // create(), with EEXIST reported through `name_taken` rather than as an error.
  static Result<Segment> create_named(const std::string& name, std::size_t bytes,
                                      bool& name_taken);

  std::string name_;
  std::unique_ptr<Mapping> mapping_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace backscroll::shm
