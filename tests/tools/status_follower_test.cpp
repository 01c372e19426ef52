// StatusFollower over a ring in the test's own memory (RingWriter::over, RingReader::over): the
// initial state comes from what the ring retains; live changes follow; a lap (the writer
// overwrote bytes before the follower read them, or while it was scanning them in place, or a
// clear) throws the detector away and gives exactly one resync event, with the bytes lost and the
// state restored from what the ring still holds; nothing found in torn bytes is ever reported.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shm/ring_layout.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"
#include "tools/status_follower.hpp"

namespace backscroll::status {
namespace {

constexpr std::uint64_t kCapacity = shm::kMinCapacity;

std::string osc0(std::string_view title) { return "\x1b]0;" + std::string(title) + "\x07"; }

// A ring segment's memory: header page and data area, zeroed and cache-line aligned.
struct alignas(shm::kCacheLine) RingMemory {
  std::byte bytes[shm::kHeaderBytes + kCapacity]{};
};

class StatusFollowerTest : public ::testing::Test {
 protected:
  StatusFollowerTest()
      : memory_(std::make_unique<RingMemory>()),
        writer_(shm::RingWriter::over(memory_->bytes,
                                      shm::RingIdentity{"agent", 1, kCapacity, Cursor{0}})),
        reader_(*shm::RingReader::over(memory_->bytes, sizeof memory_->bytes)) {}

  void write(std::string_view text) {
    writer_.append(std::as_bytes(std::span(text.data(), text.size())));
  }
  // `bytes` of plain text (no sequence, no bell).
  void write_text(std::uint64_t bytes) {
    const std::string line(1023, 'x');
    for (std::uint64_t done = 0; done < bytes;) {
      const std::uint64_t n = std::min<std::uint64_t>(bytes - done, 1024);
      write(std::string_view(line + "\n").substr(0, n));
      done += n;
    }
  }
  std::vector<StatusEvent> poll(StatusFollower& f, const std::function<void()>& before_check = {}) {
    std::vector<StatusEvent> out;
    f.poll(42, out, before_check);
    return out;
  }

