// The ring across real processes, through sealed memfds. A forked reader maps the ring read-only
// and follows ~256 MiB of checksummed records (zero-copy read+intact and copy), sleeping on the
// futex: every byte it accepts is exact, and a lapped reader resyncs to the oldest cursor. Also:
// the read-only mapping faults on write, no process can resize a ring or forge its header, a
// reader maps only what was announced, a dead engine's ring is stale_segment, and wait()
// returns ready/timeout/closed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "shm/ring_layout.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"
#include "shm/segment.hpp"

namespace backscroll::shm {
namespace {

using namespace std::chrono_literals;

// --- child processes and pipes -------------------------------------------------------------

// Runs `body` in a forked child that exits with its return value and never returns into the
// test framework. The child dies with the parent.
template <class Body>
pid_t fork_child(Body&& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int code = 100;
    try {
      code = body();
    } catch (...) {
      code = 101;
    }
    ::_exit(code);
  }
  return pid;
}

int wait_for_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

class Pipe {
 public:
  Pipe() {
    if (::pipe(fds_) != 0) fds_[0] = fds_[1] = -1;
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    close_read();
    close_write();
  }
  bool ok() const { return fds_[0] >= 0; }
  void close_read() {
    if (fds_[0] >= 0) ::close(fds_[0]);
    fds_[0] = -1;
  }
  void close_write() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }
  bool write_all(const void* data, std::size_t n) {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t k = ::write(fds_[1], p, n);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return false;
      p += k;
      n -= static_cast<std::size_t>(k);
    }
    return true;
  }
  // False on EOF (the child died) or when nothing arrived within `limit` (a hang guard only).
  bool read_all(void* data, std::size_t n, std::chrono::milliseconds limit = 120s) {
    auto* p = static_cast<char*>(data);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (n > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd pfd{fds_[0], POLLIN, 0};
      const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return false;
      const ssize_t k = ::read(fds_[0], p, n);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return false;
      p += k;
      n -= static_cast<std::size_t>(k);
    }
    return true;
  }
  template <class T>
  bool send(const T& value) {
    return write_all(&value, sizeof value);
  }
  template <class T>
  bool receive(T& value, std::chrono::milliseconds limit = 120s) {
    return read_all(&value, sizeof value, limit);
  }

 private:
  int fds_[2];
};

// Blocks until `pid` sits in a futex syscall (it is asleep in RingReader::wait), so that a
// wake-up the test sends next must really wake a sleeper. Best effort where /proc hides it.
void await_futex_sleep(pid_t pid) {
  const std::string futex = std::to_string(SYS_futex);
  for (int i = 0; i < 10'000; ++i) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/syscall");
    std::string first;
    if (!(in >> first)) return;  // not readable here: fall back to racing the sleeper
    if (first == futex) return;
    std::this_thread::sleep_for(1ms);
  }
}

// --- the checksummed stream ----------------------------------------------------------------
// Each 64-byte record holds its own cursor, six words derived from it and a hash of the seven:
// a byte served from the wrong cursor, twice, out of order or torn never matches.

constexpr std::uint64_t kRecordBytes = 64;

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void make_record(std::uint64_t index, std::uint64_t seed, std::byte* out) {
  std::uint64_t w[8];
  w[0] = index * kRecordBytes;
  std::uint64_t h = seed;
  for (int i = 1; i < 7; ++i) w[i] = mix(seed ^ (index * 8 + static_cast<std::uint64_t>(i)));
  for (int i = 0; i < 7; ++i) h = mix(h ^ w[i]);
  w[7] = h;
  std::memcpy(out, w, sizeof w);
}

// The stream's bytes [from, from + out.size()).
void fill_stream(std::uint64_t from, std::uint64_t seed, std::span<std::byte> out) {
  std::byte record[kRecordBytes];
  std::size_t done = 0;
  while (done < out.size()) {
    const std::uint64_t c = from + done;
    make_record(c / kRecordBytes, seed, record);
    const std::size_t offset = static_cast<std::size_t>(c % kRecordBytes);
    const std::size_t n = std::min(out.size() - done, kRecordBytes - offset);
    std::memcpy(out.data() + done, record + offset, n);
    done += n;
  }
}

// Number of 64-byte records (or pieces of one) in `bytes` that differ from the stream.
std::uint64_t count_mismatches(std::uint64_t from, std::uint64_t seed,
                               std::span<const std::byte> bytes, std::vector<std::byte>& scratch) {
  std::uint64_t bad = 0;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const std::size_t n = std::min(bytes.size() - done, scratch.size());
    fill_stream(from + done, seed, std::span(scratch.data(), n));
    for (std::size_t i = 0; i < n; i += kRecordBytes) {
      const std::size_t k = std::min<std::size_t>(kRecordBytes, n - i);
      if (std::memcmp(scratch.data() + i, bytes.data() + done + i, k) != 0) ++bad;
    }
    done += n;
  }
  return bad;
}

struct WriterPlan {
  std::uint64_t bytes = 0;         // appended after the reader is ready
  std::size_t max_append = 65536;  // append sizes are uniform in [1, max_append]
  int appends_per_wake = 8;
  bool yield_per_batch = false;
};

void write_stream(RingWriter& writer, std::uint64_t seed, std::uint64_t bytes, std::mt19937_64& rng,
                  const WriterPlan& plan) {
  std::vector<std::byte> buffer(plan.max_append);
  std::uniform_int_distribution<std::size_t> size(1, plan.max_append);
  int appended = 0;
  while (bytes > 0) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(size(rng), bytes));
    fill_stream(value(writer.committed()), seed, std::span(buffer.data(), n));
    writer.append(std::span(buffer.data(), n));
    bytes -= n;
    if (++appended % plan.appends_per_wake == 0) {
      writer.wake_readers();
      if (plan.yield_per_batch) std::this_thread::yield();
    }
  }
  writer.wake_readers();
}

struct ReaderPlan {
  std::uint64_t start = 0;  // the first cursor the reader asks for
  std::uint64_t end = 0;    // stop once the cursor reaches this
  std::size_t max_read = 1 << 20;
  std::chrono::microseconds pause_in_place{0};  // between read() and using the spans
};

