// engine_test_child: the programs the engine tests run, either as an actor (on the engine's PTY)
// or directly.
//
//   pattern SEED BYTES raw|cooked [STEP [exit|wait]]
//       Writes the first BYTES bytes of the Pattern stream (tests/engine/pattern.hpp) to stdout.
//       raw: puts the terminal in raw mode first, so the ring must hold the stream byte for
//       byte; cooked: leaves it as the engine made it (ONLCR: the ring holds "\r\n" lines).
//       STEP > 0: writes the first STEP bytes at once, then reads commands from stdin (the test
//       paces it): 's' writes 100 more bytes, 'q' stops early, any other byte STEP more.
//       (Input sent before the first step is committed could be echoed by the still-cooked
//       terminal.)
//       Then exits 0, or with `wait` sleeps until a signal ends it.
//   fds
//       Prints "fd N TARGET" for every fd it inherited (not the one it lists them with), then
//       "fds done".
//   queries
//       Puts the terminal in raw mode, writes terminal queries (DA, DA2, CPR, DECRQM, DECRQSS,
//       OSC 10/11 colour queries, a title report), then reads its input for 1.5 s and prints
//       "replies N" with the number of bytes that arrived: no one attached answers them.
//   scribble SEGMENT
//       Maps the ring segment read-only as any reader does, reports whether mprotect can make
//       it writable, then writes to it: the kernel must kill it with SIGSEGV.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "shm/ring_layout.hpp"
#include "shm/segment.hpp"
#include "tests/engine/pattern.hpp"

namespace {

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

int run_pattern(int argc, char** argv) {
  if (argc < 5) return 64;
  const auto seed = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 0));
  const std::uint64_t total = std::strtoull(argv[3], nullptr, 0);
  const bool raw = std::string_view(argv[4]) == "raw";
  const std::uint64_t step = argc > 5 ? std::strtoull(argv[5], nullptr, 0) : 0;
  const bool wait = argc > 6 && std::string_view(argv[6]) == "wait";
  if (raw) {
    termios tio{};
    if (::tcgetattr(0, &tio) != 0) return 65;
    ::cfmakeraw(&tio);
    if (::tcsetattr(0, TCSANOW, &tio) != 0) return 66;
  }
  const backscroll::testing::Pattern pattern(seed, /*crlf=*/false);
  std::vector<char> buf(1 << 16);
  std::uint64_t written = 0;
  while (written < total) {
    std::uint64_t burst = total - written;
    if (step > 0) burst = std::min(burst, step);
    if (step > 0 && written > 0) {
      char command = 0;
      const ssize_t r = ::read(0, &command, 1);
      if (r <= 0) return 67;
      if (command == 'q') break;
      if (command == 's') burst = std::min<std::uint64_t>(burst, 100);
    }
    const std::uint64_t burst_end = written + burst;
    while (written < burst_end) {
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), burst_end - written));
      pattern.fill(written, {buf.data(), n});
      if (!write_all(1, buf.data(), n)) return 68;
      written += n;
    }
  }
  if (wait) {
    for (;;) ::pause();
  }
  return 0;
}

int run_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 70;
  const int own = ::dirfd(dir);
  std::string out;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd == own) continue;
    char target[512] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    out += "fd " + std::to_string(fd) + " " +
           (n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?") + "\n";
  }
  ::closedir(dir);
  out += "fds done\n";
  return write_all(1, out.data(), out.size()) ? 0 : 71;
}

// scribble PID HEADER_FD DATA_FD CAPACITY: maps a ring as a reader does, then writes to it.
int run_scribble(int argc, char** argv) {
  using backscroll::shm::Sealing;
  using backscroll::shm::Segment;
  if (argc < 6) return 64;
  const pid_t pid = std::atoi(argv[2]);
  auto header = Segment::open_read_only(pid, std::atoi(argv[3]), backscroll::shm::kHeaderBytes,
                                        Sealing::size_and_writes);
  auto data = Segment::open_read_only(pid, std::atoi(argv[4]), std::strtoull(argv[5], nullptr, 10),
                                      Sealing::size);
  if (!header || !data) {
    std::printf("open failed: %s\n", (header ? data.error() : header.error()).describe().c_str());
    return 72;
  }
  // Turning the read-only mapping writable must fail: the object was opened O_RDONLY.
  const long page = ::sysconf(_SC_PAGESIZE);
  const int rc = ::mprotect(data->data(), static_cast<std::size_t>(page), PROT_READ | PROT_WRITE);
  std::printf("mprotect %d %s\n", rc, rc == 0 ? "ok" : std::strerror(errno));
  std::fflush(stdout);
  auto* committed = reinterpret_cast<volatile std::uint64_t*>(
      header->data() + offsetof(backscroll::shm::RingHeader, committed));
  auto* bytes = reinterpret_cast<volatile char*>(data->data());
  bytes[0] = 'X';  // must fault
  *committed = 0;
  std::printf("survived\n");
  return 0;
}

int run_queries() {
  termios t{};
  if (::tcgetattr(0, &t) == 0) {
    ::cfmakeraw(&t);
    ::tcsetattr(0, TCSANOW, &t);
  }
  static const char kQueries[] =
      "\x1b[c\x1b[>c\x1b[6n\x1b[?25$p\x1bP$qm\x1b\\\x1b]10;?\x07\x1b]11;?\x1b\\\x1b[21t\r\n";
  if (!write_all(1, kQueries, sizeof kQueries - 1)) return 71;
  std::size_t replies = 0;
  pollfd p{0, POLLIN, 0};
  while (::poll(&p, 1, 1500) == 1) {
    char buf[256];
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n <= 0) break;
    replies += static_cast<std::size_t>(n);
  }
  const std::string line = "replies " + std::to_string(replies) + "\r\n";
  return write_all(1, line.data(), line.size()) ? 0 : 71;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  const std::string_view command = argv[1];
  if (command == "pattern") return run_pattern(argc, argv);
  if (command == "fds") return run_fds();
  if (command == "scribble") return run_scribble(argc, argv);
  if (command == "queries") return run_queries();
  return 64;
}
