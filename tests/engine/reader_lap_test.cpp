// Readers never hold the engine back, and can never harm it: a reader that sleeps while the
// actor writes ten rings' worth is lapped, learns it (cursor_expired carrying the oldest cursor),
// and resyncs there with every byte it then reads exact; a process that writes to its read-only
// mapping of a ring dies with SIGSEGV while the engine keeps serving unchanged bytes.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "shm/ring_reader.hpp"
#include "tests/engine/engine_process.hpp"
#include "tests/engine/pattern.hpp"

namespace backscroll::testing {
namespace {

constexpr std::uint64_t kRing = 65536;
constexpr std::uint64_t kStep = 32 * 1024;  // bytes the writer prints per byte of input

class ReaderLap : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(engine_.start(EngineConfig::with(
        {"--ring-bytes", std::to_string(kRing), "--grace-ms", "500", "--drain-ms", "300"})));
  }

  // A raw-mode Pattern writer that prints kStep bytes at once, then kStep per input byte, then
  // waits. Returns a reader of its ring once the first step is committed (the terminal is raw
  // by then, so input is not echoed).
  shm::RingReader spawn_paced_writer(const std::string& actor, std::uint32_t seed,
                                     std::uint64_t total) {
    engine_.spawn(actor, {child_binary(), "pattern", std::to_string(seed), std::to_string(total),
                          "raw", std::to_string(kStep), "wait"});
    auto reader = expect_open(actor);
    wait_until([&] { return value(reader.committed()) >= kStep; }, "the writer's first step");
    EXPECT_EQ(value(reader.committed()), kStep);
    return reader;
  }

  shm::RingReader expect_open(const std::string& actor) {
    auto reader = shm::RingReader::open(engine_.places(), actor);
    if (!reader) throw std::runtime_error("open " + actor + ": " + reader.error().describe());
    return std::move(*reader);
  }

  // Lets the writer print `steps` more steps and waits until they are committed.
  void release_steps(const std::string& actor, const shm::RingReader& reader, int steps) {
    const std::uint64_t target =
        value(reader.committed()) + kStep * static_cast<std::uint64_t>(steps);
    engine_.call("input", {{"actor", actor}}, std::string(static_cast<std::size_t>(steps), 'g'));
    wait_until([&] { return value(reader.committed()) >= target; }, "the writer's steps");
    ASSERT_EQ(value(reader.committed()), target);
  }

  EngineProcess engine_;
};

TEST_F(ReaderLap, SleepingReaderIsLappedGetsTheOldestCursorAndResyncsThereExactly) {
  const Pattern stream(9, /*crlf=*/false);
  shm::RingReader reader = spawn_paced_writer("lapped", 9, 21 * kStep);
  ASSERT_EQ(reader.capacity(), kRing);

  // The reader takes the first step in place and checks it: intact.
  auto view = reader.read(Cursor{0}, kStep);
  ASSERT_TRUE(view) << view.error().describe();
  ASSERT_EQ(view->size(), kStep);
  EXPECT_FALSE(stream.first_mismatch(0, view->first));
  EXPECT_TRUE(reader.intact(Cursor{0}));

  // It sleeps while the actor writes ten rings' worth: the bytes it holds are overwritten, and
  // intact() says so.
  release_steps("lapped", reader, 20);
  EXPECT_FALSE(reader.intact(Cursor{0}));
  EXPECT_TRUE(stream.first_mismatch(0, view->first)) << "the engine did not overwrite the view";

  // Its next read is refused with the oldest readable cursor, which lies within one ring of the
  // end; the engine's history agrees.
  std::vector<std::byte> buf(kRing);
  auto lapped = reader.copy(view->to, buf);
  ASSERT_FALSE(lapped);
  EXPECT_EQ(lapped.error().code, Errc::cursor_expired);
  ASSERT_TRUE(lapped.error().cursor);
  std::uint64_t oldest = *lapped.error().cursor;
  EXPECT_GE(oldest, value(reader.committed()) - kRing);
  EXPECT_GT(oldest, value(view->to));
  // (The io thread re-arms its PTY read just after each commit, reserving the space after it:
  // until it has, the oldest readable cursor may still move forward a little.)
  const Error refused = expect_error(
      engine_.try_call("history", {{"actor", "lapped"}, {"from", value(view->to)}}), "history");
  EXPECT_EQ(refused.code, Errc::cursor_expired);
  ASSERT_TRUE(refused.cursor);
  EXPECT_GE(*refused.cursor, oldest);
  EXPECT_LE(*refused.cursor, value(reader.oldest()));

  // Resync at the oldest cursor: everything from there to committed is exactly the stream. A
  // reservation made meanwhile only moves the oldest cursor on: resync there.
  auto to = reader.copy(Cursor{oldest}, buf);
  for (int retry = 0; !to && to.error().code == Errc::cursor_expired && retry < 3; ++retry) {
    ASSERT_TRUE(to.error().cursor);
    EXPECT_GT(*to.error().cursor, oldest);
    oldest = *to.error().cursor;
    to = reader.copy(Cursor{oldest}, buf);
  }
  ASSERT_TRUE(to) << to.error().describe();
  EXPECT_EQ(*to, reader.committed());
  EXPECT_FALSE(stream.first_mismatch(oldest, std::span(buf).first(*to - Cursor{oldest})));
  EXPECT_EQ(engine_.history("lapped", oldest),
            std::string(reinterpret_cast<const char*>(buf.data()), *to - Cursor{oldest}));
}

