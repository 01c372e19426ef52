// MirrorThread: one Mirror per actor fed from the actor's ring, on its own thread.
// - A snapshot describes the bytes committed before it was asked for (with not_before) and is
//   tagged with its cursor; without not_before it is answered from what is parsed, at once.
// - Resizes and resets apply in stream order: after the bytes committed before them.
// - A flooding actor does not hold back another actor's snapshot (round robin).
// - The mirror is an internal consumer: its gate position follows what it has parsed.
// - Unknown and removed actors get a not-found reply, never a hang.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/mirror_thread.hpp"
#include "tests/engine/test_ring.hpp"

namespace backscroll::testing {
namespace {

using engine::MirrorThread;
using engine::SnapshotReply;
using engine::SnapshotRequest;

class MirrorThreadTest : public ::testing::Test {
 protected:
  MirrorThreadTest() : thread_(notify_.fd) {}

  TestRing& add(engine::MirrorActorId id, std::uint16_t cols = 80, std::uint16_t rows = 24) {
    rings_.push_back(std::make_unique<TestRing>("actor" + std::to_string(id), notify_.fd));
    TestRing& ring = *rings_.back();
    consumers_.push_back(ring.gate.attach(ring.writer.committed()));
    thread_.add_actor(id, ring.reader(), consumers_.back(), cols, rows);
    return ring;
  }

  // Waits (poll on the notify eventfd, generous timeout) for the reply with `token`.
  SnapshotReply await(std::uint64_t token) {
    for (int i = 0; i < 600; ++i) {
      SnapshotReply r;
      while (thread_.next_reply(r)) {
        if (r.token == token) return r;
        early_.push_back(r.token);
      }
      pollfd p{notify_.fd, POLLIN, 0};
      ::poll(&p, 1, 100);
      std::uint64_t drained = 0;
      [[maybe_unused]] const ssize_t n = ::read(notify_.fd, &drained, sizeof drained);
    }
    ADD_FAILURE() << "no reply for token " << token;
    return {};
  }

  SnapshotReply snapshot(engine::MirrorActorId id, std::uint64_t token, Cursor not_before) {
    SnapshotRequest request;
    request.token = token;
    request.not_before = not_before;
    thread_.request_snapshot(id, request);
    return await(token);
  }

  NotifyFd notify_;  // first: closed after the worker is joined
  std::vector<std::unique_ptr<TestRing>> rings_;
  std::vector<std::shared_ptr<engine::InternalConsumer>> consumers_;
  std::vector<std::uint64_t> early_;  // tokens of replies that arrived before the awaited one
  MirrorThread thread_;               // last: stopped before the rings it reads go away
};

TEST_F(MirrorThreadTest, SnapshotDescribesTheBytesCommittedBeforeIt) {
  TestRing& ring = add(1);
  ring.write("\x1b]2;shell\x07$ echo hi\r\nhi\r\n$ ");
  thread_.wake();
  const SnapshotReply r = snapshot(1, 10, ring.writer.committed());
  ASSERT_TRUE(r.found);
  ASSERT_FALSE(r.taken.snapshot.fallback_reason);
  // The prompt, which no line feed ends, is in the snapshot: its tag is the committed cursor.
  EXPECT_EQ(r.taken.cursor, ring.writer.committed());
  EXPECT_NE(r.taken.snapshot.bytes.find("\r\n$"), std::string::npos);
  EXPECT_EQ(r.taken.snapshot.bytes.back(), ' ')
      << "ends with the prompt's last glyph: its run goes on";
  EXPECT_NE(r.taken.snapshot.bytes.find("echo hi"), std::string::npos);
  EXPECT_NE(r.taken.snapshot.bytes.find("\x1b]2;shell"), std::string::npos);
  EXPECT_EQ(consumers_[0]->position(), ring.writer.committed());
}

TEST_F(MirrorThreadTest, ResizeAppliesAfterTheBytesBeforeIt) {
  TestRing& ring = add(1, 80, 24);
  ring.write(std::string(60, 'x'));  // one row at 80 columns
  thread_.resize(1, ring.writer.committed(), 40, 24);
  ring.write("\r\n");
  thread_.wake();
  const SnapshotReply r = snapshot(1, 1, ring.writer.committed());
  ASSERT_TRUE(r.found);
  ASSERT_FALSE(r.taken.snapshot.fallback_reason);
  EXPECT_EQ(r.taken.snapshot.cols, 40);
  // Parsed at 80 columns, then cut to 40 (libvterm does not reflow): 40 x remain. Had the
  // resize come first, the 60 x would have wrapped onto a second row.
  const std::string& bytes = r.taken.snapshot.bytes;
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 'x'), 40);
}

