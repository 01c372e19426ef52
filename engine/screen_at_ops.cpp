// The screen at a past cursor (docs/recorder.md, "The screen at any cursor"): `snapshot` with
// `at` (a cursor), `at_event` ("KIND:N") or `at_time_ms`. The io thread picks the newest
// keyframe at or before the cursor, reads the bytes after it from the ring, the session cache or
// the transcript (history's sources), and hands both to the replay thread; the answer comes
// back by token, as a mirror's snapshot does. Io thread.
#include <charconv>

#include "engine/engine.hpp"
#include "engine/request_fields.hpp"

namespace backscroll::engine {

using control::Json;

Result<Engine::PastPoint> Engine::resolve_at(const Actor& actor, const Json& request) {
  const recorder::Recording* r = recording(actor.name());
  if (!r) return fail(Errc::internal, "no recording");
  Cursor at{0};
  bool session_end = false;
  if (request.contains("at") && !request["at"].is_null()) {
    auto cursor = uint_field(request, "at");
    if (!cursor) return tl::unexpected(cursor.error());
    at = Cursor{*cursor};
  } else if (request.contains("at_event") && !request["at_event"].is_null()) {
    auto ref = string_field(request, "at_event");
    if (!ref) return tl::unexpected(ref.error());
    // KIND:N, N counted from 0 (the oldest kept) or back from -1 (the newest).
    const auto colon = ref->find(':');
    const auto kind = recorder::parse_event_kind(ref->substr(0, colon));
    std::int64_t n = 0;
    const char* last = ref->data() + ref->size();
    // (Without a colon there is no number: `data() + npos` would be past any object.)
    const char* first = colon == std::string::npos ? last : ref->data() + colon + 1;
    const bool number = first != last && std::from_chars(first, last, n).ptr == last;
    if (!kind || !number) {
      return fail(Errc::bad_request,
                  "\"at_event\" must be KIND:N (e.g. prompt:-1, the newest "
                  "prompt), got '" +
                      *ref + "'");
    }
    const auto event = r->events.nth(*kind, n);
    if (!event) {
      return fail(Errc::bad_request, "no event " + *ref + " in " + actor.name() + "'s track");
    }
    at = event->cursor;
    session_end = *kind == recorder::EventKind::seal || *kind == recorder::EventKind::exit;
  } else {
    const auto time = request.find("at_time_ms");
    if (!time->is_number_integer()) {
      return fail(Errc::bad_request, "\"at_time_ms\" must be an integer (ms since the Unix epoch)");
    }
    const auto cursor = r->times.cursor_at(time->get<std::int64_t>());
    if (!cursor) {
      const recorder::Keyframe* oldest = r->keyframes.oldest();
      return fail(Errc::cursor_expired, "no output was recorded at or before that time",
                  value(oldest ? oldest->cursor : actor.ring().committed()));
    }
    at = *cursor;
  }
  if (at > actor.ring().committed()) {
    return fail(Errc::cursor_in_future,
                "cursor " + std::to_string(value(at)) + " is past the committed cursor",
                value(actor.ring().committed()));
  }
  return PastPoint{at, session_end};
}

Result<std::string> Engine::read_range(const Actor& actor, Cursor from, Cursor to) {
  std::string out;
  out.reserve(to - from);
  while (from < to) {
    auto piece = from < actor.ring().floor()
                     ? older_history(actor, from, to, control::kMaxPayloadBytes)
                     : actor.history(from, to, control::kMaxPayloadBytes);
    if (!piece) return tl::unexpected(piece.error());
    if (piece->empty()) return fail(Errc::internal, "history returned nothing before its end");
    out += *piece;
    from = from + piece->size();
  }
  return out;
}

Result<Json> Engine::snapshot_at(ConnectionId connection, const SnapshotAsk& ask,
                                 const Actor& actor, const Json& request) {
  auto point = resolve_at(actor, request);
  if (!point) return tl::unexpected(point.error());
  const Cursor target = point->cursor;
  if (ask.raw_reason) {
    return fail(Errc::bad_request, "a snapshot at a past cursor is a snapshot_v1 only");
  }
  if (!replay_) {  // no mirror, no keyframes
    return request_snapshot(connection, ask, actor, Cursor{0}, Json::object());
  }
  recorder::Recording& r = *recording(actor.name());
  // Twice at most: when the bytes after the chosen keyframe are gone, keyframes below the
  // oldest retained cursor are dropped and the next one is tried.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const recorder::Keyframe* keyframe = r.keyframes.at_or_before(target, point->session_end);
    if (!keyframe) {
      const recorder::Keyframe* oldest = r.keyframes.oldest();
      return fail(Errc::cursor_expired,
                  "no keyframe at or before cursor " + std::to_string(value(target)),
                  value(oldest ? oldest->cursor : actor.ring().committed()));
    }
    if (target - keyframe->cursor > kMaxReplayBytes) {
      return fail(Errc::too_large, "the newest keyframe before cursor " +
                                       std::to_string(value(target)) + " is " +
                                       std::to_string(target - keyframe->cursor) +
                                       " bytes before it (the mirror could not take one since)");
    }
    auto bytes = read_range(actor, keyframe->cursor, target);
    if (!bytes) {
      if (bytes.error().code == Errc::cursor_expired && bytes.error().cursor) {
        r.keyframes.drop_below(Cursor{*bytes.error().cursor});
        continue;
      }
      return tl::unexpected(bytes.error());
    }
    ReplayJob job;
    job.token = next_id_++;
    job.keyframe = *keyframe;
    job.bytes = std::move(*bytes);
    job.changes = r.keyframes.size_changes(*keyframe, target, point->session_end);
    job.options = ask.options;
    pending_snapshots_.emplace(job.token,
                               PendingSnapshot{connection,
                                               ask.id,
                                               actor.name(),
                                               Json{{"keyframe", value(keyframe->cursor)},
                                                    {"replayed_bytes", job.bytes.size()}},
                                               {},
                                               std::nullopt});
    replay_->submit(std::move(job));
    return Json(nullptr);  // answered by answer_replays()
  }
  const recorder::Keyframe* oldest = r.keyframes.oldest();
  return fail(Errc::cursor_expired, "older than the oldest retained byte",
              value(oldest ? oldest->cursor : actor.ring().committed()));
}

void Engine::answer_replays() {
  if (!replay_) return;
  ReplayResult result;
  while (replay_->next_result(result)) {
    auto p = pending_snapshots_.extract(result.token);
    if (p.empty()) continue;  // its connection went away
    PendingSnapshot pending = std::move(p.mapped());
    const auto a = actors_.find(pending.actor);
    if (a == actors_.end()) {
      control_->reply(
          pending.connection,
          control::error_response(
              pending.id, Error{Errc::no_such_actor, "actor '" + pending.actor + "' was deleted",
                                std::nullopt}));
      continue;
    }
    term::Snapshot& snap = result.taken.snapshot;
    Json reply = std::move(pending.reply);
    if (snap.fallback_reason) {
      reply.update(Json{{"epoch", hex64(a->second->epoch())},
                        {"cols", snap.cols},
                        {"rows", snap.rows},
                        {"cursor", value(result.taken.cursor)},
                        {"format", "raw_replay"},
                        {"reason", *snap.fallback_reason},
                        {"bytes", 0}});
      control_->reply(pending.connection, control::ok_response(pending.id, std::move(reply)));
      continue;
    }
    reply.update(snapshot_v1_fields(a->second->epoch(), result.taken));
    control_->reply(pending.connection, control::ok_response(pending.id, std::move(reply)),
                    std::move(snap.bytes));
  }
}

}  // namespace backscroll::engine
