// RingReader: a read-only consumer of one actor's ring, in any local process (tools, tests).
// It maps only the ring the engine announced for the actor, read-only, after checking it is
// exactly that ring (docs/security.md), and reads committed bytes in place (zero-copy spans). Bytes
// read in place race the engine by design; a reader confirms them with intact() after using them,
// and treats a failed check as cursor_expired. Coordinates: cursors only; offsets stay inside the
// .cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "shm/cursor.hpp"
#include "shm/error.hpp"
#include "shm/places.hpp"
#include "shm/ring_announcement.hpp"
#include "shm/ring_layout.hpp"
#include "shm/segment.hpp"

namespace backscroll::shm {

// Up to two spans of committed bytes, [from, to), split where the data area wraps.
struct ReadView {
  Cursor from{0};
  Cursor to{0};
  std::span<const std::byte> first;
  std::span<const std::byte> second;
  std::size_t size() const noexcept { return first.size() + second.size(); }
  bool empty() const noexcept { return size() == 0; }
};

// What ended a RingReader::wait. `woken`: the engine woke its readers without committing a byte
// (a session was sealed, the actor's state changed): look at what the caller waits for again.
enum class WaitResult { ready, timeout, closed, woken };

// Checks a mapped header before anything trusts it: size, magic, version, header size, capacity
// against the data's mapped size. Pure function of the bytes (the fuzz target drives it).
Result<const RingHeader*> validate_ring_header(const std::byte* header, std::size_t header_bytes,
                                               std::uint64_t data_bytes);

class RingReader {
 public:
  // Opens the ring of `actor` of the engine at `places`: asks the engine (`status` on its control
  // socket) where the ring is and what it holds, then open_announced. An actor the engine does
  // not have is no_such_actor; no engine is engine_unavailable.
  static Result<RingReader> open(const Places& places, std::string_view actor);
  // Maps the announced ring only if it is exactly what was announced: each descriptor a sealed
  // memfd of this user of the announced size (Segment::open_read_only), then the header
  // validates and holds the actor and the nonce; finally the engine that made it must still run
  // (stale_segment otherwise). A mismatch is bad_segment, a vanished descriptor no_such_actor
  // (the actor was deleted meanwhile), another user's process permission_denied.
  static Result<RingReader> open_announced(const RingAnnouncement& announced);
  // Over memory the caller keeps mapped (tests, benchmarks, the engine's own reads): validation
  // only. A header and its data wherever they are, or laid out contiguously from `base`.
  static Result<RingReader> over(const std::byte* header, std::size_t header_bytes,
                                 const std::byte* data, std::size_t data_bytes);
  static Result<RingReader> over(const std::byte* base, std::size_t mapped_bytes);

  RingReader(RingReader&&) noexcept = default;
  RingReader& operator=(RingReader&&) noexcept = default;

  // Committed bytes from `from`, at most `max_bytes`. Errors: cursor_expired (error.cursor = the
  // oldest readable cursor), cursor_in_future (error.cursor = committed). An empty view means
  // nothing new yet. The spans may be overwritten by the engine while the caller uses them:
  // confirm with intact(view.from) afterwards.
  Result<ReadView> read(Cursor from, std::size_t max_bytes) const noexcept;
  // True when no byte at or after `from` can have been overwritten so far. Call after using
  // bytes read in place; on false, discard them (the bytes may be torn) and resync.
  bool intact(Cursor from) const noexcept;
  // read + copy into `out` + intact: bytes copied are never torn. Returns the end cursor.
  Result<Cursor> copy(Cursor from, std::span<std::byte> out) const noexcept;
  // Sleeps on the futex word until committed > `after` (ready), the segment closes (closed), the
  // engine wakes its readers for anything else (woken), or the timeout passes (timeout).
  // `seen`: the wake word as wake_seen() gave it before the caller looked at what it waits for
  // (new bytes, the session's end), so a wake in between ends the wait at once; without it, the
  // word as it is when the wait begins.
  WaitResult wait(Cursor after, std::chrono::milliseconds timeout) const noexcept;
  WaitResult wait(Cursor after, std::chrono::milliseconds timeout,
                  std::uint32_t seen) const noexcept;
  // The wake word: the engine changes it whenever it wakes the ring's readers.
  std::uint32_t wake_seen() const noexcept;

  Cursor committed() const noexcept;
  // The oldest cursor a read can start at right now.
  Cursor oldest() const noexcept;
  std::uint64_t epoch() const noexcept { return header_->epoch; }
  std::uint64_t capacity() const noexcept { return capacity_; }
  std::string_view actor() const noexcept { return header_->actor; }
  // Empty if the engine died mid-update (a stale segment).
  std::optional<ActorMeta> meta() const noexcept;
  std::optional<SessionRecord> session(std::uint64_t id) const noexcept;
  // What the output says now (title, bells, agent status: ring_layout.hpp, OutputStatus).
  std::optional<OutputStatus> output() const noexcept;
  const RingHeader& header() const noexcept { return *header_; }
  // The mapped data area every view lies in (the fuzz target checks spans against it).
  std::span<const std::byte> data_area() const noexcept {
    return {data_, static_cast<std::size_t>(capacity_)};
  }

 private:
  friend class RingWriter;  // RingWriter::reader shares its mapping
  RingReader(std::shared_ptr<const RingSegments> segments, const RingHeader* header,
             const std::byte* data);

  // What keeps the mapping alive: this reader's own (open_announced) or the writer's it shares
  // (RingWriter::reader); null for `over`.
  std::shared_ptr<const RingSegments> segments_;
  const RingHeader* header_;
  const std::byte* data_;
  std::uint64_t capacity_;
};

}  // namespace backscroll::shm
