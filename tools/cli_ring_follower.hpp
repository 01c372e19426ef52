// RingFollower: copies one actor's output from the ring (shared memory, read-only) to a file
// descriptor, from a cursor on, for `tail` and `attach`. Bytes go through RingReader::copy, so
// no torn byte is ever written; when the engine laps the follower it skips to the oldest
// retained cursor and counts what it skipped. Coordinates: cursors only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "shm/cursor.hpp"
#include "shm/error.hpp"
#include "shm/places.hpp"
#include "shm/ring_reader.hpp"

namespace backscroll::cli {

// RingReader::open with the errors phrased for people ("no actor named 'x'").
Result<shm::RingReader> open_ring(const Places& places, std::string_view actor);

// False once the engine that owns the ring is gone: the ring will never grow again.
bool ring_owner_alive(const shm::RingReader& reader);
// The engine_unavailable error for a ring whose owner is gone ("the engine (pid P) is gone; ...").
Error ring_owner_gone(const shm::RingReader& reader, std::string_view actor);

// Follows one session of a ring by id: the newest when first asked (or the first to appear),
// for `tail --until-exit` and `wait --exit`.
class SessionWatch {
 public:
  struct End {
    Cursor end;  // one past the session's last byte (0 when its record is long gone)
    // What a shell would report: the exit status, or 128 + the signal that killed it; 0 when
    // the record was reused before it was read (a session long over).
    int status = 0;
  };
  // The watched session's end once it is sealed; nullopt while it runs (or before any).
  std::optional<End> ended(const shm::RingReader& reader);

 private:
  std::uint64_t id_ = 0;
};

class RingFollower {
 public:
  // Called with each run of bytes just written (attach tracks terminal modes with it).
  using Observer = std::function<void(std::span<const std::byte>)>;

  RingFollower(const shm::RingReader& reader, Cursor from, std::size_t buffer_bytes = 256 * 1024);

  struct Progress {
    std::uint64_t written = 0;  // bytes written to the descriptor
    std::uint64_t skipped = 0;  // bytes lost to laps (overwritten before they were copied)
  };
  // Writes [cursor, min(committed, until)) to `fd`, where committed is read once on entry (a
  // flooding actor cannot keep it here forever). Errors: a failed write; cursor_in_future.
  Result<Progress> pump(int fd, std::optional<Cursor> until = std::nullopt,
                        const Observer& observer = {});
  // The same bytes handed to `sink` instead of written (attach's local terminal model).
  using Sink = std::function<Result<void>(std::span<const std::byte>)>;
  Result<Progress> pump_to(const Sink& sink, std::optional<Cursor> until = std::nullopt);
  Cursor cursor() const noexcept { return cursor_; }

 private:
  const shm::RingReader* reader_;
  Cursor cursor_;
  std::vector<std::byte> buffer_;
};

}  // namespace backscroll::cli
