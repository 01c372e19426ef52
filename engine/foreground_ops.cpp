// Following each actor's foreground program (foreground.hpp; docs/architecture.md, "The
// foreground program"): it is looked at kForegroundEvery after a spawn (right after exec its
// command line may still read empty), and when the actor prints or is typed to, at most once
// per kForegroundEvery, with one more look kForegroundEvery after the last activity so the
// final state is seen; a quiet actor is not looked at. A change is recorded in the event track at
// the committed cursor and announced to subscribers. Io thread.
#include "engine/engine.hpp"

namespace backscroll::engine {

using control::Json;

Json foreground_json(const Foreground& f) {
  return Json{{"pid", f.pid}, {"command", f.command}, {"argv", f.argv}, {"cwd", f.cwd}};
}

void Engine::watch_foreground(Actor& actor) {
  Actor::ForegroundWatch& watch = actor.foreground_watch();
  if (!actor.live() || watch.scheduled) return;
  const auto due = watch.checked_at + kForegroundEvery;
  if (std::chrono::steady_clock::now() >= due) {
    check_foreground(actor);
    due_foreground_check(actor, watch.checked_at + kForegroundEvery);  // after this burst
    return;
  }
  due_foreground_check(actor, due);
}

void Engine::due_foreground_check(Actor& actor, std::chrono::steady_clock::time_point at) {
  Actor::ForegroundWatch& watch = actor.foreground_watch();
  if (watch.scheduled) return;
  watch.scheduled = true;
  timers_.schedule(at, [this, name = actor.name()] {
    const auto it = actors_.find(name);
    if (it == actors_.end()) return;
    it->second->foreground_watch().scheduled = false;
    check_foreground(*it->second);
  });
}

void Engine::check_foreground(Actor& actor) {
  // The first look of a session is its program, which the spawn event has already.
  const bool first = !actor.foreground();
  if (!actor.refresh_foreground() || !actor.foreground() || first) return;
  const Json fields = foreground_json(*actor.foreground());
  record_event(actor.name(), recorder::EventKind::foreground, actor.ring().committed(), fields);
  Json event{{"event", "foreground"}, {"actor", actor.name()}};
  event.update(fields);
  broadcast(std::move(event));
}

}  // namespace backscroll::engine
