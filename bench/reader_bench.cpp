// bench/reader_bench: what local readers of the shared rings get and cost (issue 5, goal 3).
//
//   reader_bench [--quick] [--json FILE]
//
// 1. Catch-up: a reader in another process consumes a full 16 MiB ring (its real sealed
//    memfds) from its oldest byte to the committed cursor, in place, touching every cache line
//    and confirming intact() per view, as a tool attaching late does. GB/s.
// 2. Wake-up: the writer (this process) appends an 8-byte CLOCK_MONOTONIC stamp and wakes the
//    ring's readers every 2 ms; a reader process asleep in RingReader::wait() measures from the
//    stamp to its own clock after waking. p50 / p99 / max in microseconds.
// 3. Readers' cost to the drain: a PTY flood through backscrolld --no-mirror drained by one
//    shm reader here, alone and with 15 more reader processes mapping the same ring (8 of them
//    stopped with SIGSTOP once attached: the ring laps them, they never hold the engine back),
//    alternating in one run; the ratio of medians.
// Timings are printed, never asserted.
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/engine_under_test.hpp"
#include "bench/flood_drain.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"

namespace {

using namespace backscroll;
using nlohmann::json;

constexpr std::uint64_t kRingBytes = 16u << 20;

std::uint64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

shm::RingWriter make_ring() {
  auto w = shm::RingWriter::create({"bench", 1, kRingBytes, Cursor{0}});
  if (!w) bench::fail(w.error());
  return std::move(*w);
}

// Runs `body` in a child process that reports doubles back through a pipe.
template <typename Body>
std::vector<double> in_child(Body body) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::vector<double> out = body();
    const auto* p = reinterpret_cast<const char*>(out.data());
    std::size_t left = out.size() * sizeof(double);
    while (left > 0) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) ::_exit(1);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::vector<double> out;
  double v = 0;
  while (::read(fds[0], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) out.push_back(v);
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return out;
}

// GB/s of consuming the whole ring in place from another process, per pass.
std::vector<double> catch_up(int passes) {
  shm::RingWriter writer = make_ring();
  std::vector<std::byte> block(64 * 1024, std::byte{'x'});
  for (std::uint64_t n = 0; n < 2 * kRingBytes; n += block.size()) writer.append(block);
  const std::vector<double> rates = in_child([&] {
    auto reader = shm::RingReader::open_announced(writer.announcement());
    if (!reader) bench::fail(reader.error());
    std::vector<double> out;
    std::uint64_t sum = 0;
    for (int p = 0; p < passes; ++p) {
      const auto start = bench::Clock::now();
      Cursor at = reader->oldest();
      const Cursor end = reader->committed();
      while (at < end) {
        auto view = reader->read(at, 1 << 20);
        if (!view || view->empty()) bench::fail(Error{Errc::internal, "catch-up read failed", {}});
        for (const auto span : {view->first, view->second})
          for (std::size_t i = 0; i < span.size(); i += 64)
            sum += static_cast<unsigned char>(span[i]);
        if (!reader->intact(at)) bench::fail(Error{Errc::cursor_expired, "lapped", {}});
        at = view->to;
      }
      const double s = std::chrono::duration<double>(bench::Clock::now() - start).count();
      out.push_back(static_cast<double>(end - reader->oldest()) / s / 1e9);
    }
    bench::g_checksum += sum;
    return out;
  });
  return rates;
}

// Microseconds from a stamp's commit to a sleeping reader process seeing it.
std::vector<double> wake_up(int samples) {
  shm::RingWriter writer = make_ring();
  int ready[2];
  if (::pipe(ready) != 0) std::exit(1);
  std::vector<double> latencies;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    auto reader = shm::RingReader::open_announced(writer.announcement());
    if (!reader) bench::fail(reader.error());
    Cursor at = reader->committed();
    (void)!::write(ready[1], "r", 1);
    std::vector<double> out;
    for (int i = 0; i < samples; ++i) {
      while (reader->committed() <= at) reader->wait(at, std::chrono::milliseconds(1000));
      const std::uint64_t woke = now_ns();
      std::uint64_t stamp = 0;
      std::array<std::byte, 8> bytes{};
      auto copied = reader->copy(at, bytes);
      if (!copied) bench::fail(copied.error());
      std::memcpy(&stamp, bytes.data(), sizeof stamp);
      at = at + 8;
      out.push_back(static_cast<double>(woke - stamp) / 1e3);
    }
    const auto* p = reinterpret_cast<const char*>(out.data());
    (void)!::write(ready[1], p, out.size() * sizeof(double));
    ::_exit(0);
  }
  ::close(ready[1]);
  char r = 0;
  (void)!::read(ready[0], &r, 1);
  for (int i = 0; i < samples; ++i) {
    ::usleep(2000);  // the reader is asleep on the futex by now
    const std::uint64_t stamp = now_ns();
    writer.append(std::as_bytes(std::span(&stamp, 1)));
    writer.wake_readers();
  }
  double v = 0;
  while (::read(ready[0], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) latencies.push_back(v);
  ::close(ready[0]);
  ::waitpid(pid, nullptr, 0);
  return latencies;
}

