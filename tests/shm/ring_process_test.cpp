// The ring across real processes, through named POSIX shared memory. A forked reader maps the
// segment read-only and follows ~256 MiB of checksummed records (zero-copy read+intact and
// copy), sleeping on the futex: every byte it accepts is exact, and a lapped reader resyncs to the
// oldest cursor. Also: the read-only mapping faults on write, segments are 0600 whatever the
// umask, a dead engine's segment is stale_segment, and wait() returns ready/timeout/closed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
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

#include "shm/places.hpp"
#include "shm/ring_layout.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"
#include "shm/segment.hpp"

namespace backscroll::shm {
namespace {

using namespace std::chrono_literals;

// A segment name no other test (or concurrent test process) uses; removed when it goes away.
class ScopedSegmentName {
 public:
  ScopedSegmentName() : name_(next_name()) {}
  explicit ScopedSegmentName(std::string name) : name_(std::move(name)) {}
  ScopedSegmentName(const ScopedSegmentName&) = delete;
  ScopedSegmentName& operator=(const ScopedSegmentName&) = delete;
  ~ScopedSegmentName() { Segment::remove(name_); }
  const std::string& str() const { return name_; }

  static std::string next_name() {
    static int counter = 0;
    return "bs-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  }

 private:
  std::string name_;
};

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
  std::uint64_t bytes = 0;        // appended after the reader is ready
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
  std::uint64_t start = 0;        // the first cursor the reader asks for
  std::uint64_t end = 0;          // stop once the cursor reaches this
  std::size_t max_read = 1 << 20;
  std::chrono::microseconds pause_in_place{0};  // between read() and using the spans
};

// What the child reports over the pipe.
struct ReaderReport {
  std::uint64_t verified = 0;      // bytes accepted and checked against the stream
  std::uint64_t skipped = 0;       // bytes jumped over by resyncs
  std::uint64_t resyncs = 0;       // cursor_expired (from read/copy or a failed intact)
  std::uint64_t torn_discards = 0; // in-place spans dropped because intact() said no
  std::uint64_t errors = 0;        // accepted bytes that were wrong, or protocol violations
  std::uint64_t first_expired_cursor = 0;
  std::uint64_t end = 0;
  std::uint64_t waits = 0;
  std::uint32_t opened = 0;
  std::uint32_t reached_end = 0;
};

ReaderReport follow_stream(const RingAnnouncement& ring, std::uint64_t seed,
                           const ReaderPlan& plan, Pipe& ready) {
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
         " resyncs=" + std::to_string(r.resyncs) + " torn_discards=" +
         std::to_string(r.torn_discards) + " errors=" + std::to_string(r.errors) +
         " waits=" + std::to_string(r.waits) + " end=" + std::to_string(r.end);
}

// Creates a ring, writes `before_reader` bytes, forks a reader that follows the stream from
// cursor 0, writes the rest, and returns the reader's report.
struct StreamRun {
  std::uint64_t capacity;
  std::uint64_t before_reader;
  WriterPlan writer;
  ReaderPlan reader;
};

ReaderReport run_stream(const StreamRun& run) {
  ScopedSegmentName name;
  const std::uint64_t seed = 0x5eed0000ULL + static_cast<std::uint64_t>(::getpid());
  auto writer = RingWriter::create(name.str(), RingIdentity{"proc", seed, run.capacity, Cursor{0}});
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
  EXPECT_TRUE(ready.receive(go)) << "the reader never opened the segment";
  write_stream(*writer, seed, run.writer.bytes, rng, run.writer);

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

// --- the read-only mapping ------------------------------------------------------------------

TEST(RingProcess, ReaderMappingFaultsOnWriteAndLeavesTheWriterDataIntact) {
  ScopedSegmentName name;
  auto writer = RingWriter::create(name.str(), RingIdentity{"ro", 1, kMinCapacity, Cursor{0}});
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
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child survived a write to its read-only mapping, status "
                                   << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_EQ(std::memcmp(writer->data(), before.data(), before.size()), 0);
  EXPECT_EQ(writer->header()->committed, header_before.committed);
  EXPECT_EQ(writer->header()->magic, kRingMagic);
}

// --- Segment -------------------------------------------------------------------------------

TEST(Segment, CreatesTheObjectOwnerOnlyEvenWithUmaskZero) {
  ScopedSegmentName name;
  const mode_t old_mask = ::umask(0);
  auto segment = Segment::create(name.str(), kPageBytes);
  ::umask(old_mask);
  ASSERT_TRUE(segment.has_value()) << segment.error().describe();
  struct stat st{};
  ASSERT_EQ(::stat(("/dev/shm/" + name.str()).c_str(), &st), 0) << std::strerror(errno);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, ::getuid());
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), kPageBytes);
}

