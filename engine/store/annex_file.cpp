#include "engine/store/annex_file.hpp"

#include <cstring>

#include "engine/store/crc32c.hpp"
#include "engine/store/cursor_file_name.hpp"
#include "engine/store/little_endian.hpp"

namespace backscroll::store {
namespace {

constexpr char kHeader[kAnnexHeaderBytes] = {'B', 'S', 'A', 'N', '0', '0', '0', '1'};
constexpr char kRecordMagic[4] = {'B', 'S', 'R', '1'};

std::uint32_t record_check(std::uint32_t length, const char* bytes) {
  char fields[8];
  le::put32(fields, length);
  le::put32(fields + 4, crc32c(bytes, length));
  return crc32c(fields, sizeof fields);
}

// The intact record at `offset` of `file`: its length, or nullopt.
std::optional<std::uint32_t> intact_at(std::string_view file, std::size_t offset) {
  if (file.size() - offset < kAnnexRecordHeaderBytes) return std::nullopt;
  const char* h = file.data() + offset;
  if (std::memcmp(h, kRecordMagic, sizeof kRecordMagic) != 0) return std::nullopt;
  const std::uint32_t length = le::get32(h + 4);
  if (length == 0 || length > kMaxAnnexRecord ||
      length > file.size() - offset - kAnnexRecordHeaderBytes)
    return std::nullopt;
  if (record_check(length, h + kAnnexRecordHeaderBytes) != le::get32(h + 8)) return std::nullopt;
  return length;
}

}  // namespace

std::string annex_name(Cursor start) { return cursor_file_name(start, ".rec"); }

std::optional<Cursor> annex_start(const std::string& name) {
  return cursor_of_file_name(name, ".rec");
}

std::string_view annex_header() noexcept { return {kHeader, sizeof kHeader}; }

std::string frame_annex_record(std::string_view record) {
  std::string out(kAnnexRecordHeaderBytes, '\0');
  const auto length = static_cast<std::uint32_t>(record.size());
  std::memcpy(out.data(), kRecordMagic, sizeof kRecordMagic);
  le::put32(out.data() + 4, length);
  le::put32(out.data() + 8, record_check(length, record.data()));
  out.append(record);
  return out;
}

AnnexScan scan_annex(std::string_view file) {
  AnnexScan scan;
  if (file.size() < kAnnexHeaderBytes && annex_header().starts_with(file)) {
    scan.torn_tail = true;  // created, its header not written whole
    return scan;
  }
  scan.header_ok = file.starts_with(annex_header());
  std::size_t offset = kAnnexHeaderBytes;
  scan.intact_bytes = scan.header_ok ? offset : 0;
  bool in_damage = !scan.header_ok;  // a damaged header: look for records anyway
  if (in_damage) ++scan.damaged;
  while (offset < file.size()) {
    if (const auto length = intact_at(file, offset)) {
      scan.records.emplace_back(file.substr(offset + kAnnexRecordHeaderBytes, *length));
      offset += kAnnexRecordHeaderBytes + *length;
      scan.intact_bytes = offset;
      in_damage = false;
      continue;
    }
    // The next record starts with its magic: look for it after this offset.
    const std::size_t next =
        file.find(std::string_view(kRecordMagic, sizeof kRecordMagic), offset + 1);
    if (next == std::string_view::npos) {
      scan.torn_tail = !in_damage;  // nothing intact follows: the end of an append cut short
      break;
    }
    if (!in_damage) ++scan.damaged;
    in_damage = true;
    offset = next;
  }
  return scan;
}

}  // namespace backscroll::store
