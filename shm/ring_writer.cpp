#include "shm/ring_writer.hpp"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

#include "shm/process_identity.hpp"
#include "shm/random_hex.hpp"
#include "shm/seqlock.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack it
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1
#endif

namespace backscroll::shm {
namespace {

// A ring that took this much since its pages were fresh is flooding: map_ahead maps its pages
// before the reads write them.
constexpr std::uint64_t kFloodingAfter = std::uint64_t{256} << 10;
// Where its pages are not large ones, the ring maps this much ahead at a time.
constexpr std::uint64_t kPopulateBlock = std::uint64_t{256} << 10;
constexpr std::uint64_t kPage = 4096;

void store_release(std::uint64_t& field, Cursor c) noexcept {
  std::atomic_ref<std::uint64_t>(field).store(value(c), std::memory_order_release);
}

}  // namespace

Result<RingWriter> RingWriter::create(const RingIdentity& identity) {
  auto header = Segment::create(std::string(RingSegments::kHeaderLabel) + identity.actor,
                                kHeaderBytes, Sealing::size_and_writes);
  if (!header) return tl::unexpected(header.error());
  // The data stays writable through new mappings: release_pages punches holes, which a write
  // seal forbids.
  auto data = Segment::create(std::string(RingSegments::kDataLabel) + identity.actor,
                              identity.capacity, Sealing::size);
  if (!data) return tl::unexpected(data.error());
  std::byte* h = header->data();
  std::byte* d = data->data();
  return RingWriter(
      std::make_shared<RingSegments>(RingSegments{std::move(*header), std::move(*data)}), h, d,
      identity);
}

RingWriter RingWriter::over(std::byte* base, const RingIdentity& identity) {
  return RingWriter(nullptr, base, base + kHeaderBytes, identity);
}

RingWriter::RingWriter(std::shared_ptr<RingSegments> segments, std::byte* header, std::byte* data,
                       const RingIdentity& identity)
    : segments_(std::move(segments)),
      header_(reinterpret_cast<RingHeader*>(header)),
      data_(data),
      capacity_(identity.capacity),
      committed_(identity.start),
      reserved_(identity.start),
      floor_(identity.start),
      woken_at_(identity.start),
      fresh_from_(identity.start),
      mapped_to_(identity.start),
      populates_(segments_ != nullptr),
      collapses_(populates_) {
  initialise(identity);
}

RingWriter::~RingWriter() { close_descriptors(); }

void RingWriter::close_descriptors() noexcept {
  // Only this writer's thread reads the descriptors (announcement, data_fd); readers sharing
  // the segments use the mapping alone.
  if (segments_) {
    segments_->header.close_descriptor();
    segments_->data.close_descriptor();
  }
}

void RingWriter::initialise(const RingIdentity& identity) noexcept {
  // Nobody can trust the header before `magic` is published, so plain stores suffice here.
  RingHeader& h = *header_;
  h.layout_version = kRingLayoutVersion;
  h.header_bytes = static_cast<std::uint32_t>(kHeaderBytes);
  h.capacity = identity.capacity;
  h.epoch = identity.epoch;
  const ProcessIdentity self = ProcessIdentity::self();
  h.engine_pid = self.pid;
  h.engine_start_ticks = self.start_ticks;
  // A segment's nonce is random; a ring over caller memory (tests) keeps the zeros it was given.
  std::memset(h.nonce, 0, sizeof h.nonce);
  if (segments_) random_bytes(h.nonce);
  std::memset(h.actor, 0, sizeof h.actor);
  std::memcpy(h.actor, identity.actor.data(), std::min(identity.actor.size(), kActorNameMax));
  h.committed = h.reserved = h.floor = value(identity.start);
  h.wake = 0;
  // release: every identity field and initial cursor above is visible to a reader that
  // acquire-loads magic == kRingMagic (RingReader's validation).
  std::atomic_ref<std::uint64_t>(h.magic).store(kRingMagic, std::memory_order_release);
}

void RingWriter::publish_reserved(Cursor reserved) noexcept {
  const Cursor lowest_intact = reserved - std::min<std::uint64_t>(value(reserved), capacity_);
  if (floor_ < lowest_intact) {
    floor_ = lowest_intact;
    // release: readers that see the new floor also see everything published before it.
    store_release(header_->floor, floor_);
  }
  reserved_ = reserved;
  // release: orders this store before the caller's io_uring submission (liburing publishes the
  // SQ tail with a release store that the kernel acquire-loads before copying into the span),
  // so any reader that observes a byte the kernel wrote there, then fences (acquire), loads a
  // reserved at least this large. Pairs with the acquire fence in RingReader::intact.
  store_release(header_->reserved, reserved_);
}

std::span<std::byte> RingWriter::reserve(std::size_t max_bytes) noexcept {
  finish_wipe();  // the reservation before this one is over
  const std::uint64_t offset = value(committed_) % capacity_;
  const std::uint64_t n =
      std::min<std::uint64_t>({max_bytes, capacity_ - offset, kCursorEnd - committed_});
  const Cursor end = committed_ + n;
  if (reserved_ < end) publish_reserved(end);
  stale_to_ = max(stale_to_, end);
  return {data_ + offset, static_cast<std::size_t>(n)};
}

void RingWriter::commit(std::size_t bytes) noexcept {
  committed_ = committed_ + bytes;
  // release: THE COMMIT POINT. Bytes below committed_ (written by memcpy or by the kernel before
  // the CQE we are handling) are visible to a reader that acquire-loads committed.
  store_release(header_->committed, committed_);
  finish_wipe();
  map_ahead();
}

void RingWriter::map_ahead() noexcept {
  // Only a ring that took a flood's worth since its pages were fresh: an idle actor's few
  // screenfuls keep faulting their pages in one by one.
  if (!populates_ || committed_ - fresh_from_ < kFloodingAfter) return;
  const Cursor lap_end = fresh_from_ + capacity_;
  const std::uint64_t ahead = collapses_ ? kLargePageBytes : kPopulateBlock;
  if (mapped_to_ >= lap_end || committed_ + ahead / 2 <= mapped_to_) return;
  const Cursor from = max(mapped_to_, committed_);
  const std::uint64_t offset = value(from) % capacity_;
  if (collapses_) {
    // The rest of the large page holding the next cursor not mapped yet (data_ is aligned to
    // large pages when the ring spans one: Segment), as one large page instead of 512 small
    // ones. The kernel copies the bytes already written into it (the first holds the flood's
    // first 256 KiB) and maps it with one entry. The ring's memory does not grow: its small
    // pages were all reserved when it was made (after release_pages they are not, and
    // collapses_ is false). The short last piece of a capacity that is no multiple of a large
    // page is populated.
    const std::uint64_t page_start = offset - offset % kLargePageBytes;
    const std::uint64_t page_end = std::min<std::uint64_t>(page_start + kLargePageBytes, capacity_);
    mapped_to_ = min(lap_end, from + (page_end - offset));
    if (page_end - page_start < kLargePageBytes) {
      populate(offset, page_end);
      return;
    }
    if (::madvise(data_ + page_start, kLargePageBytes, MADV_COLLAPSE) == 0) return;
    // A kernel before 6.1 or without large pages, one that found no free large page: the rest
    // of the lap in small pages, so that a machine short of large pages does not stall this
    // thread in a collapse at every one.
    collapses_ = false;
    populate(offset, page_end);
    return;
  }
  // (A block that would pass the ring's end stops there; the next starts at its offset 0.)
  const std::uint64_t n = std::min({kPopulateBlock, lap_end - from, capacity_ - offset});
  mapped_to_ = from + n;
  populate(offset, offset + n);
}

void RingWriter::populate(std::uint64_t from, std::uint64_t to) noexcept {
  const std::uint64_t page_start = from - from % kPage;  // data_ is page aligned
  if (::madvise(data_ + page_start, to - page_start, MADV_POPULATE_WRITE) != 0) {
    // A kernel before 5.14 (EINVAL) or a mapping that refuses: the pages fault in as they are
    // written, as they always could.
    if (errno == EINVAL || errno == EPERM || errno == ENOSYS) populates_ = collapses_ = false;
  }
}

std::size_t RingWriter::append(std::span<const std::byte> bytes) noexcept {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const std::span<std::byte> space = reserve(bytes.size() - done);
    if (space.empty()) break;  // the end of the cursor space
    std::memcpy(space.data(), bytes.data() + done, space.size());
    commit(space.size());
    done += space.size();
  }
  return done;
}

