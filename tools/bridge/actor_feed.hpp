// ActorFeed: the bridge's view of one actor's ring (docs/bridge.md, "Reading the rings"). The
// ring is mapped read-only (shm/ring_reader.hpp); every client of the actor reads its bytes in
// place from this one mapping, on the bridge's io thread. A waiter thread sleeps on the ring's
// futex and wakes the io thread when bytes are committed or a session is sealed (the engine
// wakes its readers for both), and at least every kTick.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "shm/error.hpp"
#include "shm/places.hpp"
#include "shm/ring_reader.hpp"

namespace backscroll::bridge {

// How waiter threads hand a wake-up to the io thread; cut() (the bridge going away) makes later
// wake-ups do nothing, so no thread posts to an io_context being destroyed.
class FeedWaker {
 public:
  explicit FeedWaker(boost::asio::io_context& io) : io_(&io) {}
  template <class Handler>
  void post(Handler handler) {
    std::lock_guard lock(mutex_);
    if (io_) boost::asio::post(*io_, std::move(handler));
  }
  void cut() {
    std::lock_guard lock(mutex_);
    io_ = nullptr;
  }

 private:
  std::mutex mutex_;
  boost::asio::io_context* io_;
};

class ActorFeed : public std::enable_shared_from_this<ActorFeed> {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kTick{200};
  // The window in which an actor's output counts for quiet().
  static constexpr std::chrono::milliseconds kQuietWindow{100};

  static Result<std::shared_ptr<ActorFeed>> open(std::shared_ptr<FeedWaker> waker,
                                                 const Places& places, const std::string& actor);
  ~ActorFeed();
  ActorFeed(const ActorFeed&) = delete;
  ActorFeed& operator=(const ActorFeed&) = delete;

  const shm::RingReader& ring() const noexcept { return shared_->reader; }
  const std::string& actor() const noexcept { return actor_; }
  // The segment was closed (the actor was deleted) or its engine is gone.
  bool closed() const noexcept;

  // `listener` runs on the io thread after each wake-up. Returns a handle for unsubscribe().
  std::uint64_t subscribe(std::function<void()> listener);
  void unsubscribe(std::uint64_t handle);

  // Fewer than `bytes` were committed within the last kQuietWindow.
  bool quiet(Clock::time_point now, std::uint64_t bytes) const;

 private:
  // What the waiter thread shares with the feed; it outlives the feed while the thread runs.
  struct Shared {
    explicit Shared(shm::RingReader r) : reader(std::move(r)) {}
    shm::RingReader reader;
    std::atomic<bool> stop{false};
    // Set while a wake-up is posted and not yet run: one posted handler at a time.
    std::atomic<bool> posted{false};
  };
  ActorFeed(std::string actor, std::shared_ptr<Shared> shared);
  void on_wake();

  std::string actor_;
  std::shared_ptr<Shared> shared_;
  std::map<std::uint64_t, std::function<void()>> listeners_;
  std::uint64_t next_handle_ = 1;
  // (time, committed) seen at wake-ups within the quiet window, oldest first.
  std::deque<std::pair<Clock::time_point, Cursor>> recent_;
};

}  // namespace backscroll::bridge
