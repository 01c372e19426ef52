// Segment: one sealed memfd (an anonymous shared-memory file) and its mapping. A ring is two
// segments: its header and its data (docs/security.md, "Shared-memory rings").
//
// The engine creates a segment, maps it read-write, then seals it: the kernel then refuses
// every change of its size, for anyone (F_SEAL_SHRINK | F_SEAL_GROW), so no process can ever
// make a reader's mapping fault with SIGBUS. A header segment is also sealed against writes
// (F_SEAL_FUTURE_WRITE): the engine's own mapping, made before the seal, stays the only
// writable one; no later open, mapping or write() can change it. The data segment keeps writes
// open, because giving an idle ring's pages back (hole punching) needs them; F_SEAL_SEAL stops
// anyone from adding seals later.
//
// No segment has a name anyone can plant or squat. A reader of another process opens the
// engine's descriptor through /proc/<engine pid>/fd/<fd> (read-only), which the kernel allows
// only to processes of the engine's own user, and checks on what it opened that it is a sealed
// memfd of that user with the expected size.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "shm/error.hpp"

namespace backscroll::shm {

// The processor's large page (x86-64's and arm64's with 4 KiB pages): a segment at least this
// large is mapped at an address aligned to it, in every process, so that a large page of its
// file can be mapped with one page-table entry (RingWriter makes them for flooding rings).
inline constexpr std::size_t kLargePageBytes = std::size_t{2} << 20;

enum class Sealing {
  size,             // F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL
  size_and_writes,  // the same and F_SEAL_FUTURE_WRITE
};

class Segment {
 public:
  // A memfd labelled `label` (it shows in /proc/<pid>/fd, nowhere else) of `bytes` zero-filled
  // bytes, its pages reserved (a full tmpfs is an error now, not a SIGBUS later), mapped
  // read-write, then sealed. Close-on-exec: a spawned program never inherits it.
  static Result<Segment> create(std::string_view label, std::size_t bytes, Sealing sealing);
  // Maps descriptor `fd` of process `pid` read-only, through /proc/<pid>/fd/<fd>. Refused
  // (bad_segment) unless it is a regular file of this process's effective uid, sealed at least
  // as `sealing` says, and exactly `bytes` long. A process of another user is permission_denied,
  // a gone process stale_segment, a gone descriptor no_such_actor.
  static Result<Segment> open_read_only(pid_t pid, int fd, std::size_t bytes, Sealing sealing);

  Segment(Segment&&) noexcept;
  Segment& operator=(Segment&&) noexcept;
  ~Segment();

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  // The memfd a created segment keeps open (readers reopen it through /proc); -1 when opened.
  int fd() const noexcept { return fd_; }
  // Closes that memfd and keeps the mapping: nobody can open the segment any more, while
  // whoever still reads the mapping reads on (RingWriter's reader()s after its actor went).
  void close_descriptor() noexcept;

 private:
  Segment(int fd, std::byte* data, std::size_t size) noexcept : fd_(fd), data_(data), size_(size) {}
  void reset() noexcept;

  int fd_ = -1;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// The two memfds of one ring. Their names in /proc/<pid>/fd start with these labels (then the
// actor's name), which is how tests and tools recognise a ring's descriptors.
struct RingSegments {
  static constexpr std::string_view kHeaderLabel = "bs-ring:";
  static constexpr std::string_view kDataLabel = "bs-data:";
  Segment header;
  Segment data;
};

}  // namespace backscroll::shm
