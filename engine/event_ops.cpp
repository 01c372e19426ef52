// The event track (docs/recorder.md): recording each actor's events as the io thread acts and as
// the mirror reports them, the live `track` frames to subscribers, and the `events` op. Io thread.
#include <algorithm>
#include <cstring>

#include "engine/engine.hpp"
#include "engine/recorder/durable_recording.hpp"
#include "engine/request_fields.hpp"
#include "engine/wall_clock.hpp"

namespace backscroll::engine {

using control::Json;
using recorder::EventKind;

namespace {

// A spawn's argv and cwd are kept up to this many bytes in all: the track is bounded in events,
// and an argv may be as long as a frame.
constexpr std::size_t kMaxSpawnTextBytes = 4096;

static_assert(static_cast<int>(term::AgentStatus::permission) ==
              static_cast<int>(shm::OutputAgentStatus::permission));

// The ring header's form of what the output says (shm/ring_layout.hpp, OutputStatus).
shm::OutputStatus ring_output(const recorder::OutputState& state, Cursor cursor) {
  shm::OutputStatus out;
  out.cursor = value(cursor);
  out.bells = state.bells;
  out.agent_status = static_cast<shm::OutputAgentStatus>(state.status);
  const auto copy = [](std::string_view text, char* to, std::size_t room) {
    std::size_t n = std::min(text.size(), room);
    // Never half a UTF-8 character: back off over continuation bytes.
    while (n < text.size() && n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    std::memcpy(to, text.data(), n);
    return static_cast<std::uint32_t>(n);
  };
  out.title_bytes = copy(state.title, out.title, sizeof out.title);
  out.agent_bytes = copy(state.agent, out.agent, sizeof out.agent);
  return out;
}

}  // namespace

recorder::Recording* Engine::recording(const std::string& actor) {
  const auto it = recordings_.find(actor);
  return it == recordings_.end() ? nullptr : &it->second;
}

void Engine::record_event(const std::string& actor, EventKind kind, Cursor cursor, Json fields,
                          std::optional<std::int64_t> time_ms) {
  recorder::Recording* r = recording(actor);
  if (!r) return;
  const std::optional<recorder::TrackEvent> event =
      r->events.record(kind, cursor, time_ms.value_or(wall_clock_ms()), std::move(fields));
  if (!event) return;
  if (transcripts_.keeps(actor)) keep_durably(actor, recorder::encode(*event));
  Json frame = event->to_json(actor);
  frame["event"] = "track";
  broadcast(frame);
}

void Engine::record_output_events() {
  if (!mirror_) return;
  OutputEventBatch batch;
  while (mirror_->next_events(batch)) {
    // The actor may be gone since (its events go with it).
    const auto named = std::find_if(mirror_ids_.begin(), mirror_ids_.end(),
                                    [&batch](const auto& m) { return m.second == batch.id; });
    if (named == mirror_ids_.end()) continue;
    if (batch.state) {
      if (recorder::Recording* r = recording(named->first)) {
        r->output = *batch.state;
        r->output_cursor = batch.state_cursor;
      }
      if (const auto a = actors_.find(named->first); a != actors_.end()) {
        a->second->publish_output(ring_output(*batch.state, batch.state_cursor));
      }
    }
    const auto actor = actors_.find(named->first);
    for (recorder::OutputEvent& e : batch.events) {
      if (actor != actors_.end() &&
          (e.kind == EventKind::prompt || e.kind == EventKind::command_start))
        actor->second->input_wait().at_prompt = e.kind == EventKind::prompt;
      record_event(named->first, e.kind, e.cursor, std::move(e.fields), e.time_ms);
    }
    for (recorder::Keyframe& k : batch.keyframes) {
      const Json fields{{"cols", k.cols},
                        {"rows", k.rows},
                        {"bytes", k.snapshot.size()},
                        {"history_lines", k.history_lines}};
      const Cursor at = k.cursor;
      const std::int64_t time = k.time_ms;
      if (recorder::Recording* r = recording(named->first))
        keep_keyframe(named->first, *r, std::move(k));
      record_event(named->first, EventKind::keyframe, at, fields, time);
    }
  }
  if (!pending_sends_.empty()) deliver_sends();  // an agent status or a prompt may say "waiting"
}

void Engine::record_spawn(const Actor& actor, const shm::SessionRecord& session) {
  Json argv = Json::array();
  std::size_t budget = kMaxSpawnTextBytes;
  bool truncated = false;
  for (const std::string& arg : actor.spec().argv) {
    if (arg.size() > budget) {
      truncated = true;
      break;
    }
    budget -= arg.size();
    argv.push_back(arg);
  }
  Json fields{{"session", session.id},     {"pid", session.pid},
              {"argv", std::move(argv)},   {"cwd", actor.spec().cwd.substr(0, kMaxSpawnTextBytes)},
              {"cols", actor.size().cols}, {"rows", actor.size().rows}};
  if (truncated) fields["argv_truncated"] = true;
  record_event(actor.name(), EventKind::spawn, Cursor{session.start}, std::move(fields));
}

void Engine::announce_spawn(const Actor& actor, const shm::SessionRecord& session) {
  record_fresh_terminal(actor, Cursor{session.start});
  record_spawn(actor, session);
  broadcast({{"event", "spawned"},
             {"actor", actor.name()},
             {"session", session.id},
             {"pid", session.pid},
             {"cursor", session.start}});
}

Result<Json> Engine::op_events(const Json& request) const {
  auto actor = find_actor(request);
  if (!actor) return tl::unexpected(actor.error());
  recorder::EventQuery query;
  auto from = uint_field(request, "from", 0);
  if (!from) return tl::unexpected(from.error());
  query.from = Cursor{*from};
  if (request.contains("to")) {
    auto to = uint_field(request, "to");
    if (!to) return tl::unexpected(to.error());
    query.to = Cursor{*to};
  }
  if (const auto since = request.find("since_ms"); since != request.end() && !since->is_null()) {
    if (!since->is_number_integer()) {
      return fail(Errc::bad_request, "\"since_ms\" must be an integer (ms since the Unix epoch)");
    }
    query.since_ms = since->get<std::int64_t>();
  }
  if (const auto kinds = request.find("kinds"); kinds != request.end() && !kinds->is_null()) {
    if (!kinds->is_array()) return fail(Errc::bad_request, "\"kinds\" must be an array of names");
    query.kinds = 0;
    for (const Json& k : *kinds) {
      const auto kind =
          k.is_string() ? recorder::parse_event_kind(k.get<std::string>()) : std::nullopt;
      if (!kind) {
        return fail(Errc::bad_request,
                    "\"kinds\": unknown event kind " + k.dump() + " (docs/recorder.md)");
      }
      query.kinds |= recorder::mask_of(*kind);
    }
  }
  auto skip = uint_field(request, "skip", 0);
  if (!skip) return tl::unexpected(skip.error());
  query.skip = *skip;
  auto limit = uint_field(request, "limit", kDefaultEventsPerReply);
  if (!limit) return tl::unexpected(limit.error());
  if (*limit == 0 || *limit > kMaxEventsPerReply) {
    return fail(Errc::bad_request, "\"limit\" must be 1.." + std::to_string(kMaxEventsPerReply));
  }
  query.limit = *limit;

  const auto found = recordings_.find((*actor)->name());
  if (found == recordings_.end()) return fail(Errc::internal, "no recording");
  const recorder::EventTrack& track = found->second.events;
  const recorder::EventPage page = track.query(query);
  Json events = Json::array();
  for (const recorder::TrackEvent& e : page.events) events.push_back(e.to_json((*actor)->name()));
  return Json{{"actor", (*actor)->name()},
              {"events", std::move(events)},
              {"more", page.more},
              {"last_seq", track.last_seq()},
              {"evicted", track.evicted()}};
}

}  // namespace backscroll::engine
