// Attachments and snapshots (docs/protocol.md, "Snapshots and attachments"): the `snapshot`,
// `attach` and `detach` ops and the io thread's side of the mirror thread (who owns the size:
// ownership_ops.cpp). Io thread. The io thread is the per-actor lock of docs/design.md,
// "Attachments and size": an attach checks every field first, then registers its controller,
// resizes the PTY, enqueues the resize for the mirror at the committed cursor and asks for the
// snapshot in one step, so no other request can come between them, and a refused attach changes
// nothing.
#include <algorithm>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/request_fields.hpp"

namespace backscroll::engine {

using control::Json;

void Engine::mirror_add(Actor& actor) {
  if (!mirror_) return;
  auto ring = shm::RingReader::open_announced(actor.ring().announcement());
  if (!ring) {
    log(LogLevel::error, "actor {}: no mirror ({})", actor.name(), ring.error().describe());
    return;
  }
  const MirrorActorId id = next_id_++;
  mirror_ids_[actor.name()] = id;
  mirror_->add_actor(id, std::move(*ring), actor.attach_consumer(), actor.size().cols,
                     actor.size().rows);
}

void Engine::mirror_reset(const Actor& actor, Cursor at) {
  const auto m = mirror_ids_.find(actor.name());
  if (mirror_ && m != mirror_ids_.end()) mirror_->reset(m->second, at);
}

void Engine::drop_attachments(const std::string& actor) {
  controllers_.erase(actor);
  std::erase_if(attachments_, [&](const auto& a) { return a.second.actor == actor; });
}

Result<Engine::SnapshotAsk> Engine::check_snapshot_request(ConnectionId connection,
                                                          const Json& request) const {
  SnapshotAsk ask;
  ask.id = request.contains("id") ? request["id"] : Json(nullptr);
  auto scrollback = uint_field(request, "scrollback", settings_.snapshot_scrollback);
  if (!scrollback) return tl::unexpected(scrollback.error());
  if (*scrollback > kMaxSnapshotScrollback) {
    return fail(Errc::too_large, "\"scrollback\" exceeds " + std::to_string(kMaxSnapshotScrollback));
  }
  ask.scrollback = *scrollback;
  const auto waiting = std::count_if(pending_snapshots_.begin(), pending_snapshots_.end(),
                                     [connection](const auto& p) {
                                       return p.second.connection == connection;
                                     });
  if (waiting >= static_cast<std::ptrdiff_t>(kMaxPendingSnapshotsPerConnection)) {
    return fail(Errc::too_large, "this connection already waits for " +
                                     std::to_string(kMaxPendingSnapshotsPerConnection) +
                                     " snapshots");
  }
  if (const auto formats = request.find("formats"); formats != request.end()) {
    if (!formats->is_array()) return fail(Errc::bad_request, "\"formats\" must be an array");
    if (std::find(formats->begin(), formats->end(), Json("snapshot_v1")) == formats->end()) {
      ask.raw_reason = "client";
    }
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

  const std::uint64_t token = next_id_++;
  SnapshotRequest r;
  r.token = token;
  r.options.scrollback_lines = ask.scrollback;
  r.not_before = not_before;
  pending_snapshots_.emplace(token,
                             PendingSnapshot{connection, ask.id, actor.name(), std::move(reply)});
  mirror_->request_snapshot(m->second, r);
  return Json(nullptr);  // answered by answer_snapshots()
}

void Engine::answer_snapshots() {
  if (!mirror_) return;
  SnapshotReply r;
  while (mirror_->next_reply(r)) {
    if (answer_deletion(r)) continue;
    const auto p = pending_snapshots_.find(r.token);
    if (p == pending_snapshots_.end()) continue;  // its connection went away
    PendingSnapshot pending = std::move(p->second);
    pending_snapshots_.erase(p);
    const auto a = actors_.find(pending.actor);
    if (!r.found || a == actors_.end()) {
      server_->reply(pending.connection, control::error_response(pending.id, Error{
          Errc::no_such_actor, "actor '" + pending.actor + "' was deleted", std::nullopt}));
      continue;
    }
    const Actor& actor = *a->second;
    const term::Snapshot& snap = r.taken.snapshot;
    Json reply = std::move(pending.reply);
    reply.update(Json{{"epoch", hex64(actor.epoch())}, {"cols", snap.cols}, {"rows", snap.rows}});
    std::optional<std::string> reason = snap.fallback_reason;
    // The bytes from the snapshot's cursor on must still be readable for it to be usable.
    if (!reason && r.taken.cursor < actor.ring().floor()) reason = "expired";
    if (reason) {
      reply.update(Json{{"format", "raw_replay"},
                        {"reason", *reason},
                        {"cursor", value(actor.ring().floor())},
                        {"bytes", 0}});
      server_->reply(pending.connection, control::ok_response(pending.id, std::move(reply)));
      continue;
    }
    reply.update(Json{{"format", "snapshot_v1"},
                      {"cursor", value(r.taken.cursor)},
                      {"bytes", snap.bytes.size()},
                      {"scrollback_lines", snap.scrollback_lines}});
    server_->reply(pending.connection, control::ok_response(pending.id, std::move(reply)),
                   snap.bytes);
  }
}

Result<Json> Engine::op_snapshot(ConnectionId connection, const Json& request) {
  auto actor = find_actor(request);
  if (!actor) return tl::unexpected(actor.error());
  auto ask = check_snapshot_request(connection, request);
  if (!ask) return tl::unexpected(ask.error());
  return request_snapshot(connection, *ask, **actor, Cursor{0}, Json::object());
}

Result<Json> Engine::op_attach(ConnectionId connection, const Json& request) {
  auto found = find_actor(request);
  if (!found) return tl::unexpected(found.error());
  Actor& actor = **found;
  auto role = string_field(request, "role");
  if (!role) return tl::unexpected(role.error());
  if (*role != "viewer" && *role != "controller") {
    return fail(Errc::bad_request, "\"role\" must be \"viewer\" or \"controller\"");
  }
  const bool controller = *role == "controller";
  std::optional<WindowSize> size;
  if (request.contains("cols") || request.contains("rows")) {
    if (!controller) return fail(Errc::bad_request, "viewers never resize");
    auto cols = dimension(request, "cols", std::nullopt);
    if (!cols) return tl::unexpected(cols.error());
    auto rows = dimension(request, "rows", std::nullopt);
    if (!rows) return tl::unexpected(rows.error());
    size = WindowSize{*cols, *rows};
  }
  // A reattach that still holds a retained cursor of this epoch resumes from it: no snapshot.
  std::optional<Cursor> since;
  if (request.contains("since")) {
    auto s = uint_field(request, "since");
    if (!s) return tl::unexpected(s.error());
    if (Cursor{*s} > actor.ring().committed()) {
      return fail(Errc::cursor_in_future, "\"since\" is past the last byte",
                  value(actor.ring().committed()));
    }
    const auto epoch = request.find("epoch");
    const bool same_epoch = epoch == request.end() || *epoch == Json(hex64(actor.epoch()));
    if (same_epoch && Cursor{*s} >= actor.ring().floor()) since = Cursor{*s};
  }
  auto ask = check_snapshot_request(connection, request);
  if (!ask) return tl::unexpected(ask.error());

  // Checked: from here on the attach happens.
  const std::uint64_t attachment = next_id_++;
  attachments_[attachment] =
      Attachment{actor.name(), connection, controller, size.value_or(actor.size())};
  Cursor not_before{0};
  if (controller) {
    make_owner(actor, attachment, "attached");
    if (apply_owner_size(actor)) not_before = actor.ring().committed();  // the snapshot shows it
  }
  Json reply{{"actor", actor.name()}, {"attachment", attachment}, {"role", *role}};
  if (since && not_before == Cursor{0}) {
    reply.update(Json{{"mode", "resume"},
                      {"cursor", value(*since)},
                      {"epoch", hex64(actor.epoch())},
                      {"cols", actor.size().cols},
                      {"rows", actor.size().rows}});
    return reply;
  }
  reply["mode"] = "snapshot";
  return request_snapshot(connection, *ask, actor, not_before, std::move(reply));
}

Result<Json> Engine::op_detach(ConnectionId connection, const Json& request) {
  auto id = own_attachment(connection, request);
  if (!id) return tl::unexpected(id.error());
  end_attachment(*id);
  return Json{{"attachment", *id}};
}

}  // namespace backscroll::engine