TEST(Segment, RingWriterCreatesTheRingOwnerOnlyEvenWithUmaskZero) {
  ScopedSegmentName name;
  const mode_t old_mask = ::umask(0);
  auto writer = RingWriter::create(name.str(), RingIdentity{"mode", 1, kMinCapacity, Cursor{0}});
  ::umask(old_mask);
  ASSERT_TRUE(writer.has_value()) << writer.error().describe();
  struct stat st{};
  ASSERT_EQ(::stat(("/dev/shm/" + name.str()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), kHeaderBytes + kMinCapacity);
}

TEST(Segment, CreatesZeroFilledMemoryOfTheRequestedSize) {
  ScopedSegmentName name;
  auto segment = Segment::create(name.str(), 3 * kPageBytes);
  ASSERT_TRUE(segment.has_value());
  EXPECT_EQ(segment->size(), 3 * kPageBytes);
  EXPECT_EQ(segment->name(), name.str());
  EXPECT_TRUE(std::all_of(segment->data(), segment->data() + segment->size(),
                          [](std::byte b) { return b == std::byte{0}; }));
}

TEST(Segment, RefusesToCreateANameThatExists) {
  ScopedSegmentName name;
  auto first = Segment::create(name.str(), kPageBytes);
  ASSERT_TRUE(first.has_value());
  first->data()[0] = std::byte{7};
  auto second = Segment::create(name.str(), 2 * kPageBytes);
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().code, Errc::no_such_actor);
  EXPECT_EQ(first->data()[0], std::byte{7});
}

// Regression (review): tmpfs allocates pages lazily, so on a full /dev/shm a segment was created
// fine and the engine later died of SIGBUS writing its header (or its PTY reads failed with
// EFAULT). Creation now reserves the pages: a full /dev/shm is an error up front, and the name
// is not left behind. Runs in a child with a private mount of a 1 MiB tmpfs on /dev/shm.
TEST(Segment, FullShmIsAnErrorAtCreationAndLeavesNoNameBehind) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs on /dev/shm needs root";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(77);
    if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(77);
    if (::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=1m") != 0) ::_exit(77);
    auto segment = Segment::create("bs-test-full", 4u << 20);
    if (segment) ::_exit(1);                                 // created on a full tmpfs
    if (segment.error().code != Errc::io_error) ::_exit(2);  // ENOSPC
    if (!Segment::list("bs-test-full").empty()) ::_exit(3);  // half-made name left behind
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no mount namespace or tmpfs mount here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: created, 2: wrong error, 3: name left behind";
}

TEST(Segment, OpensReadOnlyWithTheObjectsSizeAndBytes) {
  ScopedSegmentName name;
  auto segment = Segment::create(name.str(), 2 * kPageBytes);
  ASSERT_TRUE(segment.has_value());
  segment->data()[kPageBytes + 3] = std::byte{0x42};
  auto view = Segment::open_read_only(name.str());
  ASSERT_TRUE(view.has_value()) << view.error().describe();
  EXPECT_EQ(view->size(), 2 * kPageBytes);
  EXPECT_EQ(view->data()[kPageBytes + 3], std::byte{0x42});
  segment->data()[5] = std::byte{0x43};  // one object: later writes show through
  EXPECT_EQ(view->data()[5], std::byte{0x43});
}

