// RingWriter: the single producer of one actor's ring (engine io thread only).
// It hands out contiguous free space for the next PTY read (publishing `reserved` before the
// read is submitted), commits completed reads, and wakes sleeping readers once per batch.
// Coordinates: cursors in the API; offsets (cursor % capacity) only inside.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "shm/cursor.hpp"
#include "shm/error.hpp"
#include "shm/ring_announcement.hpp"
#include "shm/ring_layout.hpp"
#include "shm/ring_reader.hpp"
#include "shm/segment.hpp"

namespace backscroll::shm {

struct RingIdentity {
  std::string actor;
  std::uint64_t epoch = 0;
  std::uint64_t capacity = 0;
  Cursor start{0};  // cursor of the first byte (a continued cursor space starts above 0)
};

class RingWriter {
 public:
  // Creates the ring's two sealed segments (shm/segment.hpp), writes the identity and a fresh
  // random nonce, and publishes `magic` last.
  static Result<RingWriter> create(const RingIdentity& identity);
  // Over caller-owned memory of kHeaderBytes + capacity bytes (tests, benchmarks). Its nonce is
  // all zeros: nothing announces such a ring.
  static RingWriter over(std::byte* base, const RingIdentity& identity);

  RingWriter(RingWriter&&) noexcept = default;
  RingWriter& operator=(RingWriter&&) = delete;
  // Closes the ring's descriptors at once (the actor is gone: no reader can open it any more);
  // the mapping lives on while a reader() holds it.
  ~RingWriter();

  // Contiguous free space at committed(), at most `max_bytes`, never crossing the end of the data
  // area nor kCursorEnd (empty there). Publishes floor and reserved before returning: the caller
  // may then let the kernel write the span. At most one reservation is outstanding; commit() or a
  // new reserve() ends it.
  std::span<std::byte> reserve(std::size_t max_bytes) noexcept;
  // Makes the first `bytes` of the outstanding reservation readable (the commit point).
  void commit(std::size_t bytes) noexcept;
  // reserve + memcpy + commit, wrapping as needed (tests, benchmarks, engine-made bytes). The
  // bytes appended: all of them, unless the cursor space ends first.
  std::size_t append(std::span<const std::byte> bytes) noexcept;
  // Empties the readable range, floor = committed, and zeroes the cleared bytes in the shared
  // memory: nothing of them stays for anyone who maps the segment. Readers still copying them
  // find them overwritten, as after a lap (reserved is published a capacity ahead first). With
  // `read_in_flight`, the kernel may be writing the outstanding reservation: the cleared bytes
  // under it are zeroed once that read is over (the next commit, reserve or read_over). The
  // cursor space only moves forward.
  void clear(bool read_in_flight = false) noexcept;
  // The read into the outstanding reservation ended without a byte (EAGAIN, a cancel, an
  // error): the cleared bytes a clear left under it are zeroed now, not at the next read, which
  // may be a long time coming for a program that waits for input.
  void read_over() noexcept { finish_wipe(); }
  // Gives the data area's memory back to the system (an idle actor's ring): floor rises to
  // committed and the pages are punched out; the next bytes fault fresh pages in. False when
  // the memory is not a shared segment (it is then only cleared).
  bool release_pages() noexcept;
  // Bumps the futex word and wakes every sleeping reader; call once per batch of commits.
  void wake_readers() noexcept;
  // Wakes readers only when something was committed since the last wake.
  void wake_if_committed() noexcept;

  void publish_meta(const ActorMeta& meta) noexcept;
  void publish_session(const SessionRecord& session) noexcept;
  void publish_output(const OutputStatus& output) noexcept;

  Cursor committed() const noexcept { return committed_; }
  Cursor floor() const noexcept { return floor_; }
  Cursor reserved() const noexcept { return reserved_; }
  // The committed cursor at the last wake_readers().
  Cursor woken_at() const noexcept { return woken_at_; }
  std::uint64_t capacity() const noexcept { return capacity_; }
  const std::byte* data() const noexcept { return data_; }
  RingHeader* header() const noexcept { return header_; }
  // What the engine tells readers about this ring (status answers; its own reads). A ring over
  // caller memory announces no descriptors (-1).
  RingAnnouncement announcement() const;
  // The data segment's memfd (-1 over caller memory): what its memory use can be read from.
  int data_fd() const noexcept;
  // A reader for threads of this process (the mirror, the transcript writer) over this writer's
  // own mapping, which it keeps alive while it lives (over caller memory: that memory, which the
  // caller keeps). Not a mapping of its own: a page mapped again is a fault and, on a
  // virtual machine, a shadow page-table entry again the first time it is touched, about 5 us
  // per 4 KiB here (docs/profiles/ring-first-lap.md); a second mapping cost each in-process
  // reader that again for every page of the ring's first lap.
  RingReader reader() const;

 private:
  RingWriter(std::shared_ptr<RingSegments> segments, std::byte* header, std::byte* data,
             const RingIdentity& identity);
  void close_descriptors() noexcept;
  void initialise(const RingIdentity& identity) noexcept;
  void publish_reserved(Cursor reserved) noexcept;
  // Zeroes the data area's bytes of cursors [from, to), at most one capacity of them.
  void zero(Cursor from, Cursor to) noexcept;
  // Zeroes what a clear left under the reservation of a read now over, past committed_.
  void finish_wipe() noexcept;
  // On a flooding ring's first lap since its pages were fresh, puts the pages ahead of
  // committed_ into the mapping before the reads reach them: on a ring made with all its pages
  // reserved, the next large page (2 MiB) collapsed into one (madvise MADV_COLLAPSE), else
  // 256 KiB of small pages (MADV_POPULATE_WRITE). Either replaces a page fault per 4 KiB
  // inside later PTY reads (on a virtual machine each is a trap of several microseconds:
  // docs/profiles/ring-first-lap.md); a large page also spares every thread that reads the
  // ring a TLB entry per 4 KiB (docs/profiles/ring-large-pages.md). The bytes are kept.
  void map_ahead() noexcept;
  // Puts the small pages of data offsets [from, to) into the mapping.
  void populate(std::uint64_t from, std::uint64_t to) noexcept;

  std::shared_ptr<RingSegments> segments_;  // null for `over`; shared with reader()s
  RingHeader* header_;
  std::byte* data_;
  std::uint64_t capacity_;
  // Private copies of the published cursors: only this thread writes them, so it never has to
  // load its own stores back from shared memory.
  Cursor committed_{0};
  Cursor reserved_{0};
  Cursor floor_{0};
  Cursor woken_at_{0};
  Cursor wipe_to_{0};  // clear() during a read: [committed_, wipe_to_) still holds cleared bytes
  // The furthest end of a reservation since the last wipe: a read that filled less left the
  // bytes of [committed_, stale_to_) from a lap before, below floor (nobody may read them) but
  // still in the memory.
  Cursor stale_to_{0};
  // Pages of cursors in [fresh_from_, mapped_to_) are in the mapping; from fresh_from_ (the
  // ring's creation, the last release_pages) one capacity on, every page is fresh.
  Cursor fresh_from_{0};
  Cursor mapped_to_{0};
  bool populates_ = false;  // map_ahead may: a shared segment, on a kernel that populates
  // map_ahead collapses large pages: a segment whose pages are all reserved (none given back
  // by release_pages), where no collapse failed yet.
  bool collapses_ = false;
};

}  // namespace backscroll::shm