void RingWriter::clear(bool read_in_flight) noexcept {
  const Cursor oldest = max(floor_, committed_ - std::min(value(committed_), capacity_));
  const Cursor reservation_end = reserved_;
  floor_ = committed_;
  // release: pairs with the reader's acquire load of floor; bytes below are no longer served.
  store_release(header_->floor, floor_);
  // "The engine may be writing every byte": a reader still copying cleared bytes finds
  // reserved - capacity past them when it validates (intact) and drops what it read.
  publish_reserved(max(reserved_, committed_ + capacity_));
  // release fence: the reserved store above is ordered before the zeroing stores below, so a
  // reader that read a zero and then fences (acquire, RingReader::intact) loads that reserved
  // or a later one: the seqlock pattern, with reserved as the sequence.
  std::atomic_thread_fence(std::memory_order_release);
  // The cleared bytes sit at the offsets of [oldest, committed_). Those under a reservation the
  // kernel may still be writing, [committed_, reservation_end) one lap later, wait for its end.
  Cursor from = oldest;
  if (read_in_flight && reservation_end > committed_) {
    from = max(oldest, reservation_end - std::min(value(reservation_end), capacity_));
    wipe_to_ = reservation_end;
  } else if (stale_to_ > committed_) {
    // No read in flight: the unused end of the last reservations holds bytes of a lap before,
    // which floor hides from readers but not from anyone who maps the segment.
    zero(committed_, stale_to_);
    stale_to_ = committed_;
  }
  if (from < committed_) zero(from, committed_);
}

