#include "tools/bridge/actor_feed.hpp"

#include <thread>

namespace backscroll::bridge {

Result<std::shared_ptr<ActorFeed>> ActorFeed::open(std::shared_ptr<FeedWaker> waker,
                                                   const Places& places, const std::string& actor) {
  auto reader = shm::RingReader::open(places, actor);
  if (!reader) return tl::unexpected(reader.error());
  auto shared = std::make_shared<Shared>(std::move(*reader));
  auto feed = std::shared_ptr<ActorFeed>(new ActorFeed(actor, shared));
  // The thread owns `shared` (the mapping stays valid while it sleeps on it) and reaches the
  // feed only through a weak pointer, on the io thread. It is detached: a feed that goes away
  // sets `stop`, and the thread ends at its next wake-up (at most kTick later).
  std::thread([shared, weak = std::weak_ptr<ActorFeed>(feed), waker = std::move(waker)] {
    // The wake word is taken before `committed` and before the handler posted below looks at
    // the ring, so a wake after either (a seal) ends the next wait at once.
    std::uint32_t wake_seen = shared->reader.wake_seen();
    Cursor seen = shared->reader.committed();
    while (!shared->stop.load(std::memory_order_acquire)) {
      const shm::WaitResult r = shared->reader.wait(seen, kTick, wake_seen);
      if (shared->stop.load(std::memory_order_acquire)) break;
      wake_seen = shared->reader.wake_seen();
      seen = shared->reader.committed();
      // Dekker with on_wake(): this thread loads `committed` (above), fences, then claims
      // `posted`; the io thread clears `posted`, fences, then loads `committed`. With a seq_cst
      // fence on each side, either this exchange sees false and posts, or the handler already
      // running sees the new bytes: no commit waits for the next tick. At most one handler is
      // queued at a time.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (!shared->posted.exchange(true, std::memory_order_relaxed)) {
        waker->post([weak] {
          if (auto live = weak.lock()) live->on_wake();
        });
      }
      if (r == shm::WaitResult::closed) {
        // The segment is closed for good: no more commits; tick slowly until the feed goes.
        std::this_thread::sleep_for(kTick);
      }
    }
  }).detach();
  return feed;
}

ActorFeed::ActorFeed(std::string actor, std::shared_ptr<Shared> shared)
    : actor_(std::move(actor)), shared_(std::move(shared)) {}

ActorFeed::~ActorFeed() { shared_->stop.store(true, std::memory_order_release); }

bool ActorFeed::closed() const noexcept {
  const auto meta = shared_->reader.meta();
  return !meta || meta->closed != 0;
}

std::uint64_t ActorFeed::subscribe(std::function<void()> listener) {
  const std::uint64_t handle = next_handle_++;
  listeners_.emplace(handle, std::move(listener));
  return handle;
}

void ActorFeed::unsubscribe(std::uint64_t handle) { listeners_.erase(handle); }

void ActorFeed::on_wake() {
  shared_->posted.store(false, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the waiter's (see open())
  const auto now = Clock::now();
  recent_.emplace_back(now, shared_->reader.committed());
  while (recent_.size() > 1 && recent_[1].first <= now - kQuietWindow) recent_.pop_front();
  // A listener may unsubscribe itself (or another) while it runs: iterate over a copy.
  std::vector<std::function<void()>> listeners;
  listeners.reserve(listeners_.size());
  for (const auto& [handle, listener] : listeners_) listeners.push_back(listener);
  for (const auto& listener : listeners) listener();
}

bool ActorFeed::quiet(Clock::time_point now, std::uint64_t bytes) const {
  const Cursor committed = shared_->reader.committed();
  // The committed cursor as of the window's start: the last sample taken by then, else the
  // oldest one (wake-ups come at least every kTick, so that is never far off).
  Cursor before = recent_.empty() ? committed : recent_.front().second;
  for (const auto& [at, cursor] : recent_) {
    if (at > now - kQuietWindow) break;
    before = cursor;
  }
  return committed - before < bytes;
}

}  // namespace backscroll::bridge
