// ControlThread (engine/control_thread.hpp) with the test as its io thread: what it answers
// itself without the io thread, and the order it keeps on a connection.
#include "engine/control_thread.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime_dir.hpp"
#include "tests/engine/engine_process.hpp"
#include "tests/engine/test_ring.hpp"

namespace backscroll::engine {
namespace {

using control::Json;
using testing::NotifyFd;
using testing::RawConnection;
using testing::TempDir;
using testing::TestRing;

// The io thread's side: records what it was handed and answers each request with its op (a
// `subscribe` with an event first).
struct RecordingHandler final : RequestHandler {
  explicit RecordingHandler(ControlThread*& to) : thread(to) {}
  void on_request(ConnectionId connection, control::Frame request) noexcept override {
    ops.push_back(request.header.at("op").get<std::string>());
    last = connection;
    if (ops.back() == "subscribe") thread->send_event(connection, {{"event", "during"}});
    thread->reply(connection, control::ok_response(request.header.at("id"),
                                                   {{"answered_by", "io"}, {"op", ops.back()}}));
  }
  void on_disconnect(ConnectionId) noexcept override { ops.push_back("(closed)"); }
  ControlThread*& thread;
  std::vector<std::string> ops;
  ConnectionId last = 0;
};

bool readable(int fd, std::chrono::milliseconds within) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(within.count())) > 0;
}

class ControlThreadTest : public ::testing::Test {
 protected:
  ControlThreadTest() {
    places_.runtime_dir = dir_.path() / "run";
    places_.state_dir = dir_.path() / "state";
    auto claimed = RuntimeDir::claim(places_);
    if (!claimed) throw std::runtime_error(claimed.error().describe());
    runtime_ = std::make_unique<RuntimeDir>(std::move(*claimed));
    auto fd = runtime_->listen();
    if (!fd) throw std::runtime_error(fd.error().describe());
    auto started = ControlThread::start(*fd, io_notify_.fd, lane_, 512);
    if (!started) throw std::runtime_error(started.error().describe());
    thread_ = std::move(*started);
    raw_ = thread_.get();
  }

  // What the io thread's loop does when its notify eventfd fires: hand the requests over, then
  // send what they queued. Waits for the eventfd first.
  void io_turn() {
    ASSERT_TRUE(readable(io_notify_.fd, std::chrono::seconds(10))) << "nothing handed over";
    std::uint64_t count = 0;
    ASSERT_EQ(::read(io_notify_.fd, &count, sizeof count), 8);
    thread_->handle(handler_);
    thread_->send_queued();
  }

  Json next(RawConnection& c) {
    auto frame = c.next_frame();
    if (!frame) throw std::runtime_error("the connection closed");
    last_payload_ = frame->payload;
    return frame->header;
  }

  TempDir dir_;
  Places places_;
  std::unique_ptr<RuntimeDir> runtime_;
  NotifyFd io_notify_;
  NotifyFd ring_notify_;
  TestRing ring_{"quiet", ring_notify_.fd};
  SnapshotLane lane_;
  ControlThread* raw_ = nullptr;
  RecordingHandler handler_{raw_};
  std::unique_ptr<ControlThread> thread_;  // last: stopped before the rest goes
  std::string last_payload_;
};

