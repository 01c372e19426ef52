// Snapshots (docs/protocol.md, "Snapshots and attachments"): the `snapshot` op, the io thread's
// side of the mirror thread (which actors it mirrors, the requests it answers) and the answers
// to clients. Io thread.
#include <algorithm>
#include <chrono>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/request_fields.hpp"

namespace backscroll::engine {

using control::Json;

void Engine::mirror_add(Actor& actor, std::optional<MirrorStart::Cold> cold) {
  if (!mirror_) return;
  const MirrorActorId id = next_id_++;
  mirror_ids_[actor.name()] = id;
  MirrorStart start;
  if (const recorder::Recording* r = recording(actor.name())) {
    // Numbered as the recording numbers them (a restored one goes on from what it read back).
    start.stretch = r->keyframes.stretch();
    start.sizes_applied = r->keyframes.next_size_seq() - 1;
  }
  start.cold = std::move(cold);
  const MirrorWatch watch{std::make_shared<MirrorUsage>(), actor.attach_consumer()};
  mirror_watch_[actor.name()] = watch;
  lane_.add(actor.name(), actor.ring().reader(), watch.usage, actor.epoch());
  mirror_->add_actor(id, actor.ring().reader(), watch.consumer, actor.size().cols,
                     actor.size().rows, std::move(start), watch.usage);
}

void Engine::mirror_reset(const Actor& actor, Cursor at) {
  const auto m = mirror_ids_.find(actor.name());
  if (mirror_ && m != mirror_ids_.end()) mirror_->reset(m->second, at);
  mirror_changed(actor.name());
}

void Engine::mirror_changed(const std::string& actor) { lane_.changed(actor); }

Result<SnapshotAsk> Engine::check_snapshot_request(ConnectionId connection,
                                                   const Json& request) const {
  auto ask = parse_snapshot_ask(request, settings_.snapshot_scrollback);
  if (!ask) return ask;
  const auto waiting =
      std::count_if(pending_snapshots_.begin(), pending_snapshots_.end(),
                    [connection](const auto& p) { return p.second.connection == connection; });
  if (waiting >= static_cast<std::ptrdiff_t>(kMaxPendingSnapshotsPerConnection)) {
    return fail(Errc::too_large, "this connection already waits for " +
                                     std::to_string(kMaxPendingSnapshotsPerConnection) +
                                     " snapshots");
  }
  return ask;
}

Json Engine::request_snapshot(ConnectionId connection, const SnapshotAsk& ask, const Actor& actor,
                              Cursor not_before, Json reply) {
  // A client that cannot read snapshot_v1, or an engine without a mirror: raw replay at once.
  const char* raw_reason = ask.raw_reason;
  const auto m = mirror_ids_.find(actor.name());
  if (!raw_reason && (!mirror_ || m == mirror_ids_.end())) raw_reason = "no_mirror";
  if (raw_reason) {
    reply.update(Json{{"format", "raw_replay"},
                      {"reason", raw_reason},
                      {"cursor", value(actor.ring().floor())},
                      {"epoch", hex64(actor.epoch())},
                      {"cols", actor.size().cols},
                      {"rows", actor.size().rows},
                      {"bytes", 0}});
    return reply;
  }

  SnapshotRequest r;
  r.options = ask.options;
  r.not_before = not_before;
  PendingSnapshot pending{connection,       ask.id,    actor.name(),
                          std::move(reply), r.options, lane_.generation(actor.name())};
  if (ask.timing) pending.asked = std::chrono::steady_clock::now();
  // The lane (engine/snapshot_lane.hpp; the control thread answers most requests it can):
  // answered here and now when it holds the present screen, at or after not_before.
  if (const auto held = lane_.held(actor.name(), r.options, not_before)) {
    answer_snapshot(std::move(pending), SnapshotReply{0, true, *held->taken});
    return Json(nullptr);  // answered
  }
  r.token = next_id_++;
  pending_snapshots_.emplace(r.token, std::move(pending));
  mirror_->request_snapshot(m->second, r);
  return Json(nullptr);  // answered by answer_snapshots()
}

void Engine::answer_snapshots() {
  if (!mirror_) return;
  SnapshotReply r;
  while (mirror_->next_reply(r)) {
    if (auto p = pending_snapshots_.extract(r.token); !p.empty()) {
      answer_snapshot(std::move(p.mapped()), r);
    } else if (auto d = deletion_texts_.extract(r.token); !d.empty()) {
      finish_deletion(d.mapped(),
                      r.found ? std::optional(std::move(r.taken.snapshot.bytes)) : std::nullopt);
    } else {
      (void)finish_clear(r.token, r);  // or none: its connection went away
    }
  }
}

namespace {

// Where a snapshot's time went, in microseconds, from the io thread asking the mirror to the
// io thread answering: waiting for the mirror thread to take the request (`to_mirror`), for
// its mirror to be ready (`catch_up`: parsing up to the request's cursor or the history lines
// after a jump), building the answer (`build`), and waiting for the io thread again
// (`to_answer`). Answered by the lane (no mirror thread): all zero but the last.
Json snapshot_timing(std::chrono::steady_clock::time_point asked, const SnapshotReply& r) {
  const auto us = [](auto from, auto to) {
    return std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::microseconds>(to - from).count());
  };
  const auto now = std::chrono::steady_clock::now();
  if (r.token == 0) {
    return Json{{"to_mirror", 0}, {"catch_up", 0}, {"build", 0}, {"to_answer", us(asked, now)}};
  }
  return Json{{"to_mirror", us(asked, r.taken_in)},
              {"catch_up", us(r.taken_in, r.started)},
              {"build", us(r.started, r.queued)},
              {"to_answer", us(r.queued, now)}};
}

}  // namespace

