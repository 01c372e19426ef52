// What the flood benchmarks share: a drain rate sample, an engine flood drained by one shm
// reader (the consumer every benchmark compares against a plain read() loop), and medians.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench/engine_under_test.hpp"
#include "shm/ring_reader.hpp"

namespace backscroll::bench {

using Clock = std::chrono::steady_clock;

inline std::uint64_t g_checksum = 0;  // keeps the reader's reads from being optimized away

struct Sample {
  double seconds = 0;
  std::uint64_t bytes = 0;
  double mb_per_s() const { return static_cast<double>(bytes) / seconds / 1e6; }
};

// Spawns the flood in a new actor of `engine` and drains it through one shm reader here.
inline Sample engine_flood(bench::EngineUnderTest& engine, const std::string& actor,
                    std::uint64_t flood_bytes) {
  const auto start = Clock::now();
  const auto spawned = engine.call(
      "spawn", {{"actor", actor},
                {"argv", {(bin_dir() / "flood_writer").string(), std::to_string(flood_bytes)}}});
  auto reader = shm::RingReader::open(engine.places(), actor);
  if (!reader) fail(reader.error());
  const std::uint64_t session = spawned.header["session"].get<std::uint64_t>();
  Cursor cursor{spawned.header["cursor"].get<std::uint64_t>()};
  const Cursor start_cursor = cursor;
  std::uint64_t checksum = 0;
  for (;;) {
    auto view = reader->read(cursor, 1 << 20);
    if (!view) fail(view.error());
    if (!view->empty()) {
      // Touch every cache line, as a consumer that uses the bytes would.
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
        fail(Error{Errc::internal, "flood_writer ended with status " +
                                       std::to_string(record->exit_code) + ", signal " +
                                       std::to_string(record->term_signal), {}});
      }
      break;
    }
    reader->wait(cursor, std::chrono::milliseconds(100));
  }
  const auto end = Clock::now();
  g_checksum += checksum;
  (void)engine.call("delete", {{"actor", actor}});
  return {std::chrono::duration<double>(end - start).count(), cursor - start_cursor};
}


inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace backscroll::bench
