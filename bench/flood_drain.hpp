// What the flood benchmarks share: a drain rate sample, the plain read() loop every benchmark
// compares against, an engine flood drained by shm readers, and medians.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/engine_under_test.hpp"
#include "bench/stats.hpp"
#include "shm/ring_reader.hpp"

namespace backscroll::bench {

using Clock = std::chrono::steady_clock;

inline std::uint64_t g_checksum = 0;  // keeps the reader's reads from being optimized away

struct Sample {
  double seconds = 0;
  std::uint64_t bytes = 0;
  double cpu_seconds = 0;  // the draining thread's own CPU time, where measured (plain_loop)
  double mb_per_s() const { return static_cast<double>(bytes) / seconds / 1e6; }
};

// The flood_writer child (bench/flood_writer.cpp) writing `bytes` of text lines.
inline std::vector<std::string> flood_writer_argv(std::uint64_t bytes) {
  return {(bin_dir() / "flood_writer").string(), std::to_string(bytes)};
}

// This thread's CPU time (user + system) so far.
inline double thread_cpu_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The limit: `argv` on a fresh cooked PTY (a shell's default termios), drained by blocking
// read() of 64 KiB until EIO (the child exited and every byte was read). Also measures the
// reader's CPU time: what any consumer of the PTY spends at least.
inline Sample plain_loop(const std::vector<std::string>& argv) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ::grantpt(master);
  ::unlockpt(master);
  char slave_path[128];
  ::ptsname_r(master, slave_path, sizeof slave_path);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, slave_path, O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&actions, 0, 1);
  posix_spawn_file_actions_adddup2(&actions, 0, 2);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto start = Clock::now();
  pid_t pid = 0;
  if (::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ) != 0) {
    std::perror("posix_spawn");
    std::exit(1);
  }
  std::vector<char> buffer(65536);
  std::uint64_t total = 0;
  const double cpu_start = thread_cpu_now();
  for (;;) {
    const ssize_t n = ::read(master, buffer.data(), buffer.size());
    if (n > 0) {
      total += static_cast<std::uint64_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO: the slave side is closed and drained
    }
  }
  const auto end = Clock::now();
  const double cpu = thread_cpu_now() - cpu_start;
  ::waitpid(pid, nullptr, 0);
  ::close(master);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return {std::chrono::duration<double>(end - start).count(), total, cpu};
}

// One shm reader draining `session` of `actor` in place from `from` until the session is
// sealed and read to its end; returns the end cursor. Touches every cache line, as a consumer
// that uses the bytes would.
inline Cursor drain_session(const Places& places, const std::string& actor, std::uint64_t session,
                            Cursor from) {
  auto reader = shm::RingReader::open(places, actor);
  if (!reader) fail(reader.error());
  Cursor cursor = from;
  std::uint64_t checksum = 0;
  for (;;) {
    // Taken before looking, so a wake from here on ends the wait below.
    const std::uint32_t wake_seen = reader->wake_seen();
    auto view = reader->read(cursor, 1 << 20);
    if (!view) fail(view.error());
    if (!view->empty()) {
      for (const auto span : {view->first, view->second}) {
        for (std::size_t i = 0; i < span.size(); i += 64) {
          checksum += static_cast<unsigned char>(span[i]);
        }
      }
      if (!reader->intact(cursor)) fail(Error{Errc::cursor_expired, "reader lapped", {}});
      cursor = view->to;
      continue;
    }
    const auto record = reader->session(session);
    if (record && (record->flags & shm::kSessionSealed) && Cursor{record->end} <= cursor) {
      if (record->exit_code != 0) {
        fail(Error{Errc::internal,
                   "the flood's child ended with status " + std::to_string(record->exit_code) +
                       ", signal " + std::to_string(record->term_signal),
                   {}});
      }
      break;
    }
    reader->wait(cursor, std::chrono::milliseconds(100), wake_seen);
  }
  static std::mutex checksum_mutex;
  const std::lock_guard lock(checksum_mutex);
  g_checksum += checksum;
  return cursor;
}

// Spawns `argv` in a new actor of the engine at `places` (through `client`) and drains it
// through `readers` shm readers here (one thread each), timed from the spawn request until every
// reader has read the sealed session to its end. The actor is deleted afterwards.
inline Sample engine_flood(const Places& places, control::ControlClient& client,
                           const std::string& actor, const std::vector<std::string>& argv,
                           int readers = 1) {
  const auto start = Clock::now();
  const auto spawned = client.call("spawn", {{"actor", actor}, {"argv", argv}});
  if (!spawned) fail(spawned.error());
  const std::uint64_t session = spawned->header["session"].get<std::uint64_t>();
  const Cursor from{spawned->header["cursor"].get<std::uint64_t>()};
  std::vector<std::thread> others;
  for (int i = 1; i < readers; ++i)
    others.emplace_back([&] { drain_session(places, actor, session, from); });
  const Cursor end = drain_session(places, actor, session, from);
  for (std::thread& t : others) t.join();
  const auto stop = Clock::now();
  (void)client.call("delete", {{"actor", actor}});
  return {std::chrono::duration<double>(stop - start).count(), end - from};
}

inline Sample engine_flood(bench::EngineUnderTest& engine, const std::string& actor,
                           const std::vector<std::string>& argv, int readers = 1) {
  return engine_flood(engine.places(), engine.client(), actor, argv, readers);
}

}  // namespace backscroll::bench
