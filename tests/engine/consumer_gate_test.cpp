// Back-pressure from internal consumers (docs/design.md, "Internal consumers"), in
// process: an Engine runs on a thread of the test with a 256 KiB ring, and an internal consumer
// attached to a flooding actor holds its reads back. While the consumer does not advance, the
// engine stops reading (status `paused`, committed frozen within high water + one read of the
// consumer) and the program blocks on its full PTY; advancing to the low-water mark resumes the
// flood; the consumer, reading the ring in place, sees every byte exactly and is never lapped.
// Also the parts on their own: ConsumerGate's hysteresis and detach, InputQueue's pieces.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "engine/consumer_gate.hpp"
#include "engine/engine.hpp"
#include "engine/input_queue.hpp"
#include "shm/ring_reader.hpp"
#include "shm/segment.hpp"
#include "tests/engine/engine_process.hpp"
#include "tests/engine/pattern.hpp"

namespace backscroll::testing {
namespace {

// Ring memfds this process holds open (labelled by shm::RingSegments): an engine that went away
// must have closed every one.
int ring_memfds_open() {
  const std::string header = "/memfd:" + std::string(shm::RingSegments::kHeaderLabel);
  const std::string data = "/memfd:" + std::string(shm::RingSegments::kDataLabel);
  int open = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), link_ec).string();
    if (target.rfind(header, 0) == 0 || target.rfind(data, 0) == 0) ++open;
  }
  return open;
}

using engine::ConsumerGate;
using engine::InputQueue;

constexpr std::uint64_t kRing = 256 * 1024;
// The gate's marks for this ring (engine/actor.cpp): high = capacity - min(capacity / 2,
// 2 * read_chunk), low = capacity / 4, and one read is at most read_chunk = min(64 KiB,
// capacity / 4).
constexpr std::uint64_t kReadChunk = 64 * 1024;
constexpr std::uint64_t kHighWater = kRing - 2 * kReadChunk;
constexpr std::uint64_t kLowWater = kRing / 4;

// An Engine on a thread of this process. Spawning and attaching happen before run(), while the
// test's thread is still the io thread (Engine::attach_consumer is io-thread only).
class InProcessEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    places_ = Places::at(dir_.path() / "rt");
    engine::EngineSettings settings;
    settings.actor.ring_bytes = kRing;
    settings.actor.grace = std::chrono::milliseconds(500);
    settings.actor.drain_window = std::chrono::milliseconds(300);
    auto created = engine::Engine::create(places_, settings);
    ASSERT_TRUE(created) << created.error().describe();
    engine_ = std::move(*created);
  }

  void TearDown() override {
    if (io_.joinable()) {
      engine_->request_shutdown();
      io_.join();
      EXPECT_EQ(exit_code_, 0);
    }
    engine_.reset();
    EXPECT_EQ(ring_memfds_open(), 0) << "a ring outlived its engine";
  }

  // Spawns `actor` through the request handler (its reply goes nowhere: connection 0 never
  // exists) and attaches a consumer at cursor 0. Before run() only.
  std::shared_ptr<engine::InternalConsumer> spawn_with_consumer(
      const std::string& actor, const std::vector<std::string>& argv) {
    engine_->on_request(
        0, control::Frame{{{"op", "spawn"}, {"id", 1}, {"actor", actor}, {"argv", argv}}, {}});
    auto consumer = engine_->attach_consumer(actor);
    EXPECT_TRUE(consumer) << "spawn of " << actor << " failed";
    return consumer;
  }

  void run() {
    io_ = std::thread([this] { exit_code_ = engine_->run(); });
    client_.emplace(connect_client(places_));
  }

  Json status(const std::string& actor) {
    return expect_ok(client_->call("status", {{"actor", actor}}), "status")
        .header.at("actors")
        .at(0);
  }

  std::uint64_t committed(const std::string& actor) {
    return status(actor).at("committed").get<std::uint64_t>();
  }

  // Waits until the gate paused the actor's reads; its committed cursor then.
  std::uint64_t wait_paused(const std::string& actor) {
    std::uint64_t at = 0;
    wait_until(
        [&] {
          const Json s = status(actor);
          at = s.at("committed").get<std::uint64_t>();
          return s.at("paused").get<bool>();
        },
        "the gate to pause " + actor);
    return at;
  }

  // The consumer's thread: reads the ring in place from its position to the sealed end of
  // session 1, checks every byte against `stream`, confirms each view intact, then advances.
  // Returns "" or what went wrong.
  std::string consume_to_end(engine::InternalConsumer& consumer, const std::string& actor,
                             const Pattern& stream, std::uint64_t* end_out) {
    auto reader = shm::RingReader::open(places_, actor);
    if (!reader) return "open: " + reader.error().describe();
    const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
    for (;;) {
      const Cursor at = consumer.position();
      if (reader->committed() - at >= reader->capacity()) return "the consumer was lapped";
      auto view = reader->read(at, 1 << 20);
      if (!view) return "read at " + std::to_string(value(at)) + ": " + view.error().describe();
      if (!view->empty()) {
        if (stream.first_mismatch(value(at), view->first) ||
            stream.first_mismatch(value(at) + view->first.size(), view->second)) {
          return "wrong bytes in [" + std::to_string(value(at)) + ", " +
                 std::to_string(value(view->to)) + ")";
        }
        if (!reader->intact(at))
          return "the view at " + std::to_string(value(at)) + " was overwritten";
        consumer.advance_to(view->to);
        continue;
      }
      const auto session = reader->session(1);
      if (session && (session->flags & shm::kSessionSealed) != 0 && value(at) >= session->end) {
        *end_out = session->end;
        return "";
      }
      if (std::chrono::steady_clock::now() > deadline) return "no seal";
      reader->wait(at, std::chrono::milliseconds(50));
    }
  }

  TempDir dir_;
  Places places_;
  std::unique_ptr<engine::Engine> engine_;
  std::thread io_;
  int exit_code_ = -1;
  std::optional<control::ControlClient> client_;
};

