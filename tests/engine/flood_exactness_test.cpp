// Every byte a program prints reaches its ring exactly: programs flood their PTYs with the
// Pattern stream while readers in this process follow the rings through shm::RingReader
// (wait + copy) from cursor 0 until the session is sealed, checking each byte against the
// stream. Raw terminals must carry the stream byte for byte; a cooked one turns "\n" into "\r\n"
// (ONLCR) and nothing else. Rings are big enough (50 MB) that a reader which only copies and
// compares is never lapped: a lap would fail the test rather than be skipped over.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "shm/ring_reader.hpp"
#include "tests/engine/engine_process.hpp"
#include "tests/engine/pattern.hpp"

namespace backscroll::testing {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

struct Followed {
  std::uint64_t start = 0;    // the session's first cursor
  std::uint64_t checked = 0;  // bytes read and compared
  std::uint64_t end = 0;      // the sealed session's end cursor
  std::uint64_t max_lag = 0;  // largest committed - reader cursor seen before a copy
  std::string failure;        // empty when every byte matched and the session sealed
};

// Follows session `session` of `actor` from its first byte to its sealed end, comparing every
// byte with `expected` (the stream from the session's start).
Followed follow(const Places& places, const std::string& actor, std::uint64_t session,
                const Pattern& expected) {
  Followed out;
  auto reader = shm::RingReader::open(places, actor);
  if (!reader) {
    out.failure = "open: " + reader.error().describe();
    return out;
  }
  std::optional<shm::SessionRecord> record;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (!(record = reader->session(session))) {
    if (std::chrono::steady_clock::now() > deadline) {
      out.failure = "session never appeared";
      return out;
    }
    std::this_thread::yield();
  }
  out.start = record->start;
  Cursor at{out.start};
  std::vector<std::byte> buf(4 * kMiB);
  for (;;) {
    out.max_lag = std::max(out.max_lag, reader->committed() - at);
    auto to = reader->copy(at, buf);
    if (!to) {
      out.failure = "copy at cursor " + std::to_string(value(at)) + ": " + to.error().describe() +
                    " (max lag " + std::to_string(out.max_lag) + ")";
      return out;
    }
    const std::uint64_t n = *to - at;
    if (n > 0) {
      if (auto bad = expected.first_mismatch(value(at) - out.start, std::span(buf).first(n))) {
        out.failure =
            "byte at cursor " + std::to_string(*bad + out.start) + " differs from the stream";
        return out;
      }
      out.checked += n;
      at = *to;
      continue;
    }
    record = reader->session(session);
    if (record && (record->flags & shm::kSessionSealed) != 0 && value(at) >= record->end) {
      out.end = record->end;
      return out;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      out.failure = "the session did not seal (at cursor " + std::to_string(value(at)) + ")";
      return out;
    }
    if (reader->wait(at, std::chrono::milliseconds(100)) == shm::WaitResult::closed) {
      out.failure = "the segment closed before the session sealed";
      return out;
    }
  }
}

class FloodExactness : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(engine_.start(EngineConfig::with(
        {"--ring-bytes", "50000000", "--grace-ms", "500", "--drain-ms", "3000"})));
  }

  // Spawns `actor` writing `bytes` of the stream with `seed` in `mode` (raw or cooked).
  void spawn_writer(const std::string& actor, std::uint32_t seed, std::uint64_t bytes,
                    const std::string& mode) {
    engine_.spawn(actor,
                  {child_binary(), "pattern", std::to_string(seed), std::to_string(bytes), mode});
  }

  void expect_exact(const Followed& f, const Pattern& stream, std::uint64_t written,
                    const std::string& actor) {
    EXPECT_EQ(f.failure, "") << actor;
    EXPECT_EQ(f.checked, stream.rendered_length(written)) << actor;
    EXPECT_EQ(f.end - f.start, stream.rendered_length(written)) << actor;
    RecordProperty(actor + "_max_reader_lag", std::to_string(f.max_lag));
  }

  EngineProcess engine_;
};