void RingWriter::zero(Cursor from, Cursor to) noexcept {
  const std::uint64_t n = std::min<std::uint64_t>(to - from, capacity_);
  const std::uint64_t offset = value(from) % capacity_;
  const std::uint64_t first = std::min(n, capacity_ - offset);
  std::memset(data_ + offset, 0, static_cast<std::size_t>(first));
  std::memset(data_, 0, static_cast<std::size_t>(n - first));
}

void RingWriter::finish_wipe() noexcept {
  if (wipe_to_ == Cursor{0}) return;  // the common case: no clear during a read
  if (wipe_to_ > committed_) zero(committed_, wipe_to_);
  wipe_to_ = Cursor{0};
  stale_to_ = committed_;  // reserved_ bounds every reservation so far: all zeroed
}

bool RingWriter::release_pages() noexcept {
  // reserved = committed + capacity: "the engine may be writing every byte", so a reader still
  // copying [c, committed) finds reserved - capacity > c when it validates and drops what it
  // read. Published (release) before the pages are zeroed; the kernel's TLB shootdown for
  // MADV_REMOVE orders the zeroing after it, as for the kernel's own writes into reservations.
  // reserve() never lowers reserved, so the mark stands until the ring really passes it.
  publish_reserved(committed_ + capacity_);
  if (::madvise(data_, capacity_, MADV_REMOVE) != 0) return false;
  stale_to_ = committed_;                 // the pages read as zeros from now on
  fresh_from_ = mapped_to_ = committed_;  // and are out of the mapping
  // and out of the memory: a large page collapsed now would take 2 MiB of it for a burst.
  collapses_ = false;
  return true;
}

void RingWriter::wake_readers() noexcept {
  woken_at_ = committed_;
  std::atomic_ref<std::uint32_t> wake(header_->wake);
  // release: a reader that loads the new wake value also sees the commits before it; the
  // read-only reader loads wake, then committed, then FUTEX_WAITs on the old wake value, so a
  // commit it missed always changes the word before the kernel compares it (no lost wake-up).
  wake.store(wake.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  ::syscall(SYS_futex, &header_->wake, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void RingWriter::wake_if_committed() noexcept {
  if (woken_at_ != committed_) wake_readers();
}

void RingWriter::publish_meta(const ActorMeta& meta) noexcept {
  seqlock_store(header_->meta, meta);
}

void RingWriter::publish_session(const SessionRecord& session) noexcept {
  seqlock_store(header_->sessions[session.id % kSessionSlots], session);
}

void RingWriter::publish_output(const OutputStatus& output) noexcept {
  seqlock_store(header_->output, output);
}

RingAnnouncement RingWriter::announcement() const {
  RingAnnouncement a{header_->actor, 0, -1, -1, to_hex(header_->nonce), capacity_};
  if (segments_) {
    a.engine_pid = static_cast<pid_t>(header_->engine_pid);
    a.header_fd = segments_->header.fd();
    a.data_fd = segments_->data.fd();
  }
  return a;
}

int RingWriter::data_fd() const noexcept { return segments_ ? segments_->data.fd() : -1; }

RingReader RingWriter::reader() const { return RingReader(segments_, header_, data_); }

}  // namespace backscroll::shm
