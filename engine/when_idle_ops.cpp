// send --when-idle (docs/protocol.md `input` `when_idle`): text held in the engine until the
// actor waits for input, then written as any input; or, past its timeout, answered `timed_out`
// with nothing sent. At most kMaxPendingSends per actor; listed in status (`pending_sends`) and
// cancelled by `cancel_send`. The check runs every kSendTick while a send is pending, never
// otherwise. Io thread.
#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/request_fields.hpp"

namespace backscroll::engine {

using control::Json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint64_t kMaxTimeoutMs = 24ull * 3600 * 1000;
constexpr std::uint64_t kMaxQuietMs = 60'000;

std::int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

}  // namespace

Result<Json> Engine::queue_send(ConnectionId connection, const control::Frame& request,
                                Actor& actor, bool paste) {
  const Json& h = request.header;
  auto timeout = uint_field(h, "timeout_ms", 0);
  if (!timeout) return tl::unexpected(timeout.error());
  if (*timeout > kMaxTimeoutMs)
    return fail(Errc::too_large, "\"timeout_ms\" exceeds " + std::to_string(kMaxTimeoutMs));
  auto quiet = uint_field(h, "quiet_ms", static_cast<std::uint64_t>(kDefaultQuiet.count()));
  if (!quiet) return tl::unexpected(quiet.error());
  if (*quiet > kMaxQuietMs)
    return fail(Errc::too_large, "\"quiet_ms\" exceeds " + std::to_string(kMaxQuietMs));
  if (!actor.live())
    return fail(Errc::not_running, "actor '" + actor.name() + "' has no running program");
  std::deque<PendingSend>& queue = pending_sends_[actor.name()];
  if (queue.size() >= kMaxPendingSends) {
    return fail(Errc::too_large, "actor '" + actor.name() + "' already has " +
                                     std::to_string(kMaxPendingSends) + " sends waiting");
  }
  PendingSend send;
  send.id = next_send_id_++;
  send.bytes = request.payload;
  send.paste = paste;
  send.queued_at = Clock::now();
  send.deadline = *timeout > 0 ? send.queued_at + std::chrono::milliseconds(*timeout)
                               : Clock::time_point::max();
  send.quiet = std::chrono::milliseconds(*quiet);
  send.connection = connection;
  send.request_id = h.contains("id") ? h["id"] : Json(nullptr);
  queue.push_back(std::move(send));
  deliver_sends();       // at once if it waits already
  return Json(nullptr);  // answered when written, cancelled or timed out
}

bool Engine::waits_for_input(const Actor& actor, std::chrono::milliseconds quiet) const {
  if (!actor.live()) return false;
  if (const auto r = recordings_.find(actor.name()); r != recordings_.end()) {
    const term::AgentStatus s = r->second.output.status;
    if (s == term::AgentStatus::idle || s == term::AgentStatus::permission) return true;
  }
  if (actor.input_wait().at_prompt) return true;
  const auto& f = actor.foreground();
  return f && f->pid == actor.leader_pid() &&
         Clock::now() - actor.input_wait().last_output >= quiet;
}

void Engine::answer_send(const PendingSend& send, Result<Json> answer) {
  if (answer)
    control_->reply(send.connection, control::ok_response(send.request_id, std::move(*answer)));
  else control_->reply(send.connection, control::error_response(send.request_id, answer.error()));
}

void Engine::deliver_sends() {
  const auto now = Clock::now();
  for (auto it = pending_sends_.begin(); it != pending_sends_.end();) {
    const std::string& name = it->first;
    std::deque<PendingSend>& queue = it->second;
    const auto a = actors_.find(name);
    Actor* actor = a == actors_.end() ? nullptr : a->second.get();
    // Past their deadline, or nowhere to go: answered, nothing sent.
    for (auto s = queue.begin(); s != queue.end();) {
      if (!actor || !actor->live()) {
        answer_send(*s,
                    fail(Errc::cancelled,
                         "actor '" + name + "' has no running program any more; nothing was sent"));
      } else if (now >= s->deadline) {
        answer_send(*s, fail(Errc::timed_out,
                             "actor '" + name + "' did not wait for input within " +
                                 std::to_string(ms_since(s->queued_at)) + " ms; nothing was sent"));
      } else {
        ++s;
        continue;
      }
      s = queue.erase(s);
    }
    // One at a time: the next waits until the actor waits for input again.
    if (actor && !queue.empty() && waits_for_input(*actor, queue.front().quiet)) {
      PendingSend send = std::move(queue.front());
      queue.pop_front();
      auto queued = actor->input(send.bytes, send.paste);
      if (queued) {
        actor->input_wait() = {now, false};  // what it prints next is the answer, not a pause
        answer_send(send, Json{{"queued", *queued}, {"waited_ms", ms_since(send.queued_at)}});
      } else {
        answer_send(send, tl::unexpected(queued.error()));
      }
    }
    it = queue.empty() ? pending_sends_.erase(it) : std::next(it);
  }
  if (!pending_sends_.empty() && !send_tick_) {
    send_tick_ = true;
    timers_.schedule(now + kSendTick, [this] {
      send_tick_ = false;
      deliver_sends();
    });
  }
}

Result<Json> Engine::op_cancel_send(const Json& request) {
  auto actor = find_actor(request);
  if (!actor) return tl::unexpected(actor.error());
  auto id = uint_field(request, "send");
  if (!id) return tl::unexpected(id.error());
  const auto it = pending_sends_.find((*actor)->name());
  if (it != pending_sends_.end()) {
    auto& queue = it->second;
    for (auto s = queue.begin(); s != queue.end(); ++s) {
      if (s->id != *id) continue;
      answer_send(*s, fail(Errc::cancelled,
                           "send " + std::to_string(*id) + " was cancelled; nothing was sent"));
      queue.erase(s);
      return Json{{"cancelled", *id}};
    }
  }
  return fail(Errc::bad_request,
              "no send " + std::to_string(*id) + " waits for actor '" + (*actor)->name() + "'");
}

Json Engine::pending_sends_status(const std::string& actor) const {
  Json out = Json::array();
  const auto it = pending_sends_.find(actor);
  if (it == pending_sends_.end()) return out;
  for (const PendingSend& s : it->second) {
    Json entry{{"send", s.id}, {"bytes", s.bytes.size()}, {"waited_ms", ms_since(s.queued_at)}};
    entry["timeout_ms"] =
        s.deadline == Clock::time_point::max()
            ? Json(nullptr)
            : Json(std::chrono::duration_cast<std::chrono::milliseconds>(s.deadline - s.queued_at)
                       .count());
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace backscroll::engine
