// The text flood_writer prints (bench/flood_writer.cpp): one block of ~70-column numbered lines,
// written again and again, the last write cut to the total. A reader of the flood can check
// every byte: on a cooked PTY (ONLCR) the stream is `cooked_flood_block()` repeated, cut at the
// cooked length of the total.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace backscroll::bench {

inline std::string flood_block() {
  std::string block;
  for (int line = 0; block.size() < 65536 - 80; ++line) {
    char buf[96];
    const int n = std::snprintf(
        buf, sizeof buf, "%06d the quick brown fox jumps over the lazy dog 0123456789 abcdefgh\n",
        line);
    block.append(buf, static_cast<std::size_t>(n));
  }
  return block;
}

// The block as the PTY's line discipline passes it on: every "\n" as "\r\n".
inline std::string cooked_flood_block() {
  std::string cooked;
  for (const char c : flood_block()) {
    if (c == '\n') cooked += '\r';
    cooked += c;
  }
  return cooked;
}

// How many bytes a reader gets for a flood of `raw_bytes`.
inline std::uint64_t cooked_flood_bytes(std::uint64_t raw_bytes) {
  const std::string block = flood_block();
  std::uint64_t newlines_per_block = 0;
  for (const char c : block) newlines_per_block += c == '\n';
  const std::uint64_t whole = raw_bytes / block.size();
  std::uint64_t newlines = whole * newlines_per_block;
  for (std::uint64_t i = 0; i < raw_bytes % block.size(); ++i) newlines += block[i] == '\n';
  return raw_bytes + newlines;
}

}  // namespace backscroll::bench