// What the child reports over the pipe.
struct ReaderReport {
  std::uint64_t verified = 0;       // bytes accepted and checked against the stream
  std::uint64_t skipped = 0;        // bytes jumped over by resyncs
  std::uint64_t resyncs = 0;        // cursor_expired (from read/copy or a failed intact)
  std::uint64_t torn_discards = 0;  // in-place spans dropped because intact() said no
  std::uint64_t errors = 0;         // accepted bytes that were wrong, or protocol violations
  std::uint64_t first_expired_cursor = 0;
  std::uint64_t end = 0;
  std::uint64_t waits = 0;
  std::uint32_t opened = 0;
  std::uint32_t reached_end = 0;
};

ReaderReport follow_stream(const RingAnnouncement& ring, std::uint64_t seed, const ReaderPlan& plan,
                           Pipe& ready) {
  ReaderReport report;
  auto reader = RingReader::open_announced(ring);
  const char go = 'r';
  ready.send(go);
  if (!reader) return report;
  report.opened = 1;
  std::vector<std::byte> scratch(1 << 16);
  std::vector<std::byte> out(256 * 1024);
  Cursor c{plan.start};
  const auto give_up = std::chrono::steady_clock::now() + 150s;  // hang guard, not an assertion

  auto resync = [&](Cursor oldest) {
    if (report.resyncs == 0) report.first_expired_cursor = value(oldest);
    ++report.resyncs;
    if (oldest <= c) {
      ++report.errors;  // an expired cursor must have a newer oldest
      return;
    }
    report.skipped += oldest - c;
    c = oldest;
  };
  auto failed = [&](const Error& e) {
    if (e.code == Errc::cursor_expired && e.cursor) {
      resync(Cursor{*e.cursor});
    } else {
      ++report.errors;
    }
  };

  for (std::uint64_t iteration = 0; value(c) < plan.end; ++iteration) {
    if (std::chrono::steady_clock::now() > give_up) break;
    std::uint64_t got = 0;
    if (iteration % 3 == 2) {
      const std::size_t want = std::min(out.size(), plan.max_read);
      auto end = reader->copy(c, std::span(out.data(), want));
      if (!end) {
        failed(end.error());
        continue;
      }
      got = *end - c;
      // copy() promises untorn bytes: any mismatch is an error.
      report.errors += count_mismatches(value(c), seed, std::span(out.data(), got), scratch);
      if (got > 0) {
        report.verified += got;
        c = *end;
      }
    } else {
      auto view = reader->read(c, plan.max_read);
      if (!view) {
        failed(view.error());
        continue;
      }
      got = view->size();
      if (got > 0) {
        // A slow reader holds the spans while the writer may lap it, then uses them.
        if (plan.pause_in_place.count() > 0) std::this_thread::sleep_for(plan.pause_in_place);
        std::uint64_t bad = count_mismatches(value(c), seed, view->first, scratch);
        bad += count_mismatches(value(c) + view->first.size(), seed, view->second, scratch);
        if (!reader->intact(c)) {
          // What we checked may be torn: mismatches in it prove nothing. Drop it and resync.
          ++report.torn_discards;
          resync(reader->oldest());
          continue;
        }
        report.errors += bad;
        report.verified += got;
        c = view->to;
      }
    }
    if (got == 0) {
      ++report.waits;
      if (reader->wait(c, 1000ms) == WaitResult::closed) ++report.errors;
    }
  }
  report.end = value(c);
  report.reached_end = value(c) == plan.end ? 1 : 0;
  return report;
}

std::string describe(const ReaderReport& r) {
  return "verified=" + std::to_string(r.verified) + " skipped=" + std::to_string(r.skipped) +
         " resyncs=" + std::to_string(r.resyncs) +
         " torn_discards=" + std::to_string(r.torn_discards) +
         " errors=" + std::to_string(r.errors) + " waits=" + std::to_string(r.waits) +
         " end=" + std::to_string(r.end);
}

// Creates a ring, writes `before_reader` bytes, forks a reader that follows the stream from
// cursor 0, writes the rest, and returns the reader's report.
struct StreamRun {
  std::uint64_t capacity;
  std::uint64_t before_reader;
  WriterPlan writer;
  ReaderPlan reader;
};

// What a process of the engine's own user managed to do to a ring it has only the announcement
// of: each bit one change the kernel let through (0: none).
enum TamperBit : int {
  kShrankData = 1 << 0,
  kGrewData = 1 << 1,
  kShrankHeader = 1 << 2,
  kGrewHeader = 1 << 3,
  kMappedHeaderWritable = 1 << 4,
  kWroteHeader = 1 << 5,
  kCouldNotOpen = 1 << 6,
};

// Tries, through /proc/<engine>/fd like any process of the user could, to truncate and grow
// both segments and to write the header's committed cursor.
int tamper_with(const RingAnnouncement& ring) {
  auto open_rw = [&](int fd) {
    return ::open(
        ("/proc/" + std::to_string(ring.engine_pid) + "/fd/" + std::to_string(fd)).c_str(),
        O_RDWR | O_CLOEXEC);
  };
  const int data = open_rw(ring.data_fd);
  const int header = open_rw(ring.header_fd);
  if (data < 0 || header < 0) return kCouldNotOpen;
  int done = 0;
  if (::ftruncate(data, 0) == 0) done |= kShrankData;
  if (::ftruncate(data, static_cast<off_t>(2 * ring.capacity)) == 0 ||
      ::posix_fallocate(data, 0, static_cast<off_t>(2 * ring.capacity)) == 0) {
    done |= kGrewData;
  }
  if (::ftruncate(header, 0) == 0) done |= kShrankHeader;
  if (::ftruncate(header, 2 * kHeaderBytes) == 0) done |= kGrewHeader;
  void* writable = ::mmap(nullptr, kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, header, 0);
  if (writable != MAP_FAILED) {
    done |= kMappedHeaderWritable;
    static_cast<RingHeader*>(writable)->committed += 1u << 20;
  }
  const std::uint64_t forged = ~0ull;
  if (::pwrite(header, &forged, sizeof forged, offsetof(RingHeader, committed)) > 0) {
    done |= kWroteHeader;
  }
  ::close(data);
  ::close(header);
  return done;
}

