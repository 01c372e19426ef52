// InputQueue: the ordered, bounded bytes waiting to be written to one actor's PTY (io thread).
// Writes never block the engine: a child that stops reading fills this queue, after which
// try_push refuses (too_large) and nothing already accepted is lost or reordered.
// Pieces follow Natamux's rules (docs/protocol.md, "Input"): a run of DEL bytes is written apart
// from the text around it with kKindChangeGap between them, and the Enter that ends a paste is
// its own piece, kPasteEnterGap after the paste.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <span>
#include <string>
#include <string_view>

namespace backscroll::engine {

class InputQueue {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kKindChangeGap{25};
  static constexpr std::chrono::milliseconds kPasteEnterGap{100};

  explicit InputQueue(std::size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Queues all of `bytes` or nothing: false when they would exceed the capacity.
  bool try_push(std::string_view bytes, bool paste);
  bool empty() const noexcept { return pieces_.empty(); }
  std::size_t queued_bytes() const noexcept { return queued_; }
  std::size_t capacity() const noexcept { return capacity_; }

  // When the front piece may be written (now or later, for a gap).
  Clock::time_point front_ready_at() const noexcept;
  // The unwritten bytes of the front piece. Stable until consume() or clear().
  std::span<const std::byte> front() const noexcept;
  // `bytes` of the front piece reached the PTY at `now`.
  void consume(std::size_t bytes, Clock::time_point now) noexcept;
  void clear() noexcept;

 private:
  enum class Kind { text, del, enter };
  struct Piece {
    std::string bytes;
    std::size_t written = 0;
    Kind kind = Kind::text;
    std::chrono::milliseconds gap{0};  // required since the previous piece was written
  };
  void push_piece(std::string_view bytes, Kind kind, std::chrono::milliseconds gap);

  std::size_t capacity_;
  std::size_t queued_ = 0;
  std::deque<Piece> pieces_;
  Kind last_kind_ = Kind::text;          // kind of the newest queued (or written) piece
  Clock::time_point last_written_at_{};  // when the previous piece was fully written
};

}  // namespace backscroll::engine
