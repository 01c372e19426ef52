// The durable form of a recording (docs/recorder.md, "Persistence"): each keyframe, size
// change, event and time sample the engine keeps becomes one record, appended to the actor's
// transcript annex (store::TranscriptStore::append_annex) as it happens; at engine start the
// records read back, in the order written, rebuild the Recording. Pure functions; any thread.
//
// A record is a type byte and little-endian fields:
//   keyframe     1, cursor u64, stretch u64, cols u16, rows u16, sizes_applied u64,
//                time_ms i64, history_lines u32, snapshot_v1 bytes (none: a fresh terminal)
//   size change  2, seq u64, cursor u64, cols u16, rows u16
//   event        3, seq u64, cursor u64, time_ms i64, kind name (u8 length + bytes),
//                fields as JSON text
//   time sample  4, time_ms i64, cursor u64
// Stretch, size and event numbers are kept as written: a restarted engine numbers on after the
// highest it read, so a record written before a restart and one written after never collide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "engine/recorder/recording.hpp"

namespace backscroll::recorder {

std::string encode(const Keyframe& keyframe);
std::string encode(const SizeChange& change);
std::string encode(const TrackEvent& event);
std::string encode(const TimeSample& sample);

struct LoadReport {
  std::size_t records = 0;     // read and applied
  std::size_t unreadable = 0;  // of an unknown type or malformed: skipped
};

// Applies `records` (in the order written) to `recording`, then drops what lies below
// `oldest`, the oldest byte the transcript still holds (its keyframes cannot be replayed).
LoadReport load(Recording& recording, std::span<const std::string> records, Cursor oldest);

}  // namespace backscroll::recorder
