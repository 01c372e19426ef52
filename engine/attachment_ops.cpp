// Attachments and size ownership (docs/protocol.md, "Snapshots and attachments" and "Size
// ownership"): the `attach`, `detach` and `take_control` ops, hand-back when an owner leaves,
// the actor's resizes and the events that tell its clients (`controller`, `resized`). The table
// and its rules are Attachments (attachments.hpp); this file acts on what it decides. Io thread.
// The io thread is the per-actor lock of docs/design.md, "Attachments and size": an attach
// checks every field first, then registers its controller, resizes the PTY, enqueues the resize
// for the mirror at the committed cursor and asks for the snapshot in one step, so no other
// request can come between them, and a refused attach changes nothing.
// Invariant: a live actor whose owner changed is at the new owner's recorded size unless the
// resize failed (its program just ended).
#include <algorithm>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/request_fields.hpp"
#include "engine/wall_clock.hpp"

namespace backscroll::engine {

using control::Json;

void Engine::notify_attached(const std::string& actor, const Json& event) {
  // Collected first: a send may drop a connection, whose end changes both sets.
  std::vector<ConnectionId> targets = attachments_.connections_of(actor);
  targets.insert(targets.end(), subscribers_.begin(), subscribers_.end());
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  for (const ConnectionId c : targets) control_->send_event(c, event);
}

Result<void> Engine::resize_actor(Actor& actor, WindowSize size) {
  const WindowSize before = actor.size();
  if (auto r = actor.resize(size); !r) return r;
  // Every byte committed so far was written at the old size.
  const Cursor at = actor.ring().committed();
  const auto m = mirror_ids_.find(actor.name());
  if (mirror_ && m != mirror_ids_.end()) {
    mirror_->resize(m->second, at, size.cols, size.rows);
    mirror_changed(actor.name());
    // Numbered as the mirror applies them (Keyframe::sizes_applied counts the same resizes).
    record_size_change(actor, at, size);
  }
  if (before.cols != size.cols || before.rows != size.rows) {
    record_event(actor.name(), recorder::EventKind::resize, at,
                 {{"cols", size.cols}, {"rows", size.rows}});
    notify_attached(actor.name(), {{"event", "resized"},
                                   {"actor", actor.name()},
                                   {"cols", size.cols},
                                   {"rows", size.rows},
                                   {"cursor", value(at)}});
  }
  return {};
}

void Engine::make_owner(Actor& actor, std::uint64_t attachment, const char* reason) {
  const std::optional<std::uint64_t> previous = attachments_.take_control(attachment);
  const WindowSize size = attachments_.find(attachment)->size;
  Json event{{"event", "controller"}, {"actor", actor.name()}, {"attachment", attachment},
             {"cols", size.cols},     {"rows", size.rows},     {"reason", reason}};
  if (previous) event["replaced"] = *previous;
  notify_attached(actor.name(), event);
}

bool Engine::apply_owner_size(Actor& actor) {
  const auto want = attachments_.owner_size(actor.name());
  if (!want || !actor.live()) return false;
  if (want->cols == actor.size().cols && want->rows == actor.size().rows) return false;
  if (auto r = resize_actor(actor, *want); !r) {
    // Its program has just ended (the session drains): the size no longer matters.
    log(LogLevel::info, "actor {}: not resized for attachment {}: {}", actor.name(),
        *attachments_.owner_of(actor.name()), r.error().describe());
    return false;
  }
  return true;
}

void Engine::end_attachment(std::uint64_t attachment) {
  const auto ended = attachments_.end(attachment);
  if (!ended || !ended->new_owner) return;
  const auto found = actors_.find(ended->actor);
  if (found == actors_.end()) return;
  // The most recent remaining controller takes over, at the size it asked for.
  const WindowSize size = attachments_.find(*ended->new_owner)->size;
  notify_attached(ended->actor, {{"event", "controller"},
                                 {"actor", ended->actor},
                                 {"attachment", *ended->new_owner},
                                 {"replaced", attachment},
                                 {"cols", size.cols},
                                 {"rows", size.rows},
                                 {"reason", "handed_back"}});
  apply_owner_size(*found->second);
}

Result<std::uint64_t> Engine::own_attachment(ConnectionId connection, const Json& request) const {
  auto id = uint_field(request, "attachment");
  if (!id) return tl::unexpected(id.error());
  return attachments_.own(connection, *id);
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
  attachments_.add(attachment, Attachment{actor.name(), connection, controller,
                                          size.value_or(actor.size()), wall_clock_ms()});
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

Result<Json> Engine::op_take_control(ConnectionId connection, const Json& request) {
  auto id = own_attachment(connection, request);
  if (!id) return tl::unexpected(id.error());
  const Attachment& a = *attachments_.find(*id);
  if (!a.controller) {
    return fail(Errc::bad_request, "a viewer cannot take control: attach as a controller");
  }
  std::optional<WindowSize> size;
  if (request.contains("cols") || request.contains("rows")) {
    auto cols = dimension(request, "cols", std::nullopt);
    if (!cols) return tl::unexpected(cols.error());
    auto rows = dimension(request, "rows", std::nullopt);
    if (!rows) return tl::unexpected(rows.error());
    size = WindowSize{*cols, *rows};
  }
  const auto found = actors_.find(a.actor);
  if (found == actors_.end()) {  // attachments end with their actor; kept for safety
    return fail(Errc::no_such_actor, "no actor named '" + a.actor + "'");
  }
  Actor& actor = *found->second;
  if (attachments_.owner_of(actor.name()) == *id) {  // the owner already: nothing changes
    return Json{{"attachment", *id}, {"cols", a.size.cols}, {"rows", a.size.rows}};
  }
  if (size) attachments_.set_size(*id, *size);
  const Json answer{{"attachment", *id}, {"cols", a.size.cols}, {"rows", a.size.rows}};
  make_owner(actor, *id, "took_control");
  apply_owner_size(actor);
  return answer;
}

}  // namespace backscroll::engine