TEST_F(InProcessEngine, HeldConsumerPausesTheFloodWithoutLosingOrLappingAByte) {
  constexpr std::uint64_t kTotal = 8 << 20;
  auto consumer = spawn_with_consumer(
      "flood", {child_binary(), "pattern", "21", std::to_string(kTotal), "raw"});
  ASSERT_TRUE(consumer);
  run();

  // The consumer holds at 0: reads pause within high water + one read of it, and stay paused.
  const std::uint64_t frozen = wait_paused("flood");
  EXPECT_GT(frozen, kHighWater);
  EXPECT_LE(frozen, kHighWater + kReadChunk);
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const Json s = status("flood");
    EXPECT_EQ(s.at("committed"), frozen);
    EXPECT_EQ(s.at("paused"), true);
    EXPECT_EQ(s.at("state"), "running") << "the program did not block: it finished or died";
  }
  // Nothing was lost before the pause: the consumer skips what it held (checked here through
  // history) and reads the rest in place below.
  const Frame held =
      expect_ok(client_->call("history", {{"actor", "flood"}, {"from", 0}}), "history");
  EXPECT_EQ(held.payload.size(), frozen);
  EXPECT_FALSE(Pattern(21, false).first_mismatch(0, std::as_bytes(std::span(held.payload))));
  // Advancing but staying above the low-water mark does not resume (hysteresis)...
  consumer->advance_to(Cursor{frozen - kLowWater - 1});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(committed("flood"), frozen);
  // ...reaching it does.
  consumer->advance_to(Cursor{frozen - kLowWater});
  wait_until([&] { return committed("flood") > frozen; }, "the flood to resume");
  const std::uint64_t refrozen = wait_paused("flood");
  EXPECT_LE(refrozen, frozen - kLowWater + kHighWater + kReadChunk);

  const Pattern stream(21, /*crlf=*/false);
  std::uint64_t end = 0;
  EXPECT_EQ(consume_to_end(*consumer, "flood", stream, &end), "");
  EXPECT_EQ(end, kTotal);
  EXPECT_EQ(status("flood").at("sessions").at(0).at("exit_code"), 0);
}

TEST_F(InProcessEngine, ProgramExitingWhileTheGateIsPausedStillDeliversEveryByte) {
  // Regression: the drain window started at the program's exit even while the gate held reads
  // back, so a consumer slower than the window lost the program's last bytes (still in the
  // PTY) and the session sealed short. The window must count only while the engine may read.
  // Steps small enough that what the engine has not read when the gate pauses (less than one
  // step) plus the last 100 bytes fit in the PTY's buffer: the program can finish and exit.
  constexpr std::uint64_t kStep = 2 * 1024;
  auto consumer = spawn_with_consumer(
      "last-words", {child_binary(), "pattern", "22", "100000000", "raw", std::to_string(kStep)});
  ASSERT_TRUE(consumer);
  run();
  EventStream events(places_);
  wait_until([&] { return committed("last-words") == kStep; }, "the first step");
  // Up to just under high water in one go (no pause is possible there), then one step at a
  // time until the gate pauses.
  constexpr std::uint64_t kBulk = (kHighWater - 8 * 1024) / kStep;
  std::uint64_t written = kStep * (1 + kBulk);
  expect_ok(client_->call("input", {{"actor", "last-words"}}, std::string(kBulk, 'g')), "input");
  wait_until([&] { return committed("last-words") == written; }, "the bulk steps");
  while (!status("last-words").at("paused").get<bool>()) {
    ASSERT_LT(written, kRing) << "the gate never paused";
    expect_ok(client_->call("input", {{"actor", "last-words"}}, "g"), "input");
    written += kStep;
    wait_until(
        [&] {
          const Json s = status("last-words");
          return s.at("committed").get<std::uint64_t>() == written || s.at("paused").get<bool>();
        },
        "the step");
  }
  // Paused: the program's last 100 bytes wait in the PTY (they fit), and it exits.
  expect_ok(client_->call("input", {{"actor", "last-words"}}, "sq"), "input");
  written += 100;
  events.wait_for("exit", "last-words");
  // Longer than the drain window, with the consumer still holding at 0.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  std::uint64_t end = 0;
  EXPECT_EQ(consume_to_end(*consumer, "last-words", Pattern(22, false), &end), "");
  EXPECT_EQ(end, written) << "bytes the program wrote before it exited were dropped";
}

