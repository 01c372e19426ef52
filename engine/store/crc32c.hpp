// CRC-32C (Castagnoli), the checksum of transcript records: the SSE4.2 crc32 instruction where
// the CPU has it, three streams at once on long inputs (one chain of it was a fifth of the
// writer thread's time during a flood), a table otherwise. Same value every way:
// crc32c("123456789") == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>

namespace backscroll::store {

std::uint32_t crc32c(const void* data, std::size_t n) noexcept;

}  // namespace backscroll::store