// With `tampered`, a third process tries tamper_with() while the reader follows the stream and
// stores what went through.
ReaderReport run_stream(const StreamRun& run, int* tampered = nullptr) {
  const std::uint64_t seed = 0x5eed0000ULL + static_cast<std::uint64_t>(::getpid());
  auto writer = RingWriter::create(RingIdentity{"proc", seed, run.capacity, Cursor{0}});
  EXPECT_TRUE(writer.has_value()) << writer.error().describe();
  if (!writer) return {};
  std::mt19937_64 rng(seed);
  write_stream(*writer, seed, run.before_reader, rng, run.writer);

  Pipe ready;
  Pipe results;
  EXPECT_TRUE(ready.ok() && results.ok());
  ReaderPlan plan = run.reader;
  plan.end = run.before_reader + run.writer.bytes;
  const pid_t child = fork_child([&] {
    ready.close_read();
    results.close_read();
    const ReaderReport report = follow_stream(writer->announcement(), seed, plan, ready);
    return results.send(report) ? 0 : 3;
  });
  ready.close_write();
  results.close_write();
  char go = 0;
  EXPECT_TRUE(ready.receive(go)) << "the reader never opened the ring";
  const std::uint64_t half = run.writer.bytes / 2;
  write_stream(*writer, seed, half, rng, run.writer);
  if (tampered != nullptr) {
    Pipe outcome;
    const pid_t tamperer = fork_child([&] {
      outcome.close_read();
      return outcome.send(tamper_with(writer->announcement())) ? 0 : 3;
    });
    outcome.close_write();
    *tampered = kCouldNotOpen;
    EXPECT_TRUE(outcome.receive(*tampered));
    wait_for_exit(tamperer);
  }
  write_stream(*writer, seed, run.writer.bytes - half, rng, run.writer);

  ReaderReport report;
  const bool got = results.receive(report, 180s);
  if (!got) ::kill(child, SIGKILL);
  const int status = wait_for_exit(child);
  EXPECT_TRUE(got) << "no report from the reader";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "reader status " << status;
  return report;
}

TEST(RingProcess, ReaderInAnotherProcessAcceptsOnlyExactContiguousBytes) {
  // A big ring and a reader that starts before the writer: it usually keeps up, but the test
  // asserts only correctness, never how often it was lapped.
  StreamRun run{8 << 20, 0, WriterPlan{256ull << 20, 65536, 8, false},
                ReaderPlan{0, 0, 1 << 20, 0us}};
  const ReaderReport r = run_stream(run);
  SCOPED_TRACE(describe(r));
  EXPECT_EQ(r.opened, 1u);
  EXPECT_EQ(r.errors, 0u);
  EXPECT_EQ(r.reached_end, 1u);
  EXPECT_EQ(r.verified + r.skipped, 256ull << 20);
  EXPECT_GT(r.verified, 0u);
  std::printf("[ reader    ] %s\n", describe(r).c_str());
}

TEST(RingProcess, SlowReaderIsLappedAndResyncsToTheOldestCursor) {
  // The writer is ten laps ahead before the reader starts at cursor 0, so the first read is
  // cursor_expired no matter how the processes are scheduled.
  constexpr std::uint64_t kCapacity = kMinCapacity;
  StreamRun run{kCapacity, 10 * kCapacity, WriterPlan{16ull << 20, 4096, 4, true},
                ReaderPlan{0, 0, 16 * 1024, 200us}};
  const ReaderReport r = run_stream(run);
  SCOPED_TRACE(describe(r));
  EXPECT_EQ(r.opened, 1u);
  EXPECT_EQ(r.errors, 0u);
  EXPECT_GE(r.resyncs, 1u);
  EXPECT_GE(r.first_expired_cursor, 9 * kCapacity);
  EXPECT_EQ(r.reached_end, 1u);
  EXPECT_EQ(r.verified + r.skipped, 10 * kCapacity + (16ull << 20));
  EXPECT_GT(r.verified, 0u);
  std::printf("[ reader    ] %s\n", describe(r).c_str());
}

// A process of the engine's own user (the one user a reader cannot keep out: it may open the
// engine's descriptors) tries to truncate the ring under a reader in a third process, to grow
// it and to forge its header. The kernel refuses each (sealed memfds), the reader never faults,
// and every byte it accepts is exact.
TEST(RingProcess, ASameUserProcessCanNeitherResizeTheRingNorForgeItsHeaderUnderAReader) {
  StreamRun run{1 << 20, 0, WriterPlan{32ull << 20, 65536, 8, false},
                ReaderPlan{0, 0, 1 << 16, 0us}};
  int tampered = 0;
  const ReaderReport r = run_stream(run, &tampered);
  SCOPED_TRACE(describe(r));
  EXPECT_EQ(tampered, 0) << "bits of TamperBit the kernel let through";
  EXPECT_EQ(r.opened, 1u);
  EXPECT_EQ(r.errors, 0u);
  EXPECT_EQ(r.reached_end, 1u);
  EXPECT_EQ(r.verified + r.skipped, 32ull << 20);
}

// --- the read-only mapping ------------------------------------------------------------------

TEST(RingProcess, ReaderMappingFaultsOnWriteAndLeavesTheWriterDataIntact) {
  auto writer = RingWriter::create(RingIdentity{"ro", 1, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(writer.has_value()) << writer.error().describe();
  std::vector<std::byte> bytes(1000, std::byte{0x5a});
  writer->append(bytes);
  const std::vector<std::byte> before(writer->data(), writer->data() + kMinCapacity);
  const RingHeader header_before = *writer->header();

  const pid_t child = fork_child([&] {
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    auto reader = RingReader::open_announced(writer->announcement());
    if (!reader) return 2;
    auto view = reader->read(Cursor{0}, 10);
    if (!view || view->empty()) return 3;
    auto* byte = const_cast<volatile std::byte*>(view->first.data());
    *byte = std::byte{0x00};  // must fault: the mapping is read-only
    auto* committed = const_cast<volatile std::uint64_t*>(&reader->header().committed);
    *committed = 0;
    return 0;
  });
  const int status = wait_for_exit(child);
  ASSERT_TRUE(WIFSIGNALED(status))
      << "the child survived a write to its read-only mapping, status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_EQ(std::memcmp(writer->data(), before.data(), before.size()), 0);
  EXPECT_EQ(writer->header()->committed, header_before.committed);
  EXPECT_EQ(writer->header()->magic, kRingMagic);
}

// --- Segment -------------------------------------------------------------------------------

// /proc/self/fd/<fd> reopened with `flags`: what another process of this user could get.
int reopen(int fd, int flags) {
  return ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), flags | O_CLOEXEC);
}

