// CRC-32C (Castagnoli), the checksum of transcript records: the SSE4.2 crc32 instruction where
// the CPU has it (~10 GB/s, so the writer thread's checksums cost the drain nothing measurable),
// a table otherwise. Same value either way: crc32c("123456789") == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>

namespace backscroll::store {

std::uint32_t crc32c(const void* data, std::size_t n) noexcept;

}  // namespace backscroll::store