// A flood drained by the reader here, with `extra` more reader processes on the ring
// (`stopped` of them SIGSTOPped once attached).
bench::Sample flood_with_readers(bench::EngineUnderTest& engine, const std::string& actor,
                                 std::uint64_t bytes, int extra, int stopped) {
  const auto start = bench::Clock::now();
  const auto spawned =
      engine.call("spawn", {{"actor", actor}, {"argv", bench::flood_writer_argv(bytes)}});
  const std::uint64_t session = spawned.header["session"].get<std::uint64_t>();
  const Cursor from{spawned.header["cursor"].get<std::uint64_t>()};
  std::vector<pid_t> readers;
  for (int i = 0; i < extra; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (i < stopped) {
        auto mapped = shm::RingReader::open(engine.places(), actor);  // attached, then stopped
        ::raise(SIGSTOP);
        ::_exit(mapped ? 0 : 1);
      }
      bench::drain_session(engine.places(), actor, session, from);
      ::_exit(0);
    }
    readers.push_back(pid);
  }
  const Cursor end = bench::drain_session(engine.places(), actor, session, from);
  const auto stop = bench::Clock::now();
  for (pid_t pid : readers) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  (void)engine.call("delete", {{"actor", actor}});
  return {std::chrono::duration<double>(stop - start).count(), end - from};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_path;
  CLI::App app{"shared-ring readers: catch-up rate, wake-up latency, cost of many readers"};
  app.add_flag("--quick", quick, "few samples, small floods (CI smoke run)");
  app.add_option("--json", json_path, "also write the results as JSON here");
  CLI11_PARSE(app, argc, argv);
  json out;

  const std::vector<double> rates = catch_up(quick ? 3 : 20);
  const double gbps = bench::median(rates);
  std::printf("| reader | figure |\n|---|---|\n");
  std::printf("| catch-up on a full 16 MiB ring, in place (median of %zu) | %.2f GB/s |\n",
              rates.size(), gbps);
  out["catch_up_gb_s"] = {{"median", gbps}, {"passes", rates}};

  const std::vector<double> wake = wake_up(quick ? 100 : 2000);
  const bench::Percentiles w = bench::percentiles(wake);
  std::printf(
      "| wake-up, commit to a sleeping reader process: p50 / p99 / max | %.1f / %.1f / %.1f us |\n",
      w.p50, w.p99, w.max);
  out["wake_up_us"] = {{"p50", w.p50}, {"p99", w.p99}, {"max", w.max}, {"samples", wake}};

  const std::uint64_t bytes = quick ? (8u << 20) : (256u << 20);
  const int rounds = quick ? 1 : 3;
  bench::EngineUnderTest engine({"--no-mirror"});
  std::vector<double> alone, crowded;
  for (int r = 0; r < rounds; ++r) {
    alone.push_back(flood_with_readers(engine, "a" + std::to_string(r), bytes, 0, 0).mb_per_s());
    crowded.push_back(flood_with_readers(engine, "c" + std::to_string(r), bytes, 15, 8).mb_per_s());
    std::fprintf(stderr, "round %d: 1 reader %.1f MB/s, 16 readers (8 stopped) %.1f MB/s\n", r,
                 alone.back(), crowded.back());
  }
  const double a = bench::median(alone), c = bench::median(crowded);
  std::printf(
      "| drain with 1 reader / 16 readers, 8 of them stopped (--no-mirror, medians of %d) | "
      "%.1f / %.1f MB/s: ratio %.3f |\n",
      rounds, a, c, c / a);
  out["readers_cost"] = {
      {"one_reader_mb_s", alone}, {"sixteen_readers_mb_s", crowded}, {"ratio", c / a}};
  std::fprintf(stderr, "checksum %llu\n", static_cast<unsigned long long>(bench::g_checksum));
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}