// Another local user can create files in the sticky /dev/shm under any name the engine would
// use, with any mode, and link or symlink to the engine's own: a reader opens only what its
// engine could have made, with a clear error and nothing mapped otherwise.
TEST(Segment, OpensOnlyWhatItsOwnEngineCouldHaveMade) {
  auto refused = [](const std::string& name, const std::string& says) {
    auto view = Segment::open_read_only(name);
    if (view.has_value()) return std::string("opened");
    if (view.error().code != Errc::bad_segment) return "code " + view.error().describe();
    if (view.error().message.find(says) == std::string::npos) return view.error().message;
    return std::string();
  };
  ScopedSegmentName name;
  ASSERT_TRUE(Segment::create(name.str(), kPageBytes).has_value());
  const std::string path = "/dev/shm/" + name.str();

  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  EXPECT_EQ(refused(name.str(), "has mode 0644, not 0600"), "");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_TRUE(Segment::open_read_only(name.str()).has_value());

  ScopedSegmentName linked;
  ASSERT_EQ(::link(path.c_str(), ("/dev/shm/" + linked.str()).c_str()), 0);
  EXPECT_EQ(refused(linked.str(), "has 2 links"), "");
  EXPECT_EQ(refused(name.str(), "has 2 links"), "");
  ScopedSegmentName symlinked;
  ASSERT_EQ(::symlink(path.c_str(), ("/dev/shm/" + symlinked.str()).c_str()), 0);
  EXPECT_EQ(refused(symlinked.str(), "is a symbolic link"), "");
  ScopedSegmentName fifo;
  ASSERT_EQ(::mkfifo(("/dev/shm/" + fifo.str()).c_str(), 0600), 0);
  EXPECT_EQ(refused(fifo.str(), "is not a regular file"), "");  // and does not block

  if (::geteuid() == 0) {  // CI runs as root: hand the segment to another user
    ScopedSegmentName foreign;
    ASSERT_TRUE(Segment::create(foreign.str(), kPageBytes).has_value());
    ASSERT_EQ(::chown(("/dev/shm/" + foreign.str()).c_str(), 65534, 65534), 0);
    EXPECT_EQ(refused(foreign.str(), "belongs to uid 65534, not to this user"), "");
  }
}

TEST(Segment, ReportsNoSuchActorForAMissingName) {
  auto segment = Segment::open_read_only(ScopedSegmentName::next_name() + "-missing");
  ASSERT_FALSE(segment.has_value());
  EXPECT_EQ(segment.error().code, Errc::no_such_actor);
}

TEST(Segment, RemoveReportsWhetherTheNameExisted) {
  ScopedSegmentName name;
  ASSERT_TRUE(Segment::create(name.str(), kPageBytes).has_value());
  EXPECT_TRUE(Segment::remove(name.str()));
  EXPECT_FALSE(Segment::remove(name.str()));
  EXPECT_EQ(Segment::open_read_only(name.str()).error().code, Errc::no_such_actor);
}

TEST(Segment, KeepsAMappingValidAfterItsNameIsRemoved) {
  ScopedSegmentName name;
  auto segment = Segment::create(name.str(), kPageBytes);
  ASSERT_TRUE(segment.has_value());
  auto view = Segment::open_read_only(name.str());
  ASSERT_TRUE(view.has_value());
  ASSERT_TRUE(Segment::remove(name.str()));
  segment->data()[9] = std::byte{9};
  EXPECT_EQ(view->data()[9], std::byte{9});
}

TEST(Segment, ListFindsTheSegmentsThatStartWithAPrefix) {
  const std::string prefix = ScopedSegmentName::next_name() + "-list-";
  EXPECT_TRUE(Segment::list(prefix).empty());
  {
    ScopedSegmentName a(prefix + "a");
    ScopedSegmentName b(prefix + "b");
    ASSERT_TRUE(Segment::create(a.str(), kPageBytes).has_value());
    ASSERT_TRUE(Segment::create(b.str(), kPageBytes).has_value());
    std::vector<std::string> found = Segment::list(prefix);
    std::sort(found.begin(), found.end());
    EXPECT_EQ(found, (std::vector<std::string>{a.str(), b.str()}));
  }
  EXPECT_TRUE(Segment::list(prefix).empty());
}

// --- Segment::create_unique ----------------------------------------------------------------

TEST(Segment, CreateUniqueDrawsAnotherNameWhileOneIsTaken) {
  const std::string stem = ScopedSegmentName::next_name() + "-unique.";
  const ScopedSegmentName squatted(stem + "aaaa");
  const ScopedSegmentName also_squatted(stem + "bbbb");
  const ScopedSegmentName chosen(stem + "cccc");
  ASSERT_TRUE(Segment::create(squatted.str(), kPageBytes).has_value());
  ASSERT_TRUE(Segment::create(also_squatted.str(), kPageBytes).has_value());
  const std::vector<std::string> suffixes{"aaaa", "bbbb", "cccc"};
  std::size_t next = 0;
  std::vector<std::string> taken;
  auto segment = Segment::create_unique(stem, 2 * kPageBytes, taken,
                                        [&] { return suffixes.at(next++); });
  ASSERT_TRUE(segment.has_value()) << segment.error().describe();
  EXPECT_EQ(segment->name(), chosen.str());
  EXPECT_EQ(segment->size(), 2 * kPageBytes);
  EXPECT_EQ(taken, (std::vector<std::string>{squatted.str(), also_squatted.str()}));
  // The squatters' names are untouched: still one page each.
  EXPECT_EQ(Segment::open_read_only(squatted.str())->size(), kPageBytes);
}