  std::unique_ptr<RingMemory> memory_;
  shm::RingWriter writer_;
  shm::RingReader reader_;
};

TEST_F(StatusFollowerTest, StartsFromWhatTheRingHoldsThenFollowsLiveChanges) {
  write("$ claude\r\n" + osc0("✳ Claude Code") + "hi\x07" + osc0("⠂ Write the docs"));
  StatusFollower follower(reader_, StatusRules::defaults());
  const StatusEvent initial = follower.start();
  EXPECT_EQ(initial.kind, StatusEventKind::initial);
  EXPECT_FALSE(initial.previous);
  EXPECT_EQ(initial.state.status, AgentStatus::working);
  EXPECT_EQ(initial.state.title, "⠂ Write the docs");
  EXPECT_EQ(initial.state.bells, 1u);
  EXPECT_EQ(initial.state.cursor, writer_.committed());
  EXPECT_EQ(follower.cursor(), writer_.committed());
  EXPECT_TRUE(poll(follower).empty()) << "the restored state is not a change";

  write("done\r\n" + osc0("✳ Write the docs"));
  const auto events = poll(follower);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StatusEventKind::change);
  EXPECT_EQ(events[0].previous, AgentStatus::working);
  EXPECT_EQ(events[0].state.status, AgentStatus::idle);
  EXPECT_EQ(events[0].state.last_output_ms, 42);
  EXPECT_EQ(follower.cursor(), writer_.committed());
  EXPECT_EQ(follower.state().title, "✳ Write the docs");
}

TEST_F(StatusFollowerTest, SpansOfAnySizeGiveTheSameEvents) {
  std::string stream;
  for (int i = 0; i < 40; ++i) {
    stream += osc0(i % 2 ? "⠋ proj" : "⠙ proj") + "line " + std::to_string(i) + "\r\n";
    if (i % 7 == 0) stream += "\x07";
  }
  std::vector<std::vector<std::string>> runs;
  for (const std::size_t span : {std::size_t{1}, std::size_t{3}, std::size_t{64}, kCapacity}) {
    RingMemory memory;
    auto writer = shm::RingWriter::over(memory.bytes, {"a", 1, kCapacity, Cursor{0}});
    auto reader = *shm::RingReader::over(memory.bytes, sizeof memory.bytes);
    StatusFollower follower(reader, StatusRules::defaults(), span);
    follower.start();
    writer.append(std::as_bytes(std::span(stream.data(), stream.size())));
    std::vector<StatusEvent> events;
    follower.poll(1, events);
    std::vector<std::string> run;
    for (const auto& e : events) {
      run.push_back(e.state.title + " " + std::to_string(e.state.bells) + " @" +
                    std::to_string(value(e.state.cursor)));
    }
    runs.push_back(run);
  }
  EXPECT_EQ(runs[0].size(), 46u);  // 40 titles, 6 bells
  for (const auto& run : runs) EXPECT_EQ(run, runs[0]);
}

TEST_F(StatusFollowerTest, ALapBeforeTheReadGivesOneResyncFromTheOldestCursor) {
  write(osc0("⠂ Long build"));
  StatusFollower follower(reader_, StatusRules::defaults());
  ASSERT_EQ(follower.start().state.status, AgentStatus::working);
  const Cursor before = follower.cursor();

  // A flood of three rings' worth, a bell, then a title near the end: the follower was asleep.
  write_text(3 * kCapacity);
  write("\x07" + osc0("✳ Long build") + "$ ");
  const auto events = poll(follower);
  ASSERT_EQ(events.size(), 1u);
  const StatusEvent& resync = events[0];
  EXPECT_EQ(resync.kind, StatusEventKind::resync);
  EXPECT_EQ(resync.previous, AgentStatus::working);
  EXPECT_EQ(resync.skipped, reader_.oldest() - before);
  EXPECT_GT(resync.skipped, 2 * kCapacity);
  // The state restored from what the ring holds: its bell and its last title.
  EXPECT_EQ(resync.state.status, AgentStatus::idle);
  EXPECT_EQ(resync.state.title, "✳ Long build");
  EXPECT_EQ(resync.state.bells, 1u);
  EXPECT_EQ(resync.state.cursor, writer_.committed());
  EXPECT_EQ(resync.state.last_output_ms, 42);

  // And it follows on.
  write(osc0("⠐ Next step"));
  const auto next = poll(follower);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].kind, StatusEventKind::change);
  EXPECT_EQ(next[0].previous, AgentStatus::idle);
  EXPECT_EQ(next[0].state.status, AgentStatus::working);
  EXPECT_EQ(next[0].state.bells, 1u);
}

TEST_F(StatusFollowerTest, BytesOverwrittenWhileScannedAreNeverReported) {
  StatusFollower follower(reader_, StatusRules::defaults());
  follower.start();
  write("\x07");  // one bell the follower confirms
  ASSERT_EQ(poll(follower).size(), 1u);
  const Cursor confirmed = follower.cursor();

  // The follower scans a title and a bell in place; before it confirms them, the writer laps it
  // with plain text. What the scan found came from bytes that may be torn: it must not come out.
  write(osc0("⠂ Torn title") + "\x07");
  bool lapped = false;
  const auto events = poll(follower, [&] {
    if (lapped) return;
    lapped = true;
    write_text(kCapacity + 100);
  });
  ASSERT_TRUE(lapped);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StatusEventKind::resync);
  EXPECT_EQ(events[0].previous, AgentStatus::unknown);
  EXPECT_EQ(events[0].skipped, reader_.oldest() - confirmed);
  EXPECT_EQ(events[0].state.title, "") << "no title in what the ring still holds";
  EXPECT_EQ(events[0].state.status, AgentStatus::unknown);
  EXPECT_EQ(events[0].state.bells, 1u) << "the torn bell is not counted";
  EXPECT_EQ(follower.cursor(), writer_.committed());
}

TEST_F(StatusFollowerTest, AClearIsAResyncThatLosesTheClearedBytes) {
  write(osc0("⠂ Busy"));
  StatusFollower follower(reader_, StatusRules::defaults());
  follower.start();
  write("more output\r\n");
  writer_.clear();
  write("after the clear");
  const auto events = poll(follower);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StatusEventKind::resync);
  EXPECT_EQ(events[0].skipped, std::string_view("more output\r\n").size());
  EXPECT_EQ(events[0].state.status, AgentStatus::unknown);
  EXPECT_EQ(events[0].previous, AgentStatus::working);
}

}  // namespace
}  // namespace backscroll::status
