// Size ownership (docs/protocol.md, "Size ownership"): which controller attachment owns an
// actor's size, the `take_control` op, hand-back when the owner leaves, the actor's resizes
// and the events that tell its clients (`controller`, `resized`). Io thread.
// Invariants: controllers_[actor] lists the actor's controller attachments in the order they
// last took control, the owner last, and holds no id attachments_ does not; a live actor whose
// owner changed is at the new owner's recorded size unless the resize failed (its program
// just ended).
#include <algorithm>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/request_fields.hpp"

namespace backscroll::engine {

using control::Json;

std::optional<std::uint64_t> Engine::owner_of(const std::string& actor) const {
  const auto c = controllers_.find(actor);
  if (c == controllers_.end()) return std::nullopt;
  return c->second.back();
}

void Engine::notify_attached(const std::string& actor, const Json& event) {
  // Collected first: a send may drop a connection, whose end changes both sets.
  std::vector<ConnectionId> targets(subscribers_.begin(), subscribers_.end());
  for (const auto& [id, a] : attachments_) {
    if (a.actor == actor && !subscribers_.count(a.connection)) targets.push_back(a.connection);
  }
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  for (const ConnectionId c : targets) server_->send_event(c, event);
}

Result<void> Engine::resize_actor(Actor& actor, WindowSize size) {
  const WindowSize before = actor.size();
  if (auto r = actor.resize(size); !r) return r;
  // Every byte committed so far was written at the old size.
  const Cursor at = actor.ring().committed();
  const auto m = mirror_ids_.find(actor.name());
  if (mirror_ && m != mirror_ids_.end()) mirror_->resize(m->second, at, size.cols, size.rows);
  if (before.cols != size.cols || before.rows != size.rows) {
    notify_attached(actor.name(), {{"event", "resized"},
                                   {"actor", actor.name()},
                                   {"cols", size.cols},
                                   {"rows", size.rows},
                                   {"cursor", value(at)}});
  }
  return {};
}

Result<void> Engine::check_resize_owner(const Actor& actor, const Json& request) const {
  const auto owner = owner_of(actor.name());
  if (!request.contains("attachment")) {
    if (!owner) return {};
    return fail(Errc::stale_controller,
                "actor '" + actor.name() + "' has a controller: resize through its attachment");
  }
  auto id = uint_field(request, "attachment");
  if (!id) return tl::unexpected(id.error());
  const auto a = attachments_.find(*id);
  if (a == attachments_.end() || a->second.actor != actor.name()) {
    return fail(Errc::stale_controller, "attachment " + std::to_string(*id) +
                                            " is not attached to '" + actor.name() + "'");
  }
  if (!a->second.controller) return fail(Errc::bad_request, "viewers never resize");
  if (owner != *id) {
    return fail(Errc::stale_controller, "attachment " + std::to_string(*id) +
                                            " was replaced as the controller of '" +
                                            actor.name() + "'");
  }
  return {};
}

void Engine::make_owner(Actor& actor, std::uint64_t attachment, const char* reason) {
  const std::optional<std::uint64_t> previous = owner_of(actor.name());
  auto& order = controllers_[actor.name()];
  std::erase(order, attachment);
  order.push_back(attachment);
  const WindowSize size = attachments_.at(attachment).size;
  Json event{{"event", "controller"},
             {"actor", actor.name()},
             {"attachment", attachment},
             {"cols", size.cols},
             {"rows", size.rows},
             {"reason", reason}};
  if (previous) event["replaced"] = *previous;
  notify_attached(actor.name(), event);
}

bool Engine::apply_owner_size(Actor& actor) {
  const auto owner = owner_of(actor.name());
  if (!owner || !actor.live()) return false;
  const WindowSize want = attachments_.at(*owner).size;
  if (want.cols == actor.size().cols && want.rows == actor.size().rows) return false;
  if (auto r = resize_actor(actor, want); !r) {
    // Its program has just ended (the session drains): the size no longer matters.
    log(LogLevel::info, "actor {}: not resized for attachment {}: {}", actor.name(), *owner,
        r.error().describe());
    return false;
  }
  return true;
}

void Engine::end_attachment(std::uint64_t attachment) {
  const auto a = attachments_.find(attachment);
  if (a == attachments_.end()) return;
  const std::string actor = a->second.actor;
  attachments_.erase(a);
  const auto c = controllers_.find(actor);
  if (c == controllers_.end()) return;
  const bool was_owner = c->second.back() == attachment;
  std::erase(c->second, attachment);
  if (c->second.empty()) {
    controllers_.erase(c);  // no controller left: the actor keeps its size
    return;
  }
  if (!was_owner) return;
  const auto found = actors_.find(actor);
  if (found == actors_.end()) return;
  // The most recent remaining controller takes over, at the size it asked for.
  const std::uint64_t next = c->second.back();
  Json event{{"event", "controller"},
             {"actor", actor},
             {"attachment", next},
             {"replaced", attachment},
             {"cols", attachments_.at(next).size.cols},
             {"rows", attachments_.at(next).size.rows},
             {"reason", "handed_back"}};
  notify_attached(actor, event);
  apply_owner_size(*found->second);
}

Result<std::uint64_t> Engine::own_attachment(ConnectionId connection, const Json& request) const {
  auto id = uint_field(request, "attachment");
  if (!id) return tl::unexpected(id.error());
  const auto a = attachments_.find(*id);
  if (a == attachments_.end() || a->second.connection != connection) {
    return fail(Errc::bad_request, "no attachment " + std::to_string(*id) + " on this connection");
  }
  return *id;
}

Result<Json> Engine::op_take_control(ConnectionId connection, const Json& request) {
  auto id = own_attachment(connection, request);
  if (!id) return tl::unexpected(id.error());
  const auto a = attachments_.find(*id);
  if (!a->second.controller) {
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
  const auto found = actors_.find(a->second.actor);
  if (found == actors_.end()) {  // attachments end with their actor; kept for safety
    return fail(Errc::no_such_actor, "no actor named '" + a->second.actor + "'");
  }
  Actor& actor = *found->second;
  if (owner_of(actor.name()) == *id) {  // the owner already: nothing changes
    return Json{{"attachment", *id}, {"cols", a->second.size.cols}, {"rows", a->second.size.rows}};
  }
  if (size) a->second.size = *size;
  const Json answer{{"attachment", *id}, {"cols", a->second.size.cols},
                    {"rows", a->second.size.rows}};
  make_owner(actor, *id, "took_control");
  apply_owner_size(actor);
  return answer;
}

}  // namespace backscroll::engine
