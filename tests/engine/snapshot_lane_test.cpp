// SnapshotLane (engine/snapshot_lane.hpp): a held snapshot answers only while it is the screen
// the mirror shows, with the options asked, and only until an event changes the mirror.
#include "engine/snapshot_lane.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/engine/test_ring.hpp"

namespace backscroll::engine {
namespace {

using testing::NotifyFd;
using testing::TestRing;

term::MirrorSnapshot screen_at(std::uint64_t cursor, std::string bytes = "\033[Hscreen") {
  term::MirrorSnapshot s;
  s.snapshot.bytes = std::move(bytes);
  s.snapshot.cols = 80;
  s.snapshot.rows = 24;
  s.cursor = Cursor{cursor};
  return s;
}

class SnapshotLaneTest : public ::testing::Test {
 protected:
  SnapshotLaneTest() {
    ring_.write("0123456789");
    lane_.add("a", ring_.reader(), usage_, 0xabc);
  }
  // The mirror's answer to a request asked now, with `options`.
  void answered(const term::MirrorSnapshot& taken, term::SnapshotOptions options = {}) {
    lane_.keep("a", lane_.generation("a"), options, taken);
  }

  NotifyFd notify_;
  TestRing ring_{"a", notify_.fd};
  std::shared_ptr<MirrorUsage> usage_ = std::make_shared<MirrorUsage>();
  SnapshotLane lane_;
};

TEST_F(SnapshotLaneTest, AQuietActorsLastSnapshotAnswersWithItsEpoch) {
  EXPECT_FALSE(lane_.held("a", {}, Cursor{0})) << "nothing held yet";
  answered(screen_at(10));
  const auto held = lane_.held("a", {}, Cursor{0});
  ASSERT_TRUE(held);
  EXPECT_EQ(held->epoch, 0xabcu);
  EXPECT_EQ(held->taken->cursor, Cursor{10});
  EXPECT_EQ(held->taken->snapshot.bytes, "\033[Hscreen");
  EXPECT_EQ(lane_.answers(), 1u);
  EXPECT_EQ(lane_.held_bytes("a"), 9u);
  EXPECT_FALSE(lane_.held("b", {}, Cursor{0})) << "an actor the lane does not know";
}

TEST_F(SnapshotLaneTest, NewBytesEndItUnlessTheMirrorParsedNoneOfThem) {
  answered(screen_at(10));
  ring_.write("more");
  usage_->parsed.store(14);
  EXPECT_FALSE(lane_.held("a", {}, Cursor{0})) << "the mirror's screen moved on";
  // A mirror coasting through a flood (it looks ahead without feeding) still shows cursor 10.
  usage_->parsed.store(10);
  EXPECT_TRUE(lane_.held("a", {}, Cursor{0}));
}

TEST_F(SnapshotLaneTest, OtherOptionsOrAnOlderCursorThanAskedAreNotAnswered) {
  answered(screen_at(10), {.scrollback_lines = 100});
  EXPECT_FALSE(lane_.held("a", {.scrollback_lines = 512}, Cursor{0}));
  EXPECT_FALSE(lane_.held("a", {.scrollback_lines = 100, .canvas = term::SnapshotCanvas::alternate},
                          Cursor{0}));
  EXPECT_FALSE(lane_.held("a", {.scrollback_lines = 100}, Cursor{11}));
  EXPECT_TRUE(lane_.held("a", {.scrollback_lines = 100}, Cursor{10}));
}

TEST_F(SnapshotLaneTest, AnEventDropsItAndAnAnswerAskedBeforeTheEventIsNeverKept) {
  answered(screen_at(10));
  const std::uint64_t asked_before = lane_.generation("a");
  lane_.changed("a");  // a resize, a clear, a reset
  EXPECT_FALSE(lane_.held("a", {}, Cursor{0}));
  EXPECT_EQ(lane_.held_bytes("a"), 0u);
  lane_.keep("a", asked_before, {}, screen_at(10));
  EXPECT_FALSE(lane_.held("a", {}, Cursor{0})) << "the mirror's answer predates the event";
  answered(screen_at(10));
  EXPECT_TRUE(lane_.held("a", {}, Cursor{0}));
}

TEST_F(SnapshotLaneTest, FallbacksAndLargeSnapshotsAreNotHeld) {
  term::MirrorSnapshot fallback = screen_at(10, "");
  fallback.snapshot.fallback_reason = "too_large";
  answered(fallback);
  EXPECT_FALSE(lane_.held("a", {}, Cursor{0}));
  answered(screen_at(10, std::string(SnapshotLane::kMaxHeldBytes + 1, 'x')));
  EXPECT_FALSE(lane_.held("a", {}, Cursor{0}));
}

TEST_F(SnapshotLaneTest, ACursorNoLongerInTheRingIsNotAnswered) {
  answered(screen_at(10));
  ring_.writer.clear();  // floor = committed: cursor 10 is still readable
  EXPECT_TRUE(lane_.held("a", {}, Cursor{0}));
  answered(screen_at(4));  // a screen from before the floor (its bytes are gone)
  usage_->parsed.store(4);
  EXPECT_FALSE(lane_.held("a", {}, Cursor{0})) << "its bytes are gone: the mirror is asked";
}

TEST_F(SnapshotLaneTest, ARemovedActorIsForgotten) {
  answered(screen_at(10));
  lane_.remove("a");
  EXPECT_FALSE(lane_.held("a", {}, Cursor{0}));
  EXPECT_EQ(lane_.generation("a"), 0u);
  lane_.add("a", ring_.reader(), usage_, 1);
  answered(screen_at(10));
  ASSERT_TRUE(lane_.held("a", {}, Cursor{0}));
  EXPECT_EQ(lane_.held("a", {}, Cursor{0})->epoch, 1u) << "the new actor's epoch";
}

}  // namespace
}  // namespace backscroll::engine
