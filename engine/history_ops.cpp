// Where history comes from (docs/design.md, "History"): the ring from its floor on; below it, the
// completed-session cache (stopped actors' tails, in memory), then the durable transcript. Also
// what a seal leaves there: the session's tail cached and, later, the idle ring released.
// Io thread.
#include <limits>

#include "engine/engine.hpp"
#include "engine/request_fields.hpp"

namespace backscroll::engine {

using control::Json;

Result<Json> Engine::op_history(ConnectionId connection, const Json& request) {
  auto actor = find_actor(request);
  if (!actor) return tl::unexpected(actor.error());
  auto from = uint_field(request, "from");
  if (!from) return tl::unexpected(from.error());
  auto to = uint_field(request, "to", std::numeric_limits<std::uint64_t>::max());
  if (!to) return tl::unexpected(to.error());
  auto max_bytes = uint_field(request, "max_bytes", control::kMaxPayloadBytes);
  if (!max_bytes) return tl::unexpected(max_bytes.error());
  if (*to < *from) return fail(Errc::bad_request, "\"to\" is before \"from\"");
  if (const auto epoch = request.find("epoch"); epoch != request.end() && !epoch->is_null()) {
    if (!epoch->is_string()) return fail(Errc::bad_request, "\"epoch\" must be a string");
    if (*epoch != Json(hex64((*actor)->epoch()))) {
      return fail(Errc::wrong_epoch, "cursor " + std::to_string(*from) + " belongs to epoch " +
                                         epoch->get<std::string>() + "; '" + (*actor)->name() +
                                         "' is in epoch " + hex64((*actor)->epoch()));
    }
  }
  const std::uint64_t cap = std::min<std::uint64_t>(*max_bytes, control::kMaxPayloadBytes);
  // Below the ring's floor: the cache or the transcript, up to the floor (`more` says so).
  auto bytes = Cursor{*from} < (*actor)->ring().floor()
                   ? older_history(**actor, Cursor{*from}, Cursor{*to}, cap)
                   : (*actor)->history(Cursor{*from}, Cursor{*to}, cap);
  if (!bytes) return tl::unexpected(bytes.error());
  const std::uint64_t end = *from + bytes->size();
  const std::uint64_t target = std::min(*to, value((*actor)->ring().committed()));
  const Json id = request.contains("id") ? request["id"] : Json(nullptr);
  control_->reply(connection,
                  control::ok_response(id, {{"from", *from}, {"to", end}, {"more", end < target}}),
                  std::move(*bytes));
  return Json(nullptr);
}

Result<std::string> Engine::older_history(const Actor& actor, Cursor from, Cursor to,
                                          std::size_t max_bytes) {
  const Cursor floor = actor.ring().floor();
  const Cursor limit = min(to, floor);
  if (auto cached = cache_.get(actor.name(), from, limit, max_bytes)) return std::move(*cached);
  const auto cached = cache_.range(actor.name());
  Cursor oldest = floor;
  if (transcripts_.keeps(actor.name())) {
    auto bytes = transcripts_.read(actor, from, limit, max_bytes);
    if (bytes || bytes.error().code != Errc::cursor_expired || !bytes.error().cursor) return bytes;
    oldest = min(oldest, Cursor{*bytes.error().cursor});
  }
  // Not held from `from`: the next cursor above it that the cache, transcript or ring holds.
  if (cached && cached->first > from && cached->first < oldest) oldest = cached->first;
  return fail(Errc::cursor_expired, "older than the oldest retained byte", value(oldest));
}

void Engine::keep_sealed_tail(Actor& actor, const shm::SessionRecord& session) {
  const Cursor end{session.end};
  const Cursor from =
      max(actor.ring().floor(),
          end - std::min<std::uint64_t>(value(end), store::SessionCache::kPerActor));
  if (auto tail = actor.history(from, end, store::SessionCache::kPerActor); tail) {
    cache_.put(actor.name(), from, *tail);
  }
  timers_.schedule(TimerQueue::Clock::now() + settings_.release_idle_ring,
                   [this, name = actor.name()] { release_idle_ring(name); });
}

void Engine::release_idle_ring(const std::string& name) {
  const auto it = actors_.find(name);
  if (it == actors_.end() || it->second->live() || transcripts_.seal_pending(name)) return;
  if (!it->second->release_ring()) {
    // A consumer still has bytes to take from it: try again shortly.
    timers_.schedule(TimerQueue::Clock::now() + std::chrono::milliseconds(100),
                     [this, name] { release_idle_ring(name); });
  }
}

}  // namespace backscroll::engine
