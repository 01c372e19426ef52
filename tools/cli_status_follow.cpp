#include "tools/cli_status_follow.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "engine/term/status_rules.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_ring_follower.hpp"
#include "tools/status_follower.hpp"

namespace backscroll::cli {
namespace {

using control::Json;
using status::StatusEvent;
using status::StatusEventKind;

// How often a follower thread looks up from its futex (to stop, or to check the engine lives),
// and how often the main thread reaps followers that ended.
constexpr std::chrono::milliseconds kWaitSlice{500};
constexpr std::chrono::milliseconds kEventSlice{250};

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string json_line(const std::string& actor, const StatusEvent& e) {
  const status::ActorStatus& s = e.state;
  nlohmann::ordered_json j;
  j["actor"] = actor;
  j["event"] = to_string(e.kind);
  j["status"] = to_string(s.status);
  j["previous"] = e.previous ? Json(to_string(*e.previous)) : Json(nullptr);
  j["agent"] = s.agent.empty() ? Json(nullptr) : Json(s.agent);
  j["title"] = s.title;
  j["bells"] = s.bells;
  j["last_output_ms"] = s.last_output_ms ? Json(*s.last_output_ms) : Json(nullptr);
  j["cursor"] = value(s.cursor);
  j["skipped"] = e.skipped;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// "work change working previous=idle agent=claude-code bells=0 title="⠂ Fix the tests"": the
// title as a JSON string, so any title reads back unambiguously.
std::string text_line(const std::string& actor, const StatusEvent& e) {
  const status::ActorStatus& s = e.state;
  std::string line = actor;
  line += ' ';
  line += to_string(e.kind);
  line += ' ';
  line += to_string(s.status);
  if (e.previous) {
    line += " previous=";
    line += to_string(*e.previous);
  }
  if (e.kind == StatusEventKind::resync) line += " skipped=" + std::to_string(e.skipped);
  line += " agent=" + (s.agent.empty() ? std::string("-") : s.agent);
  line += " bells=" + std::to_string(s.bells);
  line += " title=" + Json(s.title).dump(-1, ' ', false, Json::error_handler_t::replace);
  return line;
}

// Lines from every follower thread; each goes out in one write under the lock, so lines of
// different actors never mix. The first failed write is kept for the main thread.
class Output {
 public:
  explicit Output(bool json) : json_(json) {}

  void event(const std::string& actor, const StatusEvent& e) {
    line(json_ ? json_line(actor, e) : text_line(actor, e));
  }
  // The ring closed: the actor was deleted, or the engine is stopping.
  void closed(const std::string& actor) {
    if (json_) {
      nlohmann::ordered_json j;
      j["actor"] = actor;
      j["event"] = "closed";
      line(j.dump());
    } else {
      line(actor + " closed");
    }
  }
  std::optional<Error> failure() {
    std::lock_guard lock(mutex_);
    return failure_;
  }

 private:
  void line(std::string text) {
    text += '\n';
    std::lock_guard lock(mutex_);
    if (failure_) return;
    if (auto w = write_all(STDOUT_FILENO, text); !w) failure_ = w.error();
  }

  bool json_;
  std::mutex mutex_;
  std::optional<Error> failure_;
};

// One actor's follower thread. The thread writes `failure`, then sets `done` under the
// Finished lock and notifies; the main thread reads them under that lock, then joins.
struct Follower {
  std::string actor;
  bool retired = false;  // main thread only: the actor was deleted, this thread is finishing
  bool done = false;
  std::optional<Error> failure;
  std::thread thread;
};

// Where follower threads say they ended.
struct Finished {
  std::mutex mutex;
  std::condition_variable changed;

  void mark(Follower& f) {
    {
      std::lock_guard lock(mutex);
      f.done = true;
    }
    changed.notify_all();
  }
};

void follow_ring(const shm::RingReader& reader, const term::StatusRules& rules, Output& out,
                 const std::atomic<bool>& stop, Follower& self) {
  status::StatusFollower follower(reader, rules);
  out.event(self.actor, follower.start());
  std::vector<StatusEvent> events;
  const auto drain = [&] {
    events.clear();
    follower.poll(now_ms(), events);
    for (const StatusEvent& e : events) out.event(self.actor, e);
  };
  while (!stop.load(std::memory_order_relaxed)) {
    // Taken before looking, so a wake from here on ends the wait below.
    const std::uint32_t wake_seen = reader.wake_seen();
    drain();
    switch (reader.wait(follower.cursor(), kWaitSlice, wake_seen)) {
      case shm::WaitResult::ready:
      case shm::WaitResult::woken: break;
      case shm::WaitResult::closed:
        drain();  // what was committed before the close
        out.closed(self.actor);
        return;
      case shm::WaitResult::timeout:
        if (!ring_owner_alive(reader)) {
          self.failure = ring_owner_gone(reader, self.actor);
          return;
        }
        break;
    }
  }
}

void follow_actor(const Places& places, const term::StatusRules& rules, Output& out,
                  const std::atomic<bool>& stop, Finished& finished, Follower& self) noexcept {
  try {
    auto reader = open_ring(places, self.actor);
    if (reader) {
      follow_ring(*reader, rules, out, stop, self);
    } else if (reader.error().code != Errc::no_such_actor) {
      self.failure = reader.error();
    }  // else deleted before its ring could be opened: nothing to follow
  } catch (const std::exception& e) {
    self.failure = Error{Errc::internal, std::string("status follower: ") + e.what(), std::nullopt};
  }
  finished.mark(self);
}

std::vector<std::string> actor_names(const Json& list_response) {
  std::vector<std::string> names;
  for (const auto& a : list_response.value("actors", Json::array())) {
    if (a.contains("name") && a["name"].is_string()) names.push_back(a["name"].get<std::string>());
  }
  return names;
}

}  // namespace

int run_status_follow(const EngineTarget& engine, const StatusFollowArgs& args) {
  std::optional<term::StatusRules> loaded;
  if (!args.rules_path.empty()) {
    auto rules = term::StatusRules::load(args.rules_path);
    if (!rules) return report(rules.error());
    loaded = std::move(*rules);
  }
  const term::StatusRules& rules = loaded ? *loaded : term::StatusRules::defaults();

  // Every actor: subscribe before listing, so an actor spawned in between is announced, never
  // missed. Named actors: the list only checks that they exist; then the rings are all we need.
  const bool every_actor = args.actors.empty();
  auto client = engine.connect();
  if (!client) return report(client.error());
  if (every_actor) {
    if (auto r = client->call("subscribe"); !r) return report(r.error());
  }
  auto list = client->call("list");
  if (!list) return report(list.error());
  const std::vector<std::string> existing = actor_names(list->header);

  std::vector<std::string> names;
  if (every_actor) {
    names = existing;
  } else {
    const std::set<std::string> known(existing.begin(), existing.end());
    std::set<std::string> seen;
    for (const std::string& name : args.actors) {
      if (known.count(name) == 0) {
        return report(Error{Errc::no_such_actor, "no actor named '" + name + "'", std::nullopt});
      }
      if (seen.insert(name).second) names.push_back(name);
    }
  }

  Output out(args.json);
  std::atomic<bool> stop{false};
  Finished finished;
  std::list<Follower> followers;  // stable addresses: each thread holds its own entry
  const auto start_follower = [&](const std::string& name) {
    Follower& f = followers.emplace_back();
    f.actor = name;
    f.thread = std::thread(follow_actor, std::cref(engine.places), std::cref(rules), std::ref(out),
                           std::cref(stop), std::ref(finished), std::ref(f));
  };
  const auto following = [&](const std::string& name) {
    for (const Follower& f : followers) {
      if (f.actor == name && !f.retired) return true;
    }
    return false;
  };
  for (const std::string& name : names) start_follower(name);

  std::optional<Error> failure;
  for (;;) {
    {
      std::unique_lock lock(finished.mutex);
      if (!every_actor) {
        // Named actors: nothing to do but wait for their followers to end.
        finished.changed.wait(lock, [&] {
          for (const Follower& f : followers) {
            if (f.done) return true;
          }
          return false;
        });
      }
      for (auto it = followers.begin(); it != followers.end();) {
        if (!it->done) {
          ++it;
          continue;
        }
        if (it->failure && !failure) failure = it->failure;
        it->thread.join();  // it has set `done`: only its return is left
        it = followers.erase(it);
      }
    }
    if (!failure) failure = out.failure();
    if (failure) break;
    if (!every_actor) {
      if (followers.empty()) break;  // every named actor's ring closed
      continue;
    }
    auto event = client->next_event(kEventSlice);
    if (!event) {
      failure = event.error();  // the engine went away
      break;
    }
    if (!*event) continue;
    const Json& header = (*event)->header;
    const std::string kind = header.value("event", "");
    const std::string name = header.value("actor", "");
    if (kind == "spawned" && !name.empty() && !following(name)) {
      start_follower(name);  // a new actor (a restart keeps its ring and its follower)
    } else if (kind == "deleted") {
      for (Follower& f : followers) {
        if (f.actor == name) f.retired = true;  // ends on its closed ring; a new one may come
      }
    }
  }
  stop.store(true, std::memory_order_relaxed);
  for (Follower& f : followers) f.thread.join();
  if (failure) return report(*failure);
  return kExitOk;
}

}  // namespace backscroll::cli
