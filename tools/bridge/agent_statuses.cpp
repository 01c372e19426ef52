#include "tools/bridge/agent_statuses.hpp"

#include <vector>

#include "shm/ring_reader.hpp"
#include "tools/status_follower.hpp"

namespace backscroll::bridge {

// One followed ring: the reader outlives the follower that refers to it.
struct AgentStatuses::Followed {
  explicit Followed(shm::RingReader r, const term::StatusRules& rules)
      : reader(std::move(r)), follower(reader, rules) {}
  shm::RingReader reader;
  status::StatusFollower follower;
};

AgentStatuses::AgentStatuses(Places places, const term::StatusRules& rules)
    : places_(std::move(places)), rules_(rules), thread_([this] { run(); }) {}

AgentStatuses::~AgentStatuses() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void AgentStatuses::want(std::set<std::string> actors) {
  {
    std::lock_guard lock(mutex_);
    if (actors == wanted_) return;
    wanted_ = std::move(actors);
  }
  changed_.notify_all();
}

std::optional<status::ActorStatus> AgentStatuses::get(const std::string& actor) const {
  std::lock_guard lock(mutex_);
  const auto it = latest_.find(actor);
  if (it == latest_.end()) return std::nullopt;
  return it->second;
}

void AgentStatuses::run() {
  std::map<std::string, std::unique_ptr<Followed>> followed;  // this thread's only
  std::vector<status::StatusEvent> events;
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const std::set<std::string> wanted = wanted_;
    lock.unlock();
    std::erase_if(followed, [&](const auto& f) {
      const auto meta = f.second->reader.meta();
      // Not wanted any more, or a deleted actor's ring (a new actor of that name has a new one).
      return !wanted.contains(f.first) || !meta || meta->closed != 0;
    });
    std::map<std::string, status::ActorStatus> results;
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (const std::string& actor : wanted) {
      auto it = followed.find(actor);
      if (it == followed.end()) {
        auto reader = shm::RingReader::open(places_, actor);
        if (!reader) continue;  // not there (yet): try again next period
        it = followed.emplace(actor, std::make_unique<Followed>(std::move(*reader), rules_)).first;
        it->second->follower.start();
      }
      events.clear();
      it->second->follower.poll(now_ms, events);  // a lap restores from what the ring holds
      results[actor] = it->second->follower.state();
    }
    lock.lock();
    latest_ = std::move(results);
    changed_.wait_for(lock, kPeriod, [this] { return stop_; });
  }
}

}  // namespace backscroll::bridge