// ---- ConsumerGate on its own -------------------------------------------------------------

class Gate : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(notify_, 0); }
  void TearDown() override { ::close(notify_); }
  // True when the gate wrote its eventfd since the last call (and drains it).
  bool notified() {
    std::uint64_t n = 0;
    return ::read(notify_, &n, sizeof n) == sizeof n && n > 0;
  }
  int notify_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
};

TEST_F(Gate, WithoutConsumersNeverHolds) {
  ConsumerGate gate(1000, 200, notify_);
  EXPECT_FALSE(gate.hold(Cursor{1'000'000}));
  EXPECT_FALSE(gate.paused());
}

TEST_F(Gate, PausesOnlyWhenTheConsumerIsMoreThanHighWaterBehind) {
  ConsumerGate gate(1000, 200, notify_);
  auto consumer = gate.attach(Cursor{0});
  EXPECT_FALSE(gate.hold(Cursor{1000}));
  EXPECT_FALSE(gate.paused());
  EXPECT_TRUE(gate.hold(Cursor{1001}));
  EXPECT_TRUE(gate.paused());
}

TEST_F(Gate, StaysPausedUntilTheConsumerIsWithinLowWaterAndOnlyThenWakesTheLoop) {
  ConsumerGate gate(1000, 200, notify_);
  auto consumer = gate.attach(Cursor{0});
  ASSERT_TRUE(gate.hold(Cursor{1001}));
  consumer->advance_to(Cursor{700});  // 301 behind: under high water, over low water
  EXPECT_FALSE(notified());
  EXPECT_TRUE(gate.hold(Cursor{1001}));
  EXPECT_TRUE(gate.paused());
  consumer->advance_to(Cursor{801});  // 200 behind: at low water
  EXPECT_TRUE(notified());
  EXPECT_FALSE(gate.hold(Cursor{1001}));
  EXPECT_FALSE(gate.paused());
  // Unpaused, it holds again only past high water (not past low water).
  EXPECT_FALSE(gate.hold(Cursor{1500}));
  EXPECT_FALSE(gate.hold(Cursor{1801}));
  EXPECT_TRUE(gate.hold(Cursor{1802}));
}

TEST_F(Gate, SlowestConsumerDecides) {
  ConsumerGate gate(1000, 200, notify_);
  auto fast = gate.attach(Cursor{0});
  auto slow = gate.attach(Cursor{0});
  fast->advance_to(Cursor{2000});
  EXPECT_TRUE(gate.hold(Cursor{2000}));
  slow->advance_to(Cursor{1900});
  EXPECT_FALSE(gate.hold(Cursor{2000}));
  EXPECT_EQ(gate.consumers(), 2u);
}

TEST_F(Gate, DetachReleasesAPausedGateAndWakesTheLoop) {
  ConsumerGate gate(1000, 200, notify_);
  auto stuck = gate.attach(Cursor{0});
  ASSERT_TRUE(gate.hold(Cursor{5000}));
  stuck->detach();
  EXPECT_TRUE(stuck->detached());
  EXPECT_TRUE(notified());
  EXPECT_FALSE(gate.hold(Cursor{5000}));
  EXPECT_FALSE(gate.paused());
  EXPECT_EQ(gate.consumers(), 0u);
}

TEST_F(Gate, LowWaterIsNeverAboveHighWater) {
  ConsumerGate gate(100, 500, notify_);
  EXPECT_EQ(gate.low_water(), 100u);
  auto consumer = gate.attach(Cursor{0});
  ASSERT_TRUE(gate.hold(Cursor{101}));
  consumer->advance_to(Cursor{1});
  EXPECT_TRUE(notified());
  EXPECT_FALSE(gate.hold(Cursor{101}));
}

// ---- InputQueue on its own ---------------------------------------------------------------