TEST_F(ControlThreadTest, PingAndAHeldSnapshotAreAnsweredWithoutTheIoThread) {
  ring_.write("hello");
  lane_.add("quiet", ring_.reader(), std::make_shared<MirrorUsage>(), 0x1234);
  term::MirrorSnapshot screen;
  screen.snapshot.bytes = "\033[H\033[2Jhello";
  screen.snapshot.cols = 80;
  screen.snapshot.rows = 24;
  screen.cursor = Cursor{5};
  lane_.keep("quiet", lane_.generation("quiet"), {}, screen);

  RawConnection client(places_);
  ASSERT_TRUE(client.send(control::encode_frame({{"op", "ping"}, {"id", 1}})));
  const Json pong = next(client);
  EXPECT_EQ(pong.at("id"), 1);
  EXPECT_EQ(pong.at("pid"), ::getpid());

  ASSERT_TRUE(client.send(control::encode_frame(
      {{"op", "snapshot"}, {"id", 2}, {"actor", "quiet"}, {"timing", true}})));
  const Json snap = next(client);
  EXPECT_EQ(snap.at("id"), 2);
  EXPECT_EQ(snap.at("format"), "snapshot_v1");
  EXPECT_EQ(snap.at("cursor"), 5);
  EXPECT_EQ(snap.at("epoch"), "0000000000001234");
  EXPECT_EQ(snap.at("cols"), 80);
  EXPECT_EQ(snap.at("scrollback_lines"), 0);
  EXPECT_EQ(snap.at("bytes"), screen.snapshot.bytes.size());
  EXPECT_EQ(last_payload_, screen.snapshot.bytes);
  EXPECT_EQ(snap.at("timing_us").at("build"), 0);
  EXPECT_TRUE(handler_.ops.empty()) << "the io thread was asked";
  EXPECT_FALSE(readable(io_notify_.fd, std::chrono::milliseconds(0)));

  // Not held (other options, an unknown actor): the io thread answers.
  ASSERT_TRUE(client.send(control::encode_frame(
      {{"op", "snapshot"}, {"id", 3}, {"actor", "quiet"}, {"scrollback", 7}})));
  io_turn();
  EXPECT_EQ(next(client).at("answered_by"), "io");
  ASSERT_TRUE(
      client.send(control::encode_frame({{"op", "snapshot"}, {"id", 4}, {"actor", "loud"}})));
  io_turn();
  EXPECT_EQ(next(client).at("answered_by"), "io");
  EXPECT_EQ(handler_.ops, (std::vector<std::string>{"snapshot", "snapshot"}));
}

TEST_F(ControlThreadTest, ARequestAfterOneTheIoThreadHasNotHandledWaitsItsTurn) {
  RawConnection client(places_);
  // Pipelined: the ping must not overtake the status.
  ASSERT_TRUE(client.send(control::encode_frame({{"op", "status"}, {"id", 1}}) +
                          control::encode_frame({{"op", "ping"}, {"id", 2}})));
  ASSERT_TRUE(readable(io_notify_.fd, std::chrono::seconds(10)));
  EXPECT_FALSE(readable(client.fd(), std::chrono::milliseconds(200)))
      << "a reply came before the io thread handled the first request";
  io_turn();
  EXPECT_EQ(next(client).at("id"), 1);
  const Json pong = next(client);
  EXPECT_EQ(pong.at("id"), 2);
  EXPECT_TRUE(pong.contains("pid")) << "the control thread answered it, once its turn came";
  EXPECT_EQ(handler_.ops, (std::vector<std::string>{"status"}));
}

TEST_F(ControlThreadTest, EventsKeepTheirPlaceAmongRepliesAndAClosingComesAfterItsRequests) {
  RawConnection client(places_);
  ASSERT_TRUE(client.send(control::encode_frame({{"op", "subscribe"}, {"id", 1}})));
  ASSERT_TRUE(readable(io_notify_.fd, std::chrono::seconds(10)));
  std::uint64_t count = 0;
  ASSERT_EQ(::read(io_notify_.fd, &count, sizeof count), 8);
  thread_->handle(handler_);  // an event, then the reply
  thread_->send_event(handler_.last, {{"event", "after"}});
  thread_->send_queued();
  EXPECT_EQ(next(client).at("event"), "during");
  EXPECT_EQ(next(client).at("id"), 1);
  EXPECT_EQ(next(client).at("event"), "after");

  ASSERT_TRUE(client.send(control::encode_frame({{"op", "list"}, {"id", 2}})));
  client.finish_sending();
  io_turn();
  // The hang-up may be handed over in the same turn or the next one.
  if (handler_.ops.back() != "(closed)") io_turn();
  EXPECT_EQ(handler_.ops, (std::vector<std::string>{"subscribe", "list", "(closed)"}));
}

TEST_F(ControlThreadTest, CloseAllSendsWhatIsQueuedThenClosesEveryConnection) {
  RawConnection client(places_);
  ASSERT_TRUE(client.send(control::encode_frame({{"op", "stop"}, {"id", 1}})));
  io_turn();  // answered at once by this handler
  thread_->send_event(handler_.last, {{"event", "last"}});
  thread_->close_all();
  thread_->send_queued();
  EXPECT_TRUE(thread_->wait_closed(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(next(client).at("id"), 1);
  EXPECT_EQ(next(client).at("event"), "last");
  EXPECT_FALSE(client.next_frame()) << "the connection stays open";
}

}  // namespace
}  // namespace backscroll::engine