TEST_F(FloodExactness, RawFloodOf256MiBReachesTheRingByteForByte) {
  constexpr std::uint64_t kBytes = 256 * kMiB;
  spawn_writer("flood", 7, kBytes, "raw");
  const Pattern stream(7, /*crlf=*/false);
  const Followed f = follow(engine_.places(), "flood", 1, stream);
  expect_exact(f, stream, kBytes, "flood");
  const Json session = engine_.wait_sealed("flood");
  EXPECT_EQ(session.at("exit_code"), 0);
  EXPECT_EQ(session.at("end"), f.end);
  std::printf("256 MiB flood: the reader was at most %llu bytes behind\n",
              static_cast<unsigned long long>(f.max_lag));
}

TEST_F(FloodExactness, SixteenActorsFloodingAtOnceEachKeepTheirOwnExactStream) {
  constexpr int kActors = 16;
  constexpr std::uint64_t kBytes = 8 * kMiB;
  std::vector<std::string> names;
  for (int i = 0; i < kActors; ++i) {
    names.push_back("flood-" + std::to_string(i));
    spawn_writer(names.back(), static_cast<std::uint32_t>(100 + i), kBytes, "raw");
  }
  std::vector<Followed> results(kActors);
  std::vector<std::thread> readers;
  for (int i = 0; i < kActors; ++i) {
    readers.emplace_back([&, i] {
      results[static_cast<std::size_t>(i)] =
          follow(engine_.places(), names[static_cast<std::size_t>(i)], 1,
                 Pattern(static_cast<std::uint32_t>(100 + i), false));
    });
  }
  for (auto& t : readers) t.join();
  for (int i = 0; i < kActors; ++i) {
    expect_exact(results[static_cast<std::size_t>(i)],
                 Pattern(static_cast<std::uint32_t>(100 + i), false), kBytes,
                 names[static_cast<std::size_t>(i)]);
  }
}

TEST_F(FloodExactness, OutputThatComesInStepsAfterThePtyWasEmptiedAllArrives) {
  // Between two steps every program waits for input with its PTY read empty: the engine's next
  // read finds nothing and waits for readability (io_uring polls the master for it, or the
  // engine does if the read answers EAGAIN). A step whose wake-up was lost (one that came while
  // a read was in flight, or right after a read that filled its buffer) would stay in the PTY.
  // Step sizes around the line discipline's 4 KiB buffer and far from it.
  constexpr int kSteps = 30;
  const std::vector<std::uint64_t> step_bytes = {1, 4095, 4096, 12000};
  std::vector<std::string> names;
  for (std::size_t i = 0; i < step_bytes.size(); ++i) {
    names.push_back("steps-" + std::to_string(step_bytes[i]));
    engine_.spawn(names.back(), {child_binary(), "pattern", std::to_string(200 + i), "100000000",
                                 "raw", std::to_string(step_bytes[i])});
  }
  auto wait_committed = [&](const std::string& actor, std::uint64_t bytes, int step) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::uint64_t committed = 0;
    while ((committed = engine_.status(actor).at("committed").get<std::uint64_t>()) < bytes &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(committed, bytes) << actor << " at step " << step;
  };
  for (int step = 0; step <= kSteps; ++step) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      // Input only once the last step is in: the first may still meet a cooked terminal.
      if (step > 0) engine_.call("input", {{"actor", names[i]}}, "g");
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      wait_committed(names[i], step_bytes[i] * static_cast<std::uint64_t>(step + 1), step);
    }
    if (HasFailure()) return;
  }
  for (const std::string& name : names) engine_.call("input", {{"actor", name}}, "q");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Pattern stream(static_cast<std::uint32_t>(200 + i), false);
    const Followed f = follow(engine_.places(), names[i], 1, stream);
    expect_exact(f, stream, step_bytes[i] * (kSteps + 1), names[i]);
  }
}

TEST_F(FloodExactness, CookedPtyTurnsEveryNewlineIntoCrLfAndChangesNothingElse) {
  constexpr std::uint64_t kBytes = 4 * kMiB;  // whole lines: a multiple of Pattern::kLineBytes
  spawn_writer("cooked", 42, kBytes, "cooked");
  const Pattern rendered(42, /*crlf=*/true);
  const Followed f = follow(engine_.places(), "cooked", 1, rendered);
  expect_exact(f, rendered, kBytes, "cooked");
}

}  // namespace
}  // namespace backscroll::testing
