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
// The crc32 instruction over `n` bytes from the raw state `crc` (no inversions): one 8-byte
// step per instruction, each waiting for the one before (3 cycles of latency).
__attribute__((target("sse4.2"))) std::uint64_t crc_run(std::uint64_t crc, const unsigned char* p,
                                                        std::size_t n) noexcept {
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);  // unaligned, little-endian: the order the CRC consumes bytes in
    crc = __builtin_ia32_crc32di(crc, word);
  }
  auto c = static_cast<std::uint32_t>(crc);
  for (; n > 0; --n, ++p) c = __builtin_ia32_crc32qi(c, *p);
  return c;
}

// Three streams at once. The raw CRC is linear: the state after A followed by B is
// shift(state after A, |B|) XOR (the state after B from 0), where shift(s, k) is the state
// after k zero bytes from s. So three blocks of kBlock bytes run from 0, 0 and the state so far
// in parallel (the instruction's throughput is one per cycle: three times the speed of one
// chain) and are joined with shift(., kBlock), a linear map on 32 bits kept as four tables of
// 256 entries, one per byte of the state, built with the instruction itself.
constexpr std::size_t kBlock = 1024;

struct ShiftTables {
  std::uint32_t t[4][256];
  __attribute__((target("sse4.2"))) ShiftTables() noexcept {
    static const unsigned char zeros[kBlock] = {};
    for (int i = 0; i < 4; ++i)
      for (std::uint32_t b = 0; b < 256; ++b)
        t[i][b] = static_cast<std::uint32_t>(crc_run(b << (8 * i), zeros, kBlock));
  }
  std::uint32_t shift(std::uint32_t s) const noexcept {
    return t[0][s & 0xffu] ^ t[1][s >> 8 & 0xffu] ^ t[2][s >> 16 & 0xffu] ^ t[3][s >> 24];
  }
};

__attribute__((target("sse4.2"))) std::uint32_t by_instruction(const void* data,
                                                               std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t crc = 0xFFFFFFFFu;
  if (n >= 3 * kBlock) {
    static const ShiftTables tables;
    for (; n >= 3 * kBlock; n -= 3 * kBlock, p += 3 * kBlock) {
      std::uint64_t a = crc;
      std::uint64_t b = 0;
      std::uint64_t c = 0;
      for (std::size_t i = 0; i < kBlock; i += 8) {
        std::uint64_t wa, wb, wc;
        std::memcpy(&wa, p + i, 8);
        std::memcpy(&wb, p + kBlock + i, 8);
        std::memcpy(&wc, p + 2 * kBlock + i, 8);
        a = __builtin_ia32_crc32di(a, wa);
        b = __builtin_ia32_crc32di(b, wb);
        c = __builtin_ia32_crc32di(c, wc);
      }
      const std::uint32_t ab =
          tables.shift(static_cast<std::uint32_t>(a)) ^ static_cast<std::uint32_t>(b);
      crc = tables.shift(ab) ^ static_cast<std::uint32_t>(c);
    }
  }
  return static_cast<std::uint32_t>(crc_run(crc, p, n)) ^ 0xFFFFFFFFu;
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
