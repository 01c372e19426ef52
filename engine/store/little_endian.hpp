// Fixed-width little-endian fields of the engine's on-disk formats (transcript segments, the
// cursor lease), byte by byte so they read the same on any host and from any alignment.
#pragma once

#include <cstdint>

namespace backscroll::store::le {

inline void put64(char* at, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<char>(v >> (8 * i));
}
inline void put32(char* at, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<char>(v >> (8 * i));
}
inline std::uint64_t get64(const char* at) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(at[i]);
  return v;
}
inline std::uint32_t get32(const char* at) noexcept {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(at[i]);
  return v;
}

}  // namespace backscroll::store::le