TEST_F(MirrorThreadTest, ResetStartsAFreshTerminalAtItsCursor) {
  TestRing& ring = add(1);
  ring.write("\x1b[?1049hold screen\x1b[31m");
  ring.writer.clear();
  thread_.reset(1, ring.writer.committed());
  ring.write("new\r\n");
  thread_.wake();
  const SnapshotReply r = snapshot(1, 1, ring.writer.committed());
  ASSERT_TRUE(r.found);
  ASSERT_FALSE(r.taken.snapshot.fallback_reason);
  EXPECT_EQ(r.taken.cursor, ring.writer.committed());
  EXPECT_EQ(r.taken.snapshot.bytes.find("old"), std::string::npos);
  EXPECT_EQ(r.taken.snapshot.bytes.find("1047"), std::string::npos);  // not on the alt screen
  EXPECT_NE(r.taken.snapshot.bytes.find("new"), std::string::npos);
}

TEST_F(MirrorThreadTest, AFloodingActorDoesNotHoldBackAnotherActorsSnapshot) {
  TestRing& flood = add(1);
  TestRing& quiet = add(2);
  quiet.write("quiet\r\n");
  std::string line(78, 'f');
  line += "\r\n";
  while (flood.writer.committed() < Cursor{6u << 20}) flood.write(line);
  thread_.wake();
  // Asked first, the flooding actor's snapshot waits for 6 MiB to be parsed; the quiet one's is
  // answered within a batch of it.
  SnapshotRequest slow;
  slow.token = 100;
  slow.not_before = flood.writer.committed();
  thread_.request_snapshot(1, slow);
  const SnapshotReply r = snapshot(2, 200, quiet.writer.committed());
  ASSERT_TRUE(r.found);
  EXPECT_NE(r.taken.snapshot.bytes.find("quiet"), std::string::npos);
  EXPECT_TRUE(early_.empty()) << "the flooding actor's snapshot came first";
  EXPECT_TRUE(await(100).found);
  EXPECT_EQ(consumers_[0]->position(), flood.writer.committed());
}

TEST_F(MirrorThreadTest, AnswersAtOnceWithoutNotBefore) {
  TestRing& ring = add(1);
  ring.write("text\r\n");
  const SnapshotReply r = snapshot(1, 5, Cursor{0});
  ASSERT_TRUE(r.found);
  EXPECT_LE(r.taken.cursor, ring.writer.committed());
  EXPECT_FALSE(r.taken.snapshot.fallback_reason);
}

TEST_F(MirrorThreadTest, UnknownAndRemovedActorsAreNotFound) {
  EXPECT_FALSE(snapshot(42, 1, Cursor{0}).found);
  TestRing& ring = add(1);
  ring.write("abc");
  SnapshotRequest never;
  never.token = 2;
  never.not_before = Cursor{1u << 30};  // waits for bytes that never come
  thread_.request_snapshot(1, never);
  thread_.remove_actor(1);
  EXPECT_FALSE(await(2).found);
  EXPECT_TRUE(consumers_[0]->detached());
}

}  // namespace
}  // namespace backscroll::testing
