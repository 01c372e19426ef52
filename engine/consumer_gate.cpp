#include "engine/consumer_gate.hpp"
#include "engine/eventfd_signal.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

namespace backscroll::engine {

struct InternalConsumer::Shared {
  std::uint64_t low_water;
  int notify_fd;
  // Both seq_cst; see InternalConsumer::position_. `committed_at_pause` is stored before
  // `paused` becomes true and does not change while paused (no read is in flight then).
  std::atomic<bool> paused{false};
  std::atomic<std::uint64_t> committed_at_pause{0};
};

void InternalConsumer::advance_to(Cursor cursor) noexcept {
  position_.store(value(cursor), std::memory_order_seq_cst);
  if (shared_->paused.load(std::memory_order_seq_cst) &&
      shared_->committed_at_pause.load(std::memory_order_seq_cst) - value(cursor) <=
          shared_->low_water) {
    // The io loop drains the eventfd and re-checks every paused gate; spurious wakes are harmless.
    signal_eventfd(shared_->notify_fd);
  }
}

void InternalConsumer::detach() noexcept {
  detached_.store(true, std::memory_order_seq_cst);
  signal_eventfd(shared_->notify_fd);
}

ConsumerGate::ConsumerGate(std::uint64_t high_water, std::uint64_t low_water, int notify_fd)
    : high_water_(high_water),
      low_water_(std::min(low_water, high_water)),
      shared_(std::make_shared<InternalConsumer::Shared>()) {
  shared_->low_water = low_water_;
  shared_->notify_fd = notify_fd;
}

std::shared_ptr<InternalConsumer> ConsumerGate::attach(Cursor start) {
  auto consumer = std::shared_ptr<InternalConsumer>(new InternalConsumer(shared_, start));
  consumers_.push_back(consumer);
  return consumer;
}

std::uint64_t ConsumerGate::lag(Cursor committed) noexcept {
  std::erase_if(consumers_, [](const auto& c) { return c->detached(); });
  std::uint64_t worst = 0;
  for (const auto& c : consumers_) {
    const Cursor p = c->position();
    if (p < committed) worst = std::max(worst, committed - p);
  }
  return worst;
}

bool ConsumerGate::hold(Cursor committed) noexcept {
  if (consumers_.empty()) {
    shared_->paused.store(false, std::memory_order_seq_cst);
    return false;
  }
  if (!shared_->paused.load(std::memory_order_relaxed)) {  // relaxed: only this thread stores it
    if (lag(committed) <= high_water_) return false;
    shared_->committed_at_pause.store(value(committed), std::memory_order_seq_cst);
    shared_->paused.store(true, std::memory_order_seq_cst);
  }
  // Paused: re-check after publishing `paused`, so an advance that raced the pause is seen here.
  if (lag(committed) > low_water_) return true;
  shared_->paused.store(false, std::memory_order_seq_cst);
  return false;
}

bool ConsumerGate::paused() const noexcept {
  return shared_->paused.load(std::memory_order_relaxed);
}

}  // namespace backscroll::engine
