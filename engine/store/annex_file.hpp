// Annex files: records about a transcript's stream that are not its bytes (the flight recorder's
// keyframes, events, size changes and time samples; docs/transcripts.md, "Annexes"), kept beside
// the segments and dropped with them. The store does not read the records' contents.
//
//   <folder>/<cursor: 16 hex digits>.rec
//     header   "BSAN0001"                                                            8 bytes
//     records  "BSR1", length (u32, 1..kMaxAnnexRecord), check (u32), the record's bytes
//              check = CRC-32C of (length, CRC-32C of the bytes)
//   (little-endian). Records are appended whole, header first: a crash leaves at most one torn
//   record at the end, and damage inside costs only the records it touches (a reader finds the
//   next intact one by its magic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shm/cursor.hpp"

namespace backscroll::store {

inline constexpr std::size_t kAnnexHeaderBytes = 8;
inline constexpr std::size_t kAnnexRecordHeaderBytes = 12;
inline constexpr std::uint32_t kMaxAnnexRecord = 16u << 20;
// A file grown past this (by something else) is read no further.
inline constexpr std::uint64_t kMaxAnnexFileBytes = 256u << 20;

// "<16 hex digits>.rec" for `start`, and back (nullopt for any other name).
std::string annex_name(Cursor start);
std::optional<Cursor> annex_start(const std::string& name);

// The file header, and one record framed for appending.
std::string_view annex_header() noexcept;
std::string frame_annex_record(std::string_view record);

// What a file holds: its intact records in order; how many stretches of it were damaged, a
// damaged header included (a tail that is no record is not counted: torn_tail); the offset
// after its last intact record (where a torn tail starts).
struct AnnexScan {
  std::vector<std::string> records;
  std::size_t damaged = 0;
  bool torn_tail = false;
  std::uint64_t intact_bytes = 0;
  bool header_ok = false;
};
AnnexScan scan_annex(std::string_view file);

}  // namespace backscroll::store
