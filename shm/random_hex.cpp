#include "shm/random_hex.hpp"

#include <sys/random.h>

#include <vector>

namespace backscroll {

void random_bytes(std::span<std::byte> out) noexcept {
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::getrandom(out.data() + got, out.size() - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
    // n < 0: only EINTR is possible for a request this small once the pool is initialised.
  }
}

std::string to_hex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (const std::byte b : bytes) {
    const auto v = static_cast<unsigned>(b);
    out += kDigits[v >> 4];
    out += kDigits[v & 0xF];
  }
  return out;
}

std::string random_hex(std::size_t bytes) {
  std::vector<std::byte> raw(bytes);
  random_bytes(raw);
  return to_hex(raw);
}

}  // namespace backscroll
