#include "engine/store/crc32c.hpp"

#include <cstring>

#include <boost/crc.hpp>

namespace backscroll::store {
namespace {

using Table = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

std::uint32_t by_table(const void* data, std::size_t n) noexcept {
  Table crc;
  crc.process_bytes(data, n);
  return crc.checksum();
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t by_instruction(const void* data,
                                                               std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t crc = 0xFFFFFFFFu;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);  // unaligned, little-endian: the order the CRC consumes bytes in
    crc = __builtin_ia32_crc32di(crc, word);
  }
  auto c = static_cast<std::uint32_t>(crc);
  for (; n > 0; --n, ++p) c = __builtin_ia32_crc32qi(c, *p);
  return c ^ 0xFFFFFFFFu;
}

bool has_instruction() noexcept {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t n) noexcept {
#if defined(__x86_64__)
  if (has_instruction()) return by_instruction(data, n);
#endif
  return by_table(data, n);
}

}  // namespace backscroll::store
