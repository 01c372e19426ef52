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
