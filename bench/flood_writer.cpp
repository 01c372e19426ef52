// flood_writer: the child of bench/flood. Writes `bytes` of ~70-column text lines to stdout as
// fast as the PTY takes them, in 64 KiB writes, then exits. Deterministic content.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  const unsigned long long total = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1ull << 30;
  std::string block;
  for (int line = 0; block.size() < 65536 - 80; ++line) {
    char buf[96];
    const int n = std::snprintf(buf, sizeof buf,
                                "%06d the quick brown fox jumps over the lazy dog 0123456789 abcdefgh\n",
                                line);
    block.append(buf, static_cast<std::size_t>(n));
  }
  unsigned long long written = 0;
  while (written < total) {
    const std::size_t n = static_cast<std::size_t>(
        std::min<unsigned long long>(block.size(), total - written));
    const ssize_t w = ::write(1, block.data(), n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    written += static_cast<unsigned long long>(w);
  }
  return 0;
}
