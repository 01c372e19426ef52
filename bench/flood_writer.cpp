// flood_writer: the child of bench/flood. Writes `bytes` of ~70-column text lines to stdout as
// fast as the PTY takes them, in 64 KiB writes, then exits. Deterministic content.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "bench/flood_block.hpp"

int main(int argc, char** argv) {
  const unsigned long long total = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1ull << 30;
  const std::string block = backscroll::bench::flood_block();
  unsigned long long written = 0;
  while (written < total) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<unsigned long long>(block.size(), total - written));
    const ssize_t w = ::write(1, block.data(), n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    written += static_cast<unsigned long long>(w);
  }
  return 0;
}
