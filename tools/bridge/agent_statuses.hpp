// AgentStatuses: the agent status of each actor the page lists (docs/bridge.md, "HTTP") under
// rules of the bridge's own (`--rules`; with the built-in ones the engine's `status` answer has
// it), from the status detector (tools/status_follower.hpp) following each actor's ring. It runs on
// a thread of its own, so scanning a flood's output never delays a WebSocket client: the io thread
// names the actors it wants (want()) and reads the latest results (get()); the thread polls every
// followed ring every kPeriod and publishes under a mutex.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "engine/term/status_rules.hpp"
#include "shm/places.hpp"
#include "tools/status_detector.hpp"

namespace backscroll::bridge {

class AgentStatuses {
 public:
  static constexpr std::chrono::milliseconds kPeriod{250};

  // `rules` must outlive this.
  AgentStatuses(Places places, const term::StatusRules& rules);
  ~AgentStatuses();
  AgentStatuses(const AgentStatuses&) = delete;
  AgentStatuses& operator=(const AgentStatuses&) = delete;

  // Follow these actors (and only these) from now on.
  void want(std::set<std::string> actors);
  // The latest status of `actor`, once its ring was read at least once.
  std::optional<status::ActorStatus> get(const std::string& actor) const;

 private:
  struct Followed;
  void run();

  Places places_;
  const term::StatusRules& rules_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  std::set<std::string> wanted_;                       // guarded by mutex_
  std::map<std::string, status::ActorStatus> latest_;  // guarded by mutex_
  std::thread thread_;                                 // last: started once the rest is built
};

}  // namespace backscroll::bridge
