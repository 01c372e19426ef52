// Keyframe: an actor's terminal at one cursor, kept so the screen at any later cursor can be
// rebuilt by replaying only the bytes after it (docs/recorder.md, "Keyframes"). Either a
// snapshot_v1 the mirror built (the screen, up to kKeyframeHistoryLines of history, modes, pen,
// title: everything later bytes depend on, by snapshot_v1's contract) or, with no bytes, a fresh
// terminal of cols x rows (a session's start, a clear).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "shm/cursor.hpp"

namespace backscroll::recorder {

// History lines a keyframe keeps: as many as a default snapshot draws, so a snapshot at a
// keyframe's cursor is as complete as a live one.
inline constexpr std::size_t kKeyframeHistoryLines = 512;

struct Keyframe {
  Cursor cursor{0};
  // Which fresh terminal it descends from: the actor's session starts and clears, numbered from
  // 0 in the order the io thread made them (and the mirror applied them). A session's last
  // screen and the next session's first share a cursor; this tells them apart.
  std::uint64_t stretch = 0;
  std::uint16_t cols = 80;
  std::uint16_t rows = 24;
  // How many of the actor's size changes it shows (SizeChange::seq): several can share its
  // cursor, before and after it was taken.
  std::uint64_t sizes_applied = 0;
  std::int64_t time_ms = 0;  // wall clock when it was taken
  std::string snapshot;      // snapshot_v1 bytes; empty: a fresh terminal
  std::size_t history_lines = 0;

  bool fresh() const noexcept { return snapshot.empty(); }
};

// The PTY's size changed at `cursor`: bytes before it were written at the old size. `seq`
// numbers an actor's size changes from 1, in the order the io thread made them (and the mirror
// applied them).
struct SizeChange {
  std::uint64_t seq = 0;
  Cursor cursor{0};
  std::uint16_t cols = 80;
  std::uint16_t rows = 24;
};

}  // namespace backscroll::recorder
