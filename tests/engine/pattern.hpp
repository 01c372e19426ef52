// The deterministic output stream of the flood tests: written by engine_test_child's `pattern`
// command, recomputed by the tests at any cursor. The stream is fixed-width lines of printable
// ASCII, so the byte at any offset is known without generating what precedes it (a reader that
// resyncs after a lap can still check every byte it reads):
//
//   line i = "<seed: 4 hex> <i: 12 digits> <46 bytes derived from seed and i>\n"   (64 bytes)
//
// A line's number makes it unique, so a byte served from the wrong lap or offset never matches.
// A cooked PTY (ONLCR) turns every "\n" into "\r\n": with `crlf` the stream is what the ring of
// such a PTY must hold (65-byte lines).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>

namespace backscroll::testing {

class Pattern {
 public:
  static constexpr std::size_t kLineBytes = 64;  // as written by the program, "\n" included

  Pattern(std::uint32_t seed, bool crlf) : seed_(seed & 0xffff), crlf_(crlf) {}

  std::size_t line_bytes() const noexcept { return kLineBytes + (crlf_ ? 1 : 0); }

  // Line `i` into `out` (line_bytes() bytes).
  void line(std::uint64_t i, char* out) const noexcept {
    char head[32];
    std::snprintf(head, sizeof head, "%04x %012llu ", static_cast<unsigned>(seed_),
                  static_cast<unsigned long long>(i % 1'000'000'000'000ULL));
    std::memcpy(out, head, kHead);
    std::uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL ^ (std::uint64_t{seed_} << 40);
    for (std::size_t j = kHead; j < kLineBytes - 1; ++j) {
      x ^= x >> 29;
      x *= 0xbf58476d1ce4e5b9ULL;
      out[j] = static_cast<char>('!' + (x >> 32) % 94);  // '!'..'~': printable, no space
    }
    if (crlf_) {
      out[kLineBytes - 1] = '\r';
      out[kLineBytes] = '\n';
    } else {
      out[kLineBytes - 1] = '\n';
    }
  }

  // The bytes at offsets [offset, offset + out.size()) of the stream.
  void fill(std::uint64_t offset, std::span<char> out) const noexcept {
    char buf[kLineBytes + 1];
    const std::size_t width = line_bytes();
    std::size_t done = 0;
    while (done < out.size()) {
      const std::uint64_t at = offset + done;
      line(at / width, buf);
      const std::size_t in_line = static_cast<std::size_t>(at % width);
      const std::size_t n = std::min(width - in_line, out.size() - done);
      std::memcpy(out.data() + done, buf + in_line, n);
      done += n;
    }
  }

  // Offset of the first byte of `bytes` that differs from the stream at `offset`, if any.
  std::optional<std::uint64_t> first_mismatch(std::uint64_t offset,
                                              std::span<const std::byte> bytes) const {
    char buf[4096];
    for (std::size_t done = 0; done < bytes.size();) {
      const std::size_t n = std::min(sizeof buf, bytes.size() - done);
      fill(offset + done, {buf, n});
      if (std::memcmp(buf, bytes.data() + done, n) != 0) {
        for (std::size_t k = 0; k < n; ++k) {
          if (static_cast<char>(bytes[done + k]) != buf[k]) return offset + done + k;
        }
      }
      done += n;
    }
    return std::nullopt;
  }

  // Length of the stream a program produces by writing `written` raw bytes, as this Pattern
  // sees it (one more byte per complete or partial line when crlf).
  std::uint64_t rendered_length(std::uint64_t written) const noexcept {
    if (!crlf_) return written;
    return written + written / kLineBytes;  // a "\n" is the last byte of each complete line
  }

 private:
  static constexpr std::size_t kHead = 4 + 1 + 12 + 1;
  std::uint32_t seed_;
  bool crlf_;
};

}  // namespace backscroll::testing