void Engine::answer_snapshot(PendingSnapshot pending, const SnapshotReply& r) {
  const auto a = actors_.find(pending.actor);
  if (!r.found || a == actors_.end()) {
    control_->reply(
        pending.connection,
        control::error_response(
            pending.id,
            Error{Errc::no_such_actor, "actor '" + pending.actor + "' was deleted", std::nullopt}));
    return;
  }
  const Actor& actor = *a->second;
  const term::Snapshot& snap = r.taken.snapshot;
  Json reply = std::move(pending.reply);
  std::optional<std::string> reason = snap.fallback_reason;
  // The bytes from the snapshot's cursor on must still be readable for it to be usable.
  if (!reason && r.taken.cursor < actor.ring().floor()) reason = "expired";
  if (reason) {
    reply.update(Json{{"epoch", hex64(actor.epoch())},
                      {"cols", snap.cols},
                      {"rows", snap.rows},
                      {"format", "raw_replay"},
                      {"reason", *reason},
                      {"cursor", value(actor.ring().floor())},
                      {"bytes", 0}});
    control_->reply(pending.connection, control::ok_response(pending.id, std::move(reply)));
    return;
  }
  reply.update(snapshot_v1_fields(actor.epoch(), r.taken));
  if (pending.asked) reply["timing_us"] = snapshot_timing(*pending.asked, r);
  control_->reply(pending.connection, control::ok_response(pending.id, std::move(reply)),
                  snap.bytes);
  // Kept for the lane when no event came since it was asked: the mirror's state at its cursor.
  if (r.token != 0 && pending.generation) {
    lane_.keep(pending.actor, *pending.generation, pending.options, r.taken);
  }
}

Result<Json> Engine::op_snapshot(ConnectionId connection, const Json& request) {
  auto actor = find_actor(request);
  if (!actor) return tl::unexpected(actor.error());
  auto ask = check_snapshot_request(connection, request);
  if (!ask) return tl::unexpected(ask.error());
  if (asks_for_past(request)) return snapshot_at(connection, *ask, **actor, request);
  return request_snapshot(connection, *ask, **actor, Cursor{0}, Json::object());
}

}  // namespace backscroll::engine