TEST(Segment, CreatesASealedCloseOnExecMemfdOfZeroedBytes) {
  auto segment = Segment::create("bs-test", 3 * kPageBytes, Sealing::size);
  ASSERT_TRUE(segment.has_value()) << segment.error().describe();
  EXPECT_EQ(segment->size(), 3 * kPageBytes);
  EXPECT_TRUE(std::all_of(segment->data(), segment->data() + segment->size(),
                          [](std::byte b) { return b == std::byte{0}; }));
  ASSERT_GE(segment->fd(), 0);
  EXPECT_NE(::fcntl(segment->fd(), F_GETFD) & FD_CLOEXEC, 0)
      << "a spawned program would inherit it";
  EXPECT_EQ(::fcntl(segment->fd(), F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  auto header = Segment::create("bs-test", kPageBytes, Sealing::size_and_writes);
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(::fcntl(header->fd(), F_GET_SEALS),
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL | F_SEAL_FUTURE_WRITE);
  struct stat st {};
  ASSERT_EQ(::fstat(segment->fd(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

// The kernel, not the reader, keeps a segment's size: no process of any user can shrink it
// (its readers would fault with SIGBUS) or grow it, and nobody can add or remove a seal.
TEST(Segment, NoOneCanResizeItOrChangeItsSeals) {
  for (const Sealing sealing : {Sealing::size, Sealing::size_and_writes}) {
    auto segment = Segment::create("bs-test", 2 * kPageBytes, sealing);
    ASSERT_TRUE(segment.has_value());
    const int rw = reopen(segment->fd(), O_RDWR);
    ASSERT_GE(rw, 0) << std::strerror(errno);
    EXPECT_EQ(::ftruncate(rw, 0), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::ftruncate(rw, 4 * kPageBytes), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_NE(::posix_fallocate(rw, 0, 8 * kPageBytes), 0);
    EXPECT_EQ(::fcntl(rw, F_ADD_SEALS, F_SEAL_WRITE), -1);
    struct stat st {};
    ASSERT_EQ(::fstat(rw, &st), 0);
    EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), 2 * kPageBytes);
    ::close(rw);
  }
}

// A header segment: the creator's mapping stays the one way to change it. A descriptor reopened
// read-write (as any process of the user can) maps only read-only and cannot write().
TEST(Segment, AWriteSealedSegmentChangesOnlyThroughItsCreatorsMapping) {
  auto segment = Segment::create("bs-test", kPageBytes, Sealing::size_and_writes);
  ASSERT_TRUE(segment.has_value());
  segment->data()[7] = std::byte{0x42};  // the mapping made before the seal writes
  const int rw = reopen(segment->fd(), O_RDWR);
  ASSERT_GE(rw, 0);
  EXPECT_EQ(::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0), MAP_FAILED);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(::pwrite(rw, "x", 1, 7), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::fallocate(rw, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, kPageBytes), 0);
  ::close(rw);
  auto view =
      Segment::open_read_only(::getpid(), segment->fd(), kPageBytes, Sealing::size_and_writes);
  ASSERT_TRUE(view.has_value()) << view.error().describe();
  EXPECT_EQ(view->data()[7], std::byte{0x42});
}

TEST(Segment, OpensReadOnlyThroughProcWithTheSameBytes) {
  auto segment = Segment::create("bs-test", 2 * kPageBytes, Sealing::size);
  ASSERT_TRUE(segment.has_value());
  segment->data()[kPageBytes + 3] = std::byte{0x42};
  auto view = Segment::open_read_only(::getpid(), segment->fd(), 2 * kPageBytes, Sealing::size);
  ASSERT_TRUE(view.has_value()) << view.error().describe();
  EXPECT_EQ(view->size(), 2 * kPageBytes);
  EXPECT_EQ(view->fd(), -1);
  EXPECT_EQ(view->data()[kPageBytes + 3], std::byte{0x42});
  segment->data()[5] = std::byte{0x43};  // one object: later writes show through
  EXPECT_EQ(view->data()[5], std::byte{0x43});
  // The hole punch that gives an idle ring's pages back works on a data segment.
  ASSERT_EQ(::madvise(segment->data(), segment->size(), MADV_REMOVE), 0) << std::strerror(errno);
  EXPECT_EQ(view->data()[kPageBytes + 3], std::byte{0});
}

// Whatever descriptor number an announcement names, a reader maps only a sealed memfd of its
// own user of the announced size, and says why not otherwise.
TEST(Segment, OpensOnlyASealedMemfdOfThisUserOfTheExpectedSize) {
  auto refused = [](int fd, std::size_t bytes, Sealing sealing, const std::string& says) {
    auto view = Segment::open_read_only(::getpid(), fd, bytes, sealing);
    if (view.has_value()) return std::string("opened");
    if (view.error().code != Errc::bad_segment) return "code " + view.error().describe();
    if (view.error().message.find(says) == std::string::npos) return view.error().message;
    return std::string();
  };
  auto data = Segment::create("bs-test", kPageBytes, Sealing::size);
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(refused(data->fd(), 2 * kPageBytes, Sealing::size, "is 4096 bytes, not 8192"), "");
  EXPECT_EQ(refused(data->fd(), kPageBytes, Sealing::size_and_writes, "is not a sealed memfd"), "");

  const int unsealed = ::memfd_create("bs-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(::ftruncate(unsealed, kPageBytes), 0);
  EXPECT_EQ(refused(unsealed, kPageBytes, Sealing::size, "is not a sealed memfd"), "");
  ::close(unsealed);

  char path[] = "/tmp/bs-segment-XXXXXX";
  const int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  ::unlink(path);
  ASSERT_EQ(::ftruncate(file, kPageBytes), 0);
  EXPECT_EQ(refused(file, kPageBytes, Sealing::size, "is not a sealed memfd"), "");
  ::close(file);

  int fifo[2];
  ASSERT_EQ(::pipe(fifo), 0);
  EXPECT_EQ(refused(fifo[0], kPageBytes, Sealing::size, "is not a regular file"), "");
  EXPECT_EQ(refused(fifo[1], kPageBytes, Sealing::size, "is not a regular file"), "");  // no hang
  ::close(fifo[0]);
  ::close(fifo[1]);
}

TEST(Segment, AClosedDescriptorIsNoSuchActorAndAGoneProcessIsStale) {
  int fd = -1;
  {
    auto segment = Segment::create("bs-test", kPageBytes, Sealing::size);
    ASSERT_TRUE(segment.has_value());
    fd = segment->fd();
  }
  auto closed = Segment::open_read_only(::getpid(), fd, kPageBytes, Sealing::size);
  ASSERT_FALSE(closed.has_value());
  EXPECT_EQ(closed.error().code, Errc::no_such_actor) << closed.error().describe();

  const pid_t gone = fork_child([] { return 0; });
  wait_for_exit(gone);
  auto stale = Segment::open_read_only(gone, 3, kPageBytes, Sealing::size);
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().code, Errc::stale_segment) << stale.error().describe();
}

// Another user's process holds a sealed memfd: the kernel does not let this user open its
// descriptors (ptrace access), whatever an announcement says.
TEST(Segment, AnotherUsersDescriptorIsNeverOpened) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  Pipe numbers;
  Pipe done;
  ASSERT_TRUE(numbers.ok() && done.ok());
  const pid_t other = fork_child([&] {
    numbers.close_read();
    done.close_write();
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) return 2;
    auto segment = Segment::create("bs-evil", kPageBytes, Sealing::size);
    if (!segment) return 3;
    const int fd = segment->fd();
    numbers.send(fd);
    char end = 0;
    done.receive(end);  // keep it open until the test has tried
    return 0;
  });
  numbers.close_write();
  done.close_read();
  int fd = -1;
  ASSERT_TRUE(numbers.receive(fd));
  auto view = Segment::open_read_only(other, fd, kPageBytes, Sealing::size);
  const char end = 'x';
  done.send(end);
  EXPECT_EQ(WEXITSTATUS(wait_for_exit(other)), 0);
  ASSERT_FALSE(view.has_value()) << "another user's memfd was mapped";
  // A reader of an ordinary user is stopped by the kernel; root (which runs this test) may open
  // any descriptor, and is stopped by the owner check.
  EXPECT_TRUE(view.error().code == Errc::permission_denied ||
              (view.error().code == Errc::bad_segment &&
               view.error().message.find("belongs to uid 65534") != std::string::npos))
      << view.error().describe();
}

// --- RingReader::open_announced ---------------------------------------------------------------

TEST(RingReader, OpenAnnouncedReadsWhatTheWriterAppended) {
  auto writer = RingWriter::create(RingIdentity{"open", 77, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(writer.has_value());
  writer->append(std::as_bytes(std::span("hello", 5)));
  const RingAnnouncement announced = writer->announcement();
  EXPECT_EQ(announced.actor, "open");
  EXPECT_EQ(announced.engine_pid, ::getpid());
  EXPECT_GE(announced.header_fd, 0);
  EXPECT_GE(announced.data_fd, 0);
  EXPECT_EQ(announced.capacity, kMinCapacity);
  auto reader = RingReader::open_announced(announced);
  ASSERT_TRUE(reader.has_value()) << reader.error().describe();
  EXPECT_EQ(reader->epoch(), 77u);
  EXPECT_EQ(reader->actor(), "open");
  std::string out(5, '\0');
  auto end = reader->copy(Cursor{0}, std::as_writable_bytes(std::span(out)));
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(out, "hello");
}

TEST(RingReader, AWritersOwnReaderSharesItsMappingAndKeepsItAlive) {
  auto created = RingWriter::create(RingIdentity{"own", 5, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(created.has_value());
  std::optional<RingWriter> writer(std::move(*created));
  const std::string label = std::string(RingSegments::kDataLabel) + "own";
  const auto mappings = [&] {
    std::ifstream maps("/proc/self/maps");
    int n = 0;
    for (std::string line; std::getline(maps, line);) n += line.find(label) != std::string::npos;
    return n;
  };
  writer->append(std::as_bytes(std::span("shared", 6)));
  std::optional<RingReader> reader = writer->reader();
  EXPECT_EQ(reader->data_area().data(), writer->data());  // no second mapping of the data
  EXPECT_EQ(mappings(), 1);
  EXPECT_EQ(reader->actor(), "own");
  writer.reset();  // the writer goes first
  EXPECT_EQ(mappings(), 1);
  std::string out(6, '\0');
  auto end = reader->copy(Cursor{0}, std::as_writable_bytes(std::span(out)));
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(out, "shared");
  reader.reset();
  EXPECT_EQ(mappings(), 0);
}

// --- RingWriter: the first lap's pages --------------------------------------------------------

// Whether each 4 KiB page of [at, at + bytes) is in this process's page table now.
std::vector<bool> pages_present(const std::byte* at, std::size_t bytes) {
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  std::vector<bool> present;
  if (fd < 0) return present;
  const auto first = reinterpret_cast<std::uintptr_t>(at) / 4096;
  for (std::size_t i = 0; i < (bytes + 4095) / 4096; ++i) {
    std::uint64_t entry = 0;
    if (::pread(fd, &entry, sizeof entry, static_cast<off_t>((first + i) * sizeof entry)) !=
        static_cast<ssize_t>(sizeof entry)) {
      break;
    }
    present.push_back((entry >> 63) != 0);
  }
  ::close(fd);
  return present;
}

std::size_t count_present(const std::vector<bool>& pages, std::size_t from, std::size_t to) {
  return static_cast<std::size_t>(std::count(pages.begin() + static_cast<std::ptrdiff_t>(from),
                                             pages.begin() + static_cast<std::ptrdiff_t>(to),
                                             true));
}

// PTY reads come 4 KiB at a time: append `bytes` that way.
void append_like_reads(RingWriter& writer, std::size_t bytes) {
  const std::vector<std::byte> chunk(4096, std::byte{'x'});
  for (std::size_t done = 0; done < bytes; done += chunk.size()) {
    writer.append(std::span(chunk).first(std::min(chunk.size(), bytes - done)));
  }
}

// Huge pages for all shared memory (a machine-wide setting) map 2 MiB per fault: no count of
// small pages would mean what the tests below ask.
bool shared_memory_gets_large_pages_on_every_fault() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  std::string modes;
  std::getline(in, modes);
  for (const char* mode : {"[always]", "[within_size]", "[force]"}) {
    if (modes.find(mode) != std::string::npos) return true;
  }
  return false;
}

constexpr std::size_t kLargePages = kLargePageBytes / 4096;

// The memory the ring's data memfd holds now (pages reserved or written, not holes).
std::uint64_t memfd_bytes(const RingWriter& writer) {
  struct stat st {};
  if (::fstat(writer.data_fd(), &st) != 0) return ~std::uint64_t{0};
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

TEST(RingWriter, AFloodingRingsNextPagesAreMappedAheadAndAnIdleRingsAreNot) {
  if (shared_memory_gets_large_pages_on_every_fault()) GTEST_SKIP() << "shmem_enabled";
  constexpr std::size_t kCapacity = 3 * kLargePageBytes, kPages = kCapacity / 4096;
  auto writer = RingWriter::create(RingIdentity{"ahead", 1, kCapacity, Cursor{0}});
  ASSERT_TRUE(writer.has_value());
  ASSERT_EQ(pages_present(writer->data(), kCapacity).size(), kPages) << "no /proc/self/pagemap";

  // An idle actor's few screenfuls: only the pages written.
  append_like_reads(*writer, 12 << 10);
  auto pages = pages_present(writer->data(), kCapacity);
  EXPECT_EQ(count_present(pages, 0, 3), 3u);
  EXPECT_EQ(count_present(pages, 3, kPages), 0u);

  // A flood: past 256 KiB, the rest of the large page it writes is in the mapping before any
  // read reaches it, and the next large page is not yet...
  append_like_reads(*writer, (600 << 10) - (12 << 10));
  pages = pages_present(writer->data(), kCapacity);
  EXPECT_EQ(count_present(pages, 0, kLargePages), kLargePages);
  EXPECT_EQ(count_present(pages, kLargePages, kPages), 0u) << "more than a large page ahead";

  // ...until the flood is half way through the one it writes.
  append_like_reads(*writer, (1200 << 10) - (600 << 10));
  pages = pages_present(writer->data(), kCapacity);
  EXPECT_EQ(count_present(pages, 0, 2 * kLargePages), 2 * kLargePages);
  EXPECT_EQ(count_present(pages, 2 * kLargePages, kPages), 0u);

  // Near the lap's end every page is in.
  append_like_reads(*writer, kCapacity - (1200 << 10) - (64 << 10));
  pages = pages_present(writer->data(), kCapacity);
  EXPECT_EQ(count_present(pages, 0, kPages), kPages);

  // Released pages are fresh again: an idle actor after it stays small...
  ASSERT_TRUE(writer->release_pages());
  append_like_reads(*writer, 8 << 10);
  pages = pages_present(writer->data(), kCapacity);
  EXPECT_LE(count_present(pages, 0, kPages), 3u);
  EXPECT_LE(memfd_bytes(*writer), std::uint64_t{16} << 10);

  // ...and a burst after it takes about what it wrote, no large page filled around it: at
  // most 384 KiB ahead (a block of 256 KiB mapped once the writes are within 128 KiB of the
  // last).
  append_like_reads(*writer, 600 << 10);
  EXPECT_LE(memfd_bytes(*writer), std::uint64_t{608 + 384 + 8} << 10);
  EXPECT_GE(memfd_bytes(*writer), std::uint64_t{608} << 10);
}

// The kB of shared memory that this process's first mapping accepted by `is_it` (given the
// mapping's line of /proc/self/smaps: "start-end perms offset device inode name") maps with
// large pages, or -1 when no mapping is accepted.
template <class Predicate>
long large_page_kib_mapped(Predicate is_it) {
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false, found = false;
  for (std::string line; std::getline(smaps, line);) {
    const bool mapping_line = line.find('-') < line.find(' ') && line.find(':') > line.find(' ');
    if (mapping_line) {
      inside = !found && is_it(line);
      found = found || inside;
    } else if (inside && line.rfind("ShmemPmdMapped:", 0) == 0) {
      return std::stol(line.substr(15));
    }
  }
  return -1;
}

long large_page_kib_mapped_at(const void* at) {
  char start[32];
  std::snprintf(start, sizeof start, "%lx-", reinterpret_cast<unsigned long>(at));
  return large_page_kib_mapped([&](const std::string& line) { return line.rfind(start, 0) == 0; });
}

// The read-only mapping of ring `actor`'s data: a RingReader's.
long large_page_kib_read_only(const std::string& actor) {
  const std::string name = std::string(RingSegments::kDataLabel) + actor + " ";
  return large_page_kib_mapped([&](const std::string& line) {
    return line.find(" r--s ") != std::string::npos && line.find(name) != std::string::npos;
  });
}

// Whether this kernel collapses a memfd's reserved pages into a large page on request (Linux
// 6.1 and later, built with transparent huge pages, memory to spare): the tests below ask the
// ring for what the kernel can give.
bool kernel_collapses_shared_memory() {
  constexpr int kCollapse = 25;  // MADV_COLLAPSE (Linux 6.1), which older headers lack
  auto probe = Segment::create("probe", kLargePageBytes, Sealing::size);
  return probe.has_value() && ::madvise(probe->data(), kLargePageBytes, kCollapse) == 0 &&
         large_page_kib_mapped_at(probe->data()) == static_cast<long>(kLargePageBytes >> 10);
}

TEST(Segment, ASegmentSpanningALargePageIsMappedAlignedToOneInEveryProcess) {
  for (const std::size_t bytes :
       {kLargePageBytes, 3 * kLargePageBytes + 4096, std::size_t{10485760}}) {
    auto created = Segment::create("aligned", bytes, Sealing::size);
    ASSERT_TRUE(created.has_value());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(created->data()) % kLargePageBytes, 0u) << bytes;
    auto opened = Segment::open_read_only(::getpid(), created->fd(), bytes, Sealing::size);
    ASSERT_TRUE(opened.has_value()) << opened.error().describe();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(opened->data()) % kLargePageBytes, 0u) << bytes;
    // Nothing of the reservation it was placed in is left on either side.
    for (const std::byte* mapping : {created->data(), opened->data()}) {
      char before[32], after[32];
      std::snprintf(before, sizeof before, "-%lx ---p", reinterpret_cast<unsigned long>(mapping));
      std::snprintf(after, sizeof after, "%lx-",
                    reinterpret_cast<unsigned long>(mapping + (bytes + 4095) / 4096 * 4096));
      EXPECT_EQ(large_page_kib_mapped([&](const std::string& line) {
                  return line.find(before) != std::string::npos ||
                         (line.rfind(after, 0) == 0 && line.find(" ---p ") != std::string::npos);
                }),
                -1)
          << bytes;
    }
    std::memset(created->data() + bytes - 1, 'z', 1);
    EXPECT_EQ(opened->data()[bytes - 1], std::byte{'z'});
  }
}

// A flooding ring is mapped with large pages, in the engine's mapping and in a reader's, and
// keeps every byte written before its pages were collapsed.
TEST(RingWriter, AFloodingRingsPagesBecomeLargePagesAndKeepTheirBytes) {
  if (shared_memory_gets_large_pages_on_every_fault()) GTEST_SKIP() << "shmem_enabled";
  if (!kernel_collapses_shared_memory()) GTEST_SKIP() << "this kernel makes no large pages";
  constexpr std::size_t kCapacity = 3 * kLargePageBytes;
  auto writer = RingWriter::create(RingIdentity{"large", 1, kCapacity, Cursor{0}});
  ASSERT_TRUE(writer.has_value());
  auto reader = RingReader::open_announced(writer->announcement());
  ASSERT_TRUE(reader.has_value()) << reader.error().describe();

  std::mt19937_64 random(7);
  std::vector<std::byte> written(kCapacity + kLargePageBytes);
  for (auto& b : written) b = static_cast<std::byte>(random());
  const auto write = [&](std::size_t from, std::size_t to) {
    for (std::size_t at = from; at < to; at += 4096) {
      writer->append(std::span(written).subspan(at, std::min<std::size_t>(4096, to - at)));
    }
  };

  write(0, 12 << 10);  // idle: small pages
  EXPECT_EQ(large_page_kib_mapped_at(writer->data()), 0);
  write(12 << 10, 1200 << 10);  // a flood: its large page and the next
  EXPECT_EQ(large_page_kib_mapped_at(writer->data()), 2 * (kLargePageBytes >> 10));

  // The bytes written before the collapse and after it, through a reader of its own mapping.
  std::vector<std::byte> out(1200 << 10);
  auto end = reader->copy(Cursor{0}, out);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(*end, Cursor{1200 << 10});
  EXPECT_TRUE(std::equal(out.begin(), out.end(), written.begin()));
  EXPECT_EQ(large_page_kib_read_only("large"), kLargePageBytes >> 10) << "the one it read";

  // Past the lap and around it: all three, and the second lap's bytes read back.
  write(1200 << 10, written.size());
  EXPECT_EQ(large_page_kib_mapped_at(writer->data()), 3 * (kLargePageBytes >> 10));
  out.resize(kCapacity);
  end = reader->copy(Cursor{kLargePageBytes}, out);
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), written.begin() + kLargePageBytes));

  // Released, the pages are gone with their large pages; a flood after it stays in small
  // pages, which take memory only as the lap reaches them.
  ASSERT_TRUE(writer->release_pages());
  EXPECT_EQ(memfd_bytes(*writer), 0u);
  write(0, 1200 << 10);
  EXPECT_EQ(large_page_kib_mapped_at(writer->data()), 0);
  EXPECT_LE(memfd_bytes(*writer), std::uint64_t{1200 + 384 + 8} << 10);
}

TEST(RingReader, EveryRingGetsItsOwnRandomNonce) {
  auto first = RingWriter::create(RingIdentity{"same", 1, kMinCapacity, Cursor{0}});
  auto second = RingWriter::create(RingIdentity{"same", 1, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(first.has_value() && second.has_value());
  const std::string one = first->announcement().nonce;
  const std::string two = second->announcement().nonce;
  EXPECT_EQ(one.size(), 2 * kRingNonceBytes);
  EXPECT_EQ(one.find_first_not_of("0123456789abcdef"), std::string::npos) << one;
  EXPECT_NE(one, std::string(2 * kRingNonceBytes, '0'));
  EXPECT_NE(one, two);
}

// A ring that is not exactly what the engine announced is refused with a clear reason and
// nothing read from it: the reader gets no RingReader at all.
TEST(RingReader, OpenAnnouncedRefusesARingThatDiffersFromTheAnnouncement) {
  auto writer = RingWriter::create(RingIdentity{"ann", 1, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(writer.has_value());
  writer->append(std::as_bytes(std::span("\x1b]0;PWNED\x07", 11)));
  const RingAnnouncement good = writer->announcement();
  auto refused = [](const RingAnnouncement& announced, const std::string& says) {
    auto reader = RingReader::open_announced(announced);
    if (reader.has_value()) return std::string("opened");
    if (reader.error().code != Errc::bad_segment) return "code " + reader.error().describe();
    if (reader.error().message.find(says) == std::string::npos) return reader.error().message;
    return std::string();
  };

  RingAnnouncement wrong_nonce = good;
  wrong_nonce.nonce[0] = wrong_nonce.nonce[0] == '0' ? '1' : '0';
  EXPECT_EQ(refused(wrong_nonce, "has another nonce"), "");
  RingAnnouncement other_actor = good;
  other_actor.actor = "other";
  EXPECT_EQ(refused(other_actor, "holds actor 'ann'"), "");
  RingAnnouncement other_capacity = good;
  other_capacity.capacity = 2 * kMinCapacity;
  EXPECT_EQ(refused(other_capacity, "bytes, not"), "");
  // The descriptors swapped: the data segment is not sealed against writes, the header is
  // another size.
  RingAnnouncement swapped = good;
  std::swap(swapped.header_fd, swapped.data_fd);
  EXPECT_EQ(refused(swapped, "is not a sealed memfd"), "");
  // Another ring of the same actor and size (an actor deleted and made again between the
  // announcement and the open, its descriptor numbers reused): another nonce.
  auto impostor = RingWriter::create(RingIdentity{"ann", 1, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(impostor.has_value());
  RingAnnouncement reused = impostor->announcement();
  reused.nonce = good.nonce;
  EXPECT_EQ(refused(reused, "has another nonce"), "");
  EXPECT_TRUE(RingReader::open_announced(impostor->announcement()).has_value());
  EXPECT_TRUE(RingReader::open_announced(good).has_value());
}

TEST(RingReader, OpenAnnouncedReportsBadSegmentForAnUninitialisedRing) {
  auto header = Segment::create("bs-test", kHeaderBytes, Sealing::size_and_writes);  // magic 0
  auto data = Segment::create("bs-test", kMinCapacity, Sealing::size);
  ASSERT_TRUE(header.has_value() && data.has_value());
  const RingAnnouncement announced{
      "u",         ::getpid(), header->fd(), data->fd(), std::string(2 * kRingNonceBytes, '0'),
      kMinCapacity};
  auto reader = RingReader::open_announced(announced);
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code, Errc::bad_segment);
  EXPECT_NE(reader.error().message.find("the ring of 'u'"), std::string::npos);
}

TEST(RingReader, OpenAnnouncedReportsStaleSegmentWhenTheEngineExited) {
  Pipe announced_pipe;
  // RingWriter::create records the calling process as the engine: let a child be the engine.
  const pid_t engine = fork_child([&] {
    auto writer = RingWriter::create(RingIdentity{"stale", 3, kMinCapacity, Cursor{0}});
    if (!writer) return 2;
    const RingAnnouncement a = writer->announcement();
    announced_pipe.send(a.header_fd);
    announced_pipe.send(a.data_fd);
    return 0;
  });
  const int status = wait_for_exit(engine);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  int header_fd = -1;
  int data_fd = -1;
  ASSERT_TRUE(announced_pipe.receive(header_fd) && announced_pipe.receive(data_fd));
  auto reader = RingReader::open_announced(RingAnnouncement{
      "stale", engine, header_fd, data_fd, std::string(2 * kRingNonceBytes, '0'), kMinCapacity});
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code, Errc::stale_segment) << reader.error().describe();
}

TEST(RingReader, OpenAnnouncedReportsStaleSegmentWhenTheEnginePidWasReused) {
  auto writer = RingWriter::create(RingIdentity{"reused", 3, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(writer.has_value());
  ASSERT_TRUE(RingReader::open_announced(writer->announcement()).has_value());
  // Same pid, another start time: a different process that got the dead engine's pid.
  writer->header()->engine_start_ticks += 1;
  auto reader = RingReader::open_announced(writer->announcement());
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code, Errc::stale_segment);
}

// --- RingReader::wait ----------------------------------------------------------------------

class RingWait : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = RingWriter::create(RingIdentity{"wait", 1, kMinCapacity, Cursor{0}});
    ASSERT_TRUE(w.has_value()) << w.error().describe();
    writer_.emplace(std::move(*w));
    auto r = RingReader::open_announced(writer_->announcement());
    ASSERT_TRUE(r.has_value()) << r.error().describe();
    reader_.emplace(std::move(*r));
  }

  void append(std::string_view text) { writer_->append(std::as_bytes(std::span(text))); }
  void close_segment() {
    ActorMeta meta;
    meta.closed = 1;
    writer_->publish_meta(meta);
  }

  // Forks a reader that reports what wait(after, long timeout) returned once the parent has seen
  // it asleep on the futex; `wake` then runs in the parent.
  template <class Wake>
  WaitResult wait_in_child(Cursor after, Wake&& wake) {
    Pipe ready;
    Pipe result;
    const pid_t child = fork_child([&] {
      ready.close_read();
      result.close_read();
      auto reader = RingReader::open_announced(writer_->announcement());
      if (!reader) return 2;
      const char go = 'w';
      ready.send(go);
      const WaitResult r = reader->wait(after, std::chrono::minutes(5));
      return result.send(r) ? 0 : 3;
    });
    ready.close_write();
    result.close_write();
    char go = 0;
    EXPECT_TRUE(ready.receive(go));
    await_futex_sleep(child);
    wake();
    WaitResult r = WaitResult::timeout;
    // A lost wake-up would leave the child asleep for minutes; this bound only stops the hang.
    const bool got = result.receive(r, 60s);
    if (!got) ::kill(child, SIGKILL);
    const int status = wait_for_exit(child);
    EXPECT_TRUE(got) << "the sleeping reader was never woken";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    return r;
  }

  std::optional<RingWriter> writer_;
  std::optional<RingReader> reader_;
};

TEST_F(RingWait, ReturnsTimeoutWhenNothingIsCommitted) {
  EXPECT_EQ(reader_->wait(Cursor{0}, 20ms), WaitResult::timeout);
  append("abc");
  EXPECT_EQ(reader_->wait(Cursor{3}, 20ms), WaitResult::timeout);
  EXPECT_EQ(reader_->wait(Cursor{3}, 0ms), WaitResult::timeout);
}

TEST_F(RingWait, ReturnsReadyWhenSomethingIsCommittedAfterTheCursor) {
  append("abc");
  EXPECT_EQ(reader_->wait(Cursor{0}, std::chrono::minutes(5)), WaitResult::ready);
  EXPECT_EQ(reader_->wait(Cursor{2}, std::chrono::minutes(5)), WaitResult::ready);
  EXPECT_EQ(reader_->wait(Cursor{2}, 0ms), WaitResult::ready);
}

TEST_F(RingWait, ReturnsClosedWhenTheSegmentIsClosed) {
  close_segment();
  EXPECT_EQ(reader_->wait(Cursor{0}, std::chrono::minutes(5)), WaitResult::closed);
}

TEST_F(RingWait, ReturnsReadyBeforeClosedWhileCommittedBytesRemain) {
  // A closing segment is drained first: a reader behind committed still gets ready.
  append("tail");
  close_segment();
  EXPECT_EQ(reader_->wait(Cursor{0}, 0ms), WaitResult::ready);
  EXPECT_EQ(reader_->wait(Cursor{4}, 0ms), WaitResult::closed);
}

TEST_F(RingWait, WakesAReaderSleepingInAnotherProcessAfterACommit) {
  const WaitResult r = wait_in_child(Cursor{0}, [&] {
    append("x");
    writer_->wake_readers();
  });
  EXPECT_EQ(r, WaitResult::ready);
}

TEST_F(RingWait, WakeIfCommittedWakesASleeperOnlyAfterACommit) {
  const WaitResult r = wait_in_child(Cursor{0}, [&] {
    writer_->wake_if_committed();  // nothing new: must not wake (the child keeps sleeping)
    append("y");
    writer_->wake_if_committed();
  });
  EXPECT_EQ(r, WaitResult::ready);
  const std::uint32_t wake_before = writer_->header()->wake;
  writer_->wake_if_committed();
  EXPECT_EQ(writer_->header()->wake, wake_before);
}

// A wake without a new byte (the seal of a session: every reader already has every byte) must
// reach a reader at once, not at the end of its timeout: a follower learns of the end then.
TEST_F(RingWait, AWakeWithoutANewByteReturnsWokenAtOnce) {
  append("abc");
  const WaitResult r = wait_in_child(Cursor{3}, [&] { writer_->wake_readers(); });
  EXPECT_EQ(r, WaitResult::woken);
}

TEST_F(RingWait, WakesASleepingReaderWhenTheSegmentCloses) {
  const WaitResult r = wait_in_child(Cursor{0}, [&] {
    close_segment();
    writer_->wake_readers();
  });
  EXPECT_EQ(r, WaitResult::closed);
}

}  // namespace
}  // namespace backscroll::shm