using Clock = InputQueue::Clock;

std::string front_text(const InputQueue& q) {
  const auto f = q.front();
  return {reinterpret_cast<const char*>(f.data()), f.size()};
}

// Writes the whole front piece at `now`; returns its bytes.
std::string write_front(InputQueue& q, Clock::time_point now) {
  std::string text = front_text(q);
  q.consume(text.size(), now);
  return text;
}

TEST(InputQueuePieces, DelRunIsWrittenApartFromTheTextAroundItWithAGap) {
  InputQueue q(1024);
  ASSERT_TRUE(
      q.try_push("ab\x7f\x7f"
                 "cd",
                 false));
  EXPECT_EQ(q.front_ready_at(), Clock::time_point::min());
  const auto t0 = Clock::now();
  EXPECT_EQ(write_front(q, t0), "ab");
  EXPECT_EQ(q.front_ready_at(), t0 + InputQueue::kKindChangeGap);
  const auto t1 = t0 + std::chrono::milliseconds(30);
  EXPECT_EQ(write_front(q, t1), "\x7f\x7f");
  EXPECT_EQ(q.front_ready_at(), t1 + InputQueue::kKindChangeGap);
  EXPECT_EQ(write_front(q, t1), "cd");
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.queued_bytes(), 0u);
}

TEST(InputQueuePieces, PasteEndingInEnterSendsTheEnterAloneAfterTheLongerGap) {
  InputQueue q(1024);
  ASSERT_TRUE(q.try_push("ls -la\r", true));
  const auto t0 = Clock::now();
  EXPECT_EQ(write_front(q, t0), "ls -la");
  EXPECT_EQ(q.front_ready_at(), t0 + InputQueue::kPasteEnterGap);
  EXPECT_EQ(write_front(q, t0), "\r");
  EXPECT_TRUE(q.empty());
}

TEST(InputQueuePieces, TypedEnterAndALoneEnterStayWithTheirText) {
  InputQueue q(1024);
  ASSERT_TRUE(q.try_push("ls\r", false));
  EXPECT_EQ(write_front(q, Clock::now()), "ls\r");
  ASSERT_TRUE(q.try_push("\r", true));
  EXPECT_EQ(q.front_ready_at(), Clock::time_point::min());
  EXPECT_EQ(write_front(q, Clock::now()), "\r");
  EXPECT_TRUE(q.empty());
}

TEST(InputQueuePieces, KindChangeAcrossTwoPushesStillGetsItsGap) {
  InputQueue q(1024);
  ASSERT_TRUE(q.try_push("a", false));
  const auto t0 = Clock::now();
  EXPECT_EQ(write_front(q, t0), "a");
  ASSERT_TRUE(q.try_push("\x7f", false));
  EXPECT_EQ(q.front_ready_at(), t0 + InputQueue::kKindChangeGap);
}

TEST(InputQueuePieces, RefusalKeepsEverythingAcceptedInOrder) {
  InputQueue q(10);
  EXPECT_TRUE(q.try_push("12345", false));
  EXPECT_FALSE(q.try_push("678901", false));
  EXPECT_EQ(q.queued_bytes(), 5u);
  EXPECT_TRUE(q.try_push("67890", false));
  EXPECT_FALSE(q.try_push("x", false));
  EXPECT_EQ(q.queued_bytes(), 10u);
  std::string out;
  while (!q.empty()) out += write_front(q, Clock::now());
  EXPECT_EQ(out, "1234567890");
}

TEST(InputQueuePieces, PartlyWrittenPieceIsReadyAtOnceAndItsBytesNeverMove) {
  InputQueue q(1024);
  ASSERT_TRUE(q.try_push("abc", false));
  const auto in_flight = q.front();  // handed to the kernel
  ASSERT_TRUE(q.try_push("def", false));
  ASSERT_TRUE(q.try_push("ghi", false));
  EXPECT_EQ(q.front().data(), in_flight.data());
  EXPECT_EQ(q.front().size(), 3u);
  q.consume(1, Clock::now());
  EXPECT_EQ(front_text(q), "bc");
  EXPECT_EQ(q.front_ready_at(), Clock::time_point::min());
  q.consume(2, Clock::now());
  EXPECT_EQ(front_text(q), "defghi");  // later pushes of one kind merge behind the front
  EXPECT_EQ(q.queued_bytes(), 6u);
}

TEST(InputQueuePieces, ClearDropsEverything) {
  InputQueue q(1024);
  ASSERT_TRUE(q.try_push("abc\x7f", true));
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.queued_bytes(), 0u);
  EXPECT_TRUE(q.front().empty());
  EXPECT_TRUE(q.try_push(std::string(1024, 'x'), false));
}

}  // namespace
}  // namespace backscroll::testing
