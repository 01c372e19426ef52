// Where an output frame may end: never inside a UTF-8 character (issue 6, docs/bridge.md).
// A browser's xterm.js keeps a character split across two writes, but a frame is also what a
// phone's client may decode as text on its own, so the bridge keeps characters whole. Bytes that
// are not UTF-8 at all are sent as they are: only a trailing lead byte whose continuation bytes
// have not arrived yet is held back, so at most 3 bytes ever wait.
#pragma once

#include <cstddef>
#include <span>

namespace backscroll::bridge {

// How many bytes a UTF-8 sequence starting with `lead` has; 0 for a continuation byte or a byte
// that never starts a sequence (0xC0, 0xC1, 0xF5..0xFF).
constexpr std::size_t utf8_sequence_length(unsigned char lead) noexcept {
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF5) return 4;
  return 0;
}

// The longest prefix of `bytes` that does not end inside a character whose remaining bytes may
// still come: bytes.size(), less the incomplete sequence at the end (1-3 bytes) if there is one.
// A sequence that is already broken (a lead byte followed by too few continuation bytes and then
// something else) is not held: it can never be completed.
inline std::size_t utf8_complete_prefix(std::span<const std::byte> bytes) noexcept {
  const std::size_t n = bytes.size();
  // A character is at most 4 bytes: only the last 3 can start one that is still incomplete.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto byte = static_cast<unsigned char>(bytes[n - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back for its lead
    const std::size_t length = utf8_sequence_length(byte);
    return length > back ? n - back : n;  // incomplete: hold its bytes back
  }
  return n;
}

}  // namespace backscroll::bridge
