// Unguessable values from the kernel's random pool (getrandom): ring nonces, segment-name
// suffixes, the bridge's tokens. getrandom blocks only until the pool is first initialised, at
// boot; for requests this small it then never fails but for EINTR, which is retried.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace backscroll {

void random_bytes(std::span<std::byte> out) noexcept;
// Lowercase hexadecimal, two digits per byte.
std::string to_hex(std::span<const std::byte> bytes);
// `bytes` random bytes as 2 x `bytes` hex digits.
std::string random_hex(std::size_t bytes);

}  // namespace backscroll
