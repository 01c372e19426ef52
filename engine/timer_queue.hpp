// TimerQueue: the io thread's deadlines (grace periods, drain windows, input gaps). The loop
// sleeps in io_uring until the earliest one; no timer fd or thread is involved.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

namespace backscroll::engine {

class TimerQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using Id = std::uint64_t;  // 0 is never a valid id

  Id schedule(Clock::time_point when, std::function<void()> action) {
    const Id id = next_id_++;
    due_.emplace(Key{when, id}, std::move(action));
    when_.emplace(id, when);
    return id;
  }
  // Cancelling an id that already ran (or 0) does nothing.
  void cancel(Id id) {
    const auto it = when_.find(id);
    if (it == when_.end()) return;
    due_.erase(Key{it->second, id});
    when_.erase(it);
  }
  std::optional<Clock::time_point> next() const {
    if (due_.empty()) return std::nullopt;
    return due_.begin()->first.first;
  }
  // Runs every action due at `now`, earliest first. Actions may schedule or cancel timers.
  void run_due(Clock::time_point now) {
    while (!due_.empty() && due_.begin()->first.first <= now) {
      auto node = due_.extract(due_.begin());
      when_.erase(node.key().second);
      node.mapped()();
    }
  }

 private:
  using Key = std::pair<Clock::time_point, Id>;
  std::map<Key, std::function<void()>> due_;
  std::unordered_map<Id, Clock::time_point> when_;
  Id next_id_ = 1;
};

}  // namespace backscroll::engine