TEST(Segment, CreateUniqueGivesUpWithAClearErrorWhenEveryNameDrawnIsTaken) {
  const std::string stem = ScopedSegmentName::next_name() + "-full.";
  const ScopedSegmentName squatted(stem + "x");
  ASSERT_TRUE(Segment::create(squatted.str(), kPageBytes).has_value());
  std::vector<std::string> taken;
  auto segment = Segment::create_unique(stem, kPageBytes, taken, [] { return std::string("x"); });
  ASSERT_FALSE(segment.has_value());
  EXPECT_EQ(segment.error().code, Errc::io_error);
  EXPECT_NE(segment.error().message.find("were all taken"), std::string::npos);
  EXPECT_EQ(taken.size(), static_cast<std::size_t>(Segment::kNameAttempts));
}

TEST(Segment, CreateUniqueNamesAreRandom) {
  const std::string stem = ScopedSegmentName::next_name() + "-random.";
  std::vector<std::string> taken;
  auto a = Segment::create_unique(stem, kPageBytes, taken);
  auto b = Segment::create_unique(stem, kPageBytes, taken);
  ASSERT_TRUE(a.has_value() && b.has_value());
  const ScopedSegmentName remove_a(a->name());
  const ScopedSegmentName remove_b(b->name());
  EXPECT_NE(a->name(), b->name());
  for (const Segment* s : {&*a, &*b}) {
    const std::string suffix = s->name().substr(stem.size());
    EXPECT_EQ(suffix.size(), 16u) << s->name();
    EXPECT_EQ(suffix.find_first_not_of("0123456789abcdef"), std::string::npos) << s->name();
  }
  EXPECT_TRUE(taken.empty());
}

// --- RingReader::open_announced ---------------------------------------------------------------

TEST(RingReader, OpenAnnouncedReadsWhatTheWriterAppended) {
  ScopedSegmentName name;
  auto writer = RingWriter::create(name.str(), RingIdentity{"open", 77, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(writer.has_value());
  writer->append(std::as_bytes(std::span("hello", 5)));
  const RingAnnouncement announced = writer->announcement();
  EXPECT_EQ(announced.actor, "open");
  EXPECT_EQ(announced.segment, name.str());
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

TEST(RingReader, EverySegmentGetsItsOwnRandomNonce) {
  ScopedSegmentName a;
  ScopedSegmentName b;
  auto first = RingWriter::create(a.str(), RingIdentity{"same", 1, kMinCapacity, Cursor{0}});
  auto second = RingWriter::create(b.str(), RingIdentity{"same", 1, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(first.has_value() && second.has_value());
  const std::string one = first->announcement().nonce;
  const std::string two = second->announcement().nonce;
  EXPECT_EQ(one.size(), 2 * kRingNonceBytes);
  EXPECT_EQ(one.find_first_not_of("0123456789abcdef"), std::string::npos) << one;
  EXPECT_NE(one, std::string(2 * kRingNonceBytes, '0'));
  EXPECT_NE(one, two);
}

// A segment that is not exactly what the engine announced is refused with a clear reason and
// nothing read from it: the reader gets no RingReader at all.
TEST(RingReader, OpenAnnouncedRefusesASegmentThatDiffersFromTheAnnouncement) {
  ScopedSegmentName name;
  auto writer = RingWriter::create(name.str(), RingIdentity{"ann", 1, kMinCapacity, Cursor{0}});
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
  EXPECT_EQ(refused(other_actor, "holds actor 'ann', not 'other'"), "");
  RingAnnouncement other_capacity = good;
  other_capacity.capacity = 2 * kMinCapacity;
  EXPECT_EQ(refused(other_capacity, "bytes, not"), "");

  // Truncated: the size no longer matches what was announced.
  const std::string path = "/dev/shm/" + name.str();
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kHeaderBytes)), 0);
  EXPECT_EQ(refused(good, "is 16384 bytes, not"), "");
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kHeaderBytes + kMinCapacity)), 0);
  EXPECT_TRUE(RingReader::open_announced(good).has_value());

  // Replaced between the announcement and the open: same name, actor and size, another ring.
  ASSERT_TRUE(Segment::remove(name.str()));
  auto impostor = RingWriter::create(name.str(), RingIdentity{"ann", 1, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(impostor.has_value());
  EXPECT_EQ(refused(good, "has another nonce"), "");
  EXPECT_TRUE(RingReader::open_announced(impostor->announcement()).has_value());

  // A symbolic link under the announced name, even to the right ring.
  ScopedSegmentName real;
  auto target = RingWriter::create(real.str(), RingIdentity{"ann", 1, kMinCapacity, Cursor{0}});
  ASSERT_TRUE(target.has_value());
  ScopedSegmentName link;
  ASSERT_EQ(::symlink(("/dev/shm/" + real.str()).c_str(), ("/dev/shm/" + link.str()).c_str()), 0);
  RingAnnouncement via_link = target->announcement();
  via_link.segment = link.str();
  EXPECT_EQ(refused(via_link, "is a symbolic link"), "");
}

TEST(RingReader, OpenAnnouncedReportsNoSuchActorForAMissingSegment) {
  const RingAnnouncement gone{"gone", ScopedSegmentName::next_name() + "-missing",
                              std::string(2 * kRingNonceBytes, '0'), kMinCapacity};
  auto reader = RingReader::open_announced(gone);
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code, Errc::no_such_actor);
}

