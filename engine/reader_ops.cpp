// Readers seen (engine/reader_registry.hpp): the `reader` op, by which a shm reader says who it
// is and how far it has read, and status's view of every consumer's lag. Io thread.
#include "engine/engine.hpp"
#include "engine/request_fields.hpp"
#include "engine/wall_clock.hpp"

namespace backscroll::engine {

using control::Json;

Result<Json> Engine::op_reader(ConnectionId connection, const Json& request) {
  auto actor = find_actor(request);
  if (!actor) return tl::unexpected(actor.error());
  auto name = string_field(request, "name");
  if (!name) return tl::unexpected(name.error());
  auto cursor = uint_field(request, "cursor");
  if (!cursor) return tl::unexpected(cursor.error());
  const Cursor committed = (*actor)->ring().committed();
  if (Cursor{*cursor} > committed) {
    return tl::unexpected(Error{Errc::cursor_in_future,
                                "cursor " + std::to_string(*cursor) + " is past the committed " +
                                    std::to_string(value(committed)),
                                value(committed)});
  }
  const auto pid = control_->peer_pid(connection);
  if (auto r = readers_.report(connection, {(*actor)->name(), *name, pid.value_or(0),
                                            Cursor{*cursor}, wall_clock_ms(), 0});
      !r) {
    return tl::unexpected(r.error());
  }
  return Json{{"actor", (*actor)->name()},
              {"name", *name},
              {"committed", value(committed)},
              {"lag_bytes", committed - Cursor{*cursor}}};
}

Json Engine::readers_status(const Actor& actor) const {
  const Cursor committed = actor.ring().committed();
  const std::int64_t now = wall_clock_ms();
  const recorder::Recording* r = nullptr;
  if (const auto it = recordings_.find(actor.name()); it != recordings_.end()) r = &it->second;
  Json readers = Json::array();
  for (const AnnouncedReader& reader : readers_.of_actor(actor.name())) {
    // Seconds behind: since the stream went past what the reader has read (0 when caught up).
    std::optional<std::int64_t> past;
    if (reader.cursor < committed && r) past = r->times.time_past(reader.cursor);
    const std::int64_t lag_ms = reader.cursor >= committed ? 0
                                : past                     ? std::max<std::int64_t>(0, now - *past)
                                                           : -1;
    readers.push_back({{"name", reader.name},
                       {"pid", reader.pid},
                       {"cursor", value(reader.cursor)},
                       {"lag_bytes", committed - min(committed, reader.cursor)},
                       {"lag_ms", lag_ms < 0 ? Json(nullptr) : Json(lag_ms)},
                       {"reported_ms", reader.reported_ms},
                       {"since_ms", reader.since_ms}});
  }
  Json mirror_lag = nullptr;
  if (const auto watch = mirror_watch_.find(actor.name()); watch != mirror_watch_.end())
    mirror_lag = committed - min(committed, watch->second.consumer->position());
  Json transcript_lag = nullptr;
  if (const auto at = transcripts_.written_to(actor.name()))
    transcript_lag = committed - min(committed, *at);
  return {{"readers", std::move(readers)},
          {"mirror_lag", std::move(mirror_lag)},
          {"transcript_lag", std::move(transcript_lag)}};
}

}  // namespace backscroll::engine
