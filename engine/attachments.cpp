#include "engine/attachments.hpp"

#include <algorithm>

namespace backscroll::engine {

void Attachments::add(std::uint64_t id, Attachment attachment) {
  by_id_.insert_or_assign(id, std::move(attachment));
}

const Attachment* Attachments::find(std::uint64_t id) const {
  const auto a = by_id_.find(id);
  return a == by_id_.end() ? nullptr : &a->second;
}

Result<std::uint64_t> Attachments::own(ConnectionId connection, std::uint64_t id) const {
  const Attachment* a = find(id);
  if (!a || a->connection != connection) {
    return fail(Errc::bad_request, "no attachment " + std::to_string(id) + " on this connection");
  }
  return id;
}

std::vector<std::pair<std::uint64_t, const Attachment*>> Attachments::of_actor(
    const std::string& actor) const {
  std::vector<std::pair<std::uint64_t, const Attachment*>> out;
  for (const auto& [id, a] : by_id_) {
    if (a.actor == actor) out.emplace_back(id, &a);
  }
  return out;
}

std::optional<std::uint64_t> Attachments::owner_of(const std::string& actor) const {
  const auto c = order_.find(actor);
  if (c == order_.end()) return std::nullopt;
  return c->second.back();
}

std::optional<WindowSize> Attachments::owner_size(const std::string& actor) const {
  const auto owner = owner_of(actor);
  if (!owner) return std::nullopt;
  return by_id_.at(*owner).size;
}

std::optional<std::uint64_t> Attachments::take_control(std::uint64_t id) {
  const Attachment& a = by_id_.at(id);
  const std::optional<std::uint64_t> previous = owner_of(a.actor);
  auto& order = order_[a.actor];
  std::erase(order, id);
  order.push_back(id);
  return previous == id ? std::nullopt : previous;
}

void Attachments::set_size(std::uint64_t id, WindowSize size) {
  if (const auto a = by_id_.find(id); a != by_id_.end()) a->second.size = size;
}

Result<void> Attachments::check_resize(const std::string& actor,
                                       std::optional<std::uint64_t> attachment) const {
  const auto owner = owner_of(actor);
  if (!attachment) {
    if (!owner) return {};
    return fail(Errc::stale_controller,
                "actor '" + actor + "' has a controller: resize through its attachment");
  }
  const Attachment* a = find(*attachment);
  if (!a || a->actor != actor) {
    return fail(Errc::stale_controller, "attachment " + std::to_string(*attachment) +
                                            " is not attached to '" + actor + "'");
  }
  if (!a->controller) return fail(Errc::bad_request, "viewers never resize");
  if (owner != *attachment) {
    return fail(Errc::stale_controller, "attachment " + std::to_string(*attachment) +
                                            " was replaced as the controller of '" + actor + "'");
  }
  return {};
}

std::optional<Attachments::Ended> Attachments::end(std::uint64_t id) {
  const auto a = by_id_.find(id);
  if (a == by_id_.end()) return std::nullopt;
  Ended ended{a->second.actor, std::nullopt};
  by_id_.erase(a);
  const auto c = order_.find(ended.actor);
  if (c == order_.end()) return ended;
  const bool was_owner = c->second.back() == id;
  std::erase(c->second, id);
  if (c->second.empty()) {
    order_.erase(c);  // no controller left: the actor keeps its size
  } else if (was_owner) {
    ended.new_owner = c->second.back();  // the most recent remaining controller
  }
  return ended;
}

std::vector<std::uint64_t> Attachments::of_connection(ConnectionId connection) const {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, a] : by_id_) {
    if (a.connection == connection) ids.push_back(id);
  }
  return ids;
}

std::vector<ConnectionId> Attachments::connections_of(const std::string& actor) const {
  std::vector<ConnectionId> connections;
  for (const auto& [id, a] : by_id_) {
    if (a.actor == actor) connections.push_back(a.connection);
  }
  std::sort(connections.begin(), connections.end());
  connections.erase(std::unique(connections.begin(), connections.end()), connections.end());
  return connections;
}

void Attachments::drop_actor(const std::string& actor) {
  order_.erase(actor);
  std::erase_if(by_id_, [&](const auto& a) { return a.second.actor == actor; });
}

}  // namespace backscroll::engine