TEST(RingReader, OpenAnnouncedReportsBadSegmentForAnUninitialisedRing) {
  ScopedSegmentName name;
  auto segment = Segment::create(name.str(), kHeaderBytes + kMinCapacity);  // magic still 0
  ASSERT_TRUE(segment.has_value());
  const RingAnnouncement announced{"u", name.str(), std::string(2 * kRingNonceBytes, '0'),
                                   kMinCapacity};
  auto reader = RingReader::open_announced(announced);
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code, Errc::bad_segment);
  EXPECT_NE(reader.error().message.find(name.str()), std::string::npos);
}

TEST(RingReader, OpenAnnouncedReportsStaleSegmentWhenTheEngineExited) {
  ScopedSegmentName name;
  Pipe announced_pipe;
  // RingWriter::create records the calling process as the engine: let a child be the engine.
  const pid_t engine = fork_child([&] {
    auto writer = RingWriter::create(name.str(), RingIdentity{"stale", 3, kMinCapacity, Cursor{0}});
    if (!writer) return 2;
    const std::string nonce = writer->announcement().nonce;
    for (const char c : nonce) announced_pipe.send(c);
    return 0;
  });
  const int status = wait_for_exit(engine);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::string nonce;
  for (char c = 0; nonce.size() < 2 * kRingNonceBytes && announced_pipe.receive(c);) nonce += c;

  // The segment itself is a valid ring; only its engine is gone.
  auto raw = Segment::open_read_only(name.str());
  ASSERT_TRUE(raw.has_value());
  auto header = validate_ring_header(raw->data(), raw->size());
  ASSERT_TRUE(header.has_value()) << header.error().describe();
  EXPECT_EQ((*header)->engine_pid, engine);

  auto reader = RingReader::open_announced(RingAnnouncement{"stale", name.str(), nonce, kMinCapacity});
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code, Errc::stale_segment);
}

TEST(RingReader, OpenAnnouncedReportsStaleSegmentWhenTheEnginePidWasReused) {
  ScopedSegmentName name;
  auto writer = RingWriter::create(name.str(), RingIdentity{"reused", 3, kMinCapacity, Cursor{0}});
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
    auto w = RingWriter::create(name_.str(), RingIdentity{"wait", 1, kMinCapacity, Cursor{0}});
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

  ScopedSegmentName name_;
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

TEST_F(RingWait, WakesASleepingReaderWhenTheSegmentCloses) {
  const WaitResult r = wait_in_child(Cursor{0}, [&] {
    close_segment();
    writer_->wake_readers();
  });
  EXPECT_EQ(r, WaitResult::closed);
}

}  // namespace
}  // namespace backscroll::shm
