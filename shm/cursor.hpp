// Cursor: an absolute byte position in one actor's output stream (docs/design.md,
// "Cursors and epochs").
// A cursor counts every byte the actor ever printed in this epoch; it never wraps, never goes
// backwards and never resets (not across sessions, not on clear). An *offset* is the index of a
// cursor's byte inside a ring's data area (`cursor % capacity`); only the ring code computes one.
#pragma once

#include <compare>
#include <cstdint>

namespace backscroll {

enum class Cursor : std::uint64_t {};

constexpr std::uint64_t value(Cursor c) noexcept { return static_cast<std::uint64_t>(c); }
constexpr Cursor operator+(Cursor c, std::uint64_t bytes) noexcept {
  return Cursor{value(c) + bytes};
}
constexpr Cursor operator-(Cursor c, std::uint64_t bytes) noexcept {
  return Cursor{value(c) - bytes};
}
// Bytes between two cursors; the caller guarantees `later >= earlier`.
constexpr std::uint64_t operator-(Cursor later, Cursor earlier) noexcept {
  return value(later) - value(earlier);
}
constexpr Cursor max(Cursor a, Cursor b) noexcept { return a < b ? b : a; }
constexpr Cursor min(Cursor a, Cursor b) noexcept { return a < b ? a : b; }

// The cursor space ends here: no byte is ever written at or past it (at 10 GB/s that takes 58
// years of one epoch's output). Below it, a cursor plus a ring's capacity (< 2^26) or any sum
// capped with advance_capped never overflows. A session that reaches it ends its output.
inline constexpr Cursor kCursorEnd{~std::uint64_t{0} - (std::uint64_t{1} << 32)};

// `c + bytes`, but never past kCursorEnd.
constexpr Cursor advance_capped(Cursor c, std::uint64_t bytes) noexcept {
  return c >= kCursorEnd || bytes >= kCursorEnd - c ? kCursorEnd : c + bytes;
}

}  // namespace backscroll