TEST_F(ReaderLap, ViewTurnsUntrustedAsSoonAsTheEngineReservesOverItBeforeAnyByteChanges) {
  // The seqlock's promise: `reserved` is published before the kernel may write into the space,
  // so a view becomes untrusted (intact() false, copy() refused) before a byte of it changes.
  const Pattern stream(10, /*crlf=*/false);
  shm::RingReader reader = spawn_paced_writer("torn", 10, 4 * kStep);
  auto view = reader.read(Cursor{0}, kStep);
  ASSERT_TRUE(view);
  EXPECT_TRUE(reader.intact(Cursor{0}));

  // The second step fills the ring; the engine's next read reserves the slot of cursor 0.
  release_steps("torn", reader, 1);
  wait_until([&] { return !reader.intact(Cursor{0}); }, "the reservation over cursor 0");
  // Nothing overwrote the view yet (the writer waits for input), but it is no longer trusted.
  EXPECT_FALSE(stream.first_mismatch(0, view->first));
  std::vector<std::byte> buf(kStep);
  auto copied = reader.copy(Cursor{0}, buf);
  ASSERT_FALSE(copied);
  EXPECT_EQ(copied.error().code, Errc::cursor_expired);
  EXPECT_EQ(copied.error().cursor, value(reader.oldest()));
  EXPECT_GT(value(reader.oldest()), 0u);
}

TEST_F(ReaderLap, HistoryPagesByMaxBytesAndStopsAtTo) {
  const Pattern stream(12, /*crlf=*/false);
  shm::RingReader reader = spawn_paced_writer("paged", 12, kStep);
  std::string pages;
  std::uint64_t from = 100;
  for (int calls = 0;; ++calls) {
    ASSERT_LT(calls, 100);
    const Frame page = engine_.call(
        "history", {{"actor", "paged"}, {"from", from}, {"to", 30000}, {"max_bytes", 7000}});
    EXPECT_EQ(page.header.at("from"), from);
    EXPECT_LE(page.payload.size(), 7000u);
    pages += page.payload;
    from = page.header.at("to");
    EXPECT_EQ(from, 100 + pages.size());
    if (!page.header.at("more").get<bool>()) break;
  }
  EXPECT_EQ(from, 30000u);
  EXPECT_EQ(pages.size(), 29900u);
  EXPECT_FALSE(stream.first_mismatch(100, std::as_bytes(std::span(pages))));
  // `to` past committed stops at committed, without `more`.
  const Frame rest =
      engine_.call("history", {{"actor", "paged"}, {"from", 30000}, {"to", 1u << 30}});
  EXPECT_EQ(rest.header.at("to"), kStep);
  EXPECT_EQ(rest.header.at("more"), false);
}

TEST_F(ReaderLap, ProcessWritingToItsReadOnlyMappingDiesWhileTheEngineServesOnUnchanged) {
  shm::RingReader reader = spawn_paced_writer("victim", 11, 3 * kStep);
  const std::string before = engine_.history("victim");
  ASSERT_EQ(before.size(), kStep);
  const Json status_before = engine_.status("victim");

  std::string output;
  const shm::RingAnnouncement ring = engine_.ring_of("victim");
  const int status = run_program(
      {child_binary(), "scribble", std::to_string(ring.engine_pid), std::to_string(ring.header_fd),
       std::to_string(ring.data_fd), std::to_string(ring.capacity)},
      &output);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
      << "wait status " << status << ", output: " << output;
  EXPECT_NE(output.find("mprotect -1"), std::string::npos)
      << "a read-only mapping could be made writable: " << output;
  EXPECT_EQ(output.find("survived"), std::string::npos) << output;

  // The engine serves on: ping, the same bytes, the same live session, and more output.
  EXPECT_EQ(engine_.connect().call("ping")->header.value("pid", 0), engine_.pid());
  EXPECT_EQ(engine_.history("victim"), before);
  const Json status_after = engine_.status("victim");
  EXPECT_EQ(status_after.at("pid"), status_before.at("pid"));
  EXPECT_EQ(status_after.at("state"), "running");
  release_steps("victim", reader, 1);
  const std::string next = engine_.history("victim", kStep);
  EXPECT_FALSE(Pattern(11, false).first_mismatch(kStep, std::as_bytes(std::span(next))));
  EXPECT_EQ(next.size(), kStep);
}

}  // namespace
}  // namespace backscroll::testing
