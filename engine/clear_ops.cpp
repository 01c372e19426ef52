// Clearing an actor's history (docs/protocol.md, `clear`). By default the screen stays, as
// tmux's clear-history: the output is held (Actor::hold_output) while the mirror catches up
// with the committed cursor, drops its history there and answers a snapshot of the kept
// screen; then the ring, the transcript and the recording are cleared below that cursor and
// the snapshot becomes the recording's keyframe there. The output is held so that the cursor
// the mirror answers is the committed one: a read already under way may still land, and then
// the mirror is asked again. When the mirror cannot give the screen (none runs, a fallback,
// the stream stopped inside a sequence), or with `screen: true`, everything goes: a fresh
// terminal from the floor on, as before. Io thread.
#include <algorithm>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/wall_clock.hpp"

namespace backscroll::engine {
namespace {

// Rounds of "a read landed meanwhile, ask again" before the screen is given up.
constexpr int kClearRounds = 4;

}  // namespace

using control::Json;

Result<Json> Engine::op_clear(ConnectionId connection, const Json& request) {
  auto found = find_actor(request);
  if (!found) return tl::unexpected(found.error());
  Actor& actor = **found;
  bool screen = false;
  if (const auto it = request.find("screen"); it != request.end() && !it->is_null()) {
    if (!it->is_boolean()) return fail(Errc::bad_request, "\"screen\" must be a boolean");
    screen = it->get<bool>();
  }
  const Json id = request.contains("id") ? request["id"] : Json(nullptr);
  const auto m = mirror_ids_.find(actor.name());
  if (screen || !mirror_ || m == mirror_ids_.end()) return clear_everything(actor, "asked");
  std::size_t waiting = 0;
  for (const auto& [name, clear] : clears_) {
    waiting += static_cast<std::size_t>(
        std::count_if(clear.waiters.begin(), clear.waiters.end(),
                      [connection](const auto& w) { return w.first == connection; }));
  }
  if (waiting >= kMaxDeferredPerConnection) {
    return fail(Errc::too_large, "this connection already waits for " +
                                     std::to_string(kMaxDeferredPerConnection) + " clears");
  }
  auto pending = clears_.find(actor.name());
  if (pending != clears_.end()) {  // one under way: this one is answered with it
    pending->second.waiters.push_back({connection, id});
    return Json(nullptr);
  }
  clears_[actor.name()] = PendingClear{{{connection, id}}, 0, 0};
  actor.hold_output(true);
  ask_kept_screen(actor);
  return Json(nullptr);  // answered by finish_clear()
}

void Engine::ask_kept_screen(Actor& actor) {
  PendingClear& pending = clears_.at(actor.name());
  SnapshotRequest request;
  request.token = next_id_++;
  request.options.scrollback_lines = 0;
  request.not_before = actor.ring().committed();
  request.drop_history = true;
  pending.token = request.token;
  ++pending.rounds;
  mirror_->request_snapshot(mirror_ids_.at(actor.name()), request);
  mirror_changed(actor.name());  // its history goes
}

Json Engine::clear_everything(Actor& actor, const char* why) {
  const Cursor floor = actor.clear();
  mirror_reset(actor, floor);
  finish_clear_below(actor, floor);
  record_fresh_terminal(actor, floor);
  return cleared(actor, floor, false, why);
}

void Engine::finish_clear_below(Actor& actor, Cursor floor) {
  transcripts_.clear(actor, floor);
  cache_.erase(actor.name());  // cleared output is never served again
  if (recorder::Recording* r = recording(actor.name())) {
    r->events.discard_below(floor);  // events read from the cleared bytes go with them
    r->keyframes.drop_below(floor);
  }
}

Json Engine::cleared(Actor& actor, Cursor floor, bool screen_kept, const char* why) {
  record_event(actor.name(), recorder::EventKind::clear, floor);
  Json fields{{"floor", value(floor)}, {"screen_kept", screen_kept}};
  if (!screen_kept) fields["screen_cleared"] = why;
  Json event{{"event", "cleared"}, {"actor", actor.name()}};
  event.update(fields);
  broadcast(event);
  return fields;
}

bool Engine::finish_clear(std::uint64_t token, const SnapshotReply& r) {
  auto pending = std::find_if(clears_.begin(), clears_.end(),
                              [token](const auto& c) { return c.second.token == token; });
  if (pending == clears_.end()) return false;
  const std::string name = pending->first;
  const auto a = actors_.find(name);
  Json answer;
  std::optional<Error> error;
  if (!r.found || a == actors_.end()) {
    if (a != actors_.end()) a->second->hold_output(false);  // never left held
    error = Error{Errc::no_such_actor, "actor '" + name + "' was deleted", std::nullopt};
  } else {
    Actor& actor = *a->second;
    const term::Snapshot& snap = r.taken.snapshot;
    const Cursor committed = actor.ring().committed();
    if (!snap.fallback_reason && r.taken.cursor < committed &&
        pending->second.rounds < kClearRounds) {
      ask_kept_screen(actor);  // a read landed after the question: the mirror parses it too
      return true;
    }
    actor.hold_output(false);
    if (snap.fallback_reason || r.taken.cursor != committed) {
      // The screen cannot be kept exactly: the mirror's state is one a snapshot cannot draw,
      // or the output stops inside a sequence.
      const std::string why = snap.fallback_reason ? *snap.fallback_reason : "incomplete_sequence";
      log(LogLevel::info, "actor {}: clear keeps no screen ({})", name, why);
      answer = clear_everything(actor, snap.fallback_reason ? "snapshot_fallback" : "mid_sequence");
    } else {
      // The mirror dropped its history at `committed` and goes on from there: only the bytes
      // and what they caused go.
      const Cursor floor = actor.clear();
      finish_clear_below(actor, floor);
      answer = cleared(actor, floor, true, "");
      if (recorder::Recording* rec = recording(name)) {
        recorder::Keyframe kept;
        kept.cursor = floor;
        kept.stretch = rec->keyframes.stretch();
        kept.cols = static_cast<std::uint16_t>(snap.cols);
        kept.rows = static_cast<std::uint16_t>(snap.rows);
        kept.sizes_applied = rec->keyframes.next_size_seq() - 1;
        kept.time_ms = wall_clock_ms();
        kept.snapshot = snap.bytes;
        kept.history_lines = 0;
        const Json fields{{"cols", kept.cols},
                          {"rows", kept.rows},
                          {"bytes", kept.snapshot.size()},
                          {"history_lines", 0}};
        rec->durable_keyframe_wanted = floor;  // on disk whatever its size: a restore shows it
        keep_keyframe(name, *rec, std::move(kept));
        record_event(name, recorder::EventKind::keyframe, floor, fields, wall_clock_ms());
      }
    }
  }
  for (const auto& [connection, id] : pending->second.waiters) {
    control_->reply(connection,
                    error ? control::error_response(id, *error) : control::ok_response(id, answer));
  }
  clears_.erase(pending);
  return true;
}

}  // namespace backscroll::engine
