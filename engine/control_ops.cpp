// The control operations of docs/protocol.md: validation of each request's fields and the
// Engine calls they map to. Io thread.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/memory_budget.hpp"
#include "engine/request_fields.hpp"
#include "engine/settings_reload.hpp"
#include "engine/wall_clock.hpp"

namespace backscroll::engine {
namespace {

using control::Json;

const char* state_name(shm::ActorState state) {
  switch (state) {
    case shm::ActorState::idle: return "idle";
    case shm::ActorState::running: return "running";
    case shm::ActorState::stopping: return "stopping";
    case shm::ActorState::draining: return "draining";
  }
  return "idle";
}

// The pid of the actor's live program; null when none runs.
Json live_pid(const Actor& actor) {
  const auto current = actor.current_session();
  return actor.live() && current ? Json(current->pid) : Json(nullptr);
}

// How the current session's program ended: {exit_code, term_signal}, both null while it runs
// (or before any session); exit_code null when a signal ended it.
Json ending(const Actor& actor) {
  const auto current = actor.current_session();
  if (actor.live() || !current || (current->flags & shm::kSessionExited) == 0) {
    return {{"exit_code", nullptr}, {"term_signal", nullptr}};
  }
  if (current->term_signal > 0) {
    return {{"exit_code", nullptr}, {"term_signal", current->term_signal}};
  }
  return {{"exit_code", current->exit_code}, {"term_signal", nullptr}};
}

// The answer to a stop: the session that ended and how.
Json stopped_reply(const std::string& actor, const shm::SessionRecord& session) {
  return {{"actor", actor},
          {"session", session.id},
          {"end", session.end},
          {"exit_code", session.exit_code},
          {"term_signal", session.term_signal}};
}

}  // namespace

void Engine::on_request(ConnectionId connection, control::Frame request) noexcept {
  Json id = request.header.contains("id") ? request.header["id"] : Json(nullptr);
  if (!valid_request_id(id)) {
    control_->reply(
        connection,
        control::error_response(nullptr, Error{Errc::bad_request,
                                               "\"id\" must be a number or a string of at most " +
                                                   std::to_string(kMaxIdBytes) + " bytes",
                                               std::nullopt}));
    return;
  }
  try {
    auto result = dispatch(connection, request);
    if (!result) {
      control_->reply(connection, control::error_response(id, result.error()));
    } else if (!result->is_null()) {  // null: answered later (deferred) or already (history)
      control_->reply(connection, control::ok_response(id, std::move(*result)));
    }
  } catch (const std::exception& e) {
    log(LogLevel::error, "request failed: {}", e.what());
    control_->reply(connection,
                    control::error_response(id, Error{Errc::internal, e.what(), std::nullopt}));
  }
}

Result<control::Json> Engine::dispatch(ConnectionId connection, const control::Frame& request) {
  const Json& h = request.header;
  auto op = string_field(h, "op");
  if (!op) return tl::unexpected(op.error());
  if (*op == "ping") return ping_answer();  // here when the control thread could not
  if (*op == "spawn") return op_spawn(h);
  if (*op == "list") return op_list();
  if (*op == "status") return op_status(h);
  if (*op == "input") return op_input(connection, request);
  if (*op == "cancel_send") return op_cancel_send(h);
  if (*op == "resize") return op_resize(h);
  if (*op == "clear") return op_clear(connection, h);
  if (*op == "history") return op_history(connection, h);
  if (*op == "events") return op_events(h);
  if (*op == "snapshot") return op_snapshot(connection, h);
  if (*op == "attach") return op_attach(connection, h);
  if (*op == "detach") return op_detach(connection, h);
  if (*op == "take_control") return op_take_control(connection, h);
  if (*op == "stop") return op_lifecycle(connection, h, Deferred::Kind::stop);
  if (*op == "restart") return op_lifecycle(connection, h, Deferred::Kind::restart);
  if (*op == "delete") return op_lifecycle(connection, h, Deferred::Kind::remove);
  if (*op == "subscribe") {
    subscribers_.insert(connection);
    return Json::object();
  }
  if (*op == "shutdown") {
    begin_shutdown();
    return Json::object();
  }
  if (*op == "reload") return op_reload();
  if (*op == "reader") return op_reader(connection, h);
  return fail(Errc::unknown_op, "unknown op '" + *op + "'");
}

Result<Actor*> Engine::find_actor(const Json& request) const {
  auto name = string_field(request, "actor");
  if (!name) return tl::unexpected(name.error());
  const auto it = actors_.find(*name);
  if (it == actors_.end()) return fail(Errc::no_such_actor, "no actor named '" + *name + "'");
  return it->second.get();
}

Result<Json> Engine::op_spawn(const Json& request) {
  if (shutting_down_) return fail(Errc::shutting_down, "the engine is shutting down");
  auto name = string_field(request, "actor");
  if (!name) return tl::unexpected(name.error());
  if (actors_.count(*name)) return fail(Errc::actor_exists, "actor '" + *name + "' exists");
  SpawnSpec spec;
  // execve takes C strings: a NUL (JSON \u0000) would cut an argument or a variable short
  // without a word. Refused, naming where.
  const auto nul_in = [](const std::string& text, const std::string& where) -> Result<void> {
    if (text.find('\0') == std::string::npos) return {};
    return fail(Errc::bad_request, where + " holds a NUL byte");
  };
  const auto command = [&](const char* field) -> Result<std::vector<std::string>> {
    const auto argv = request.find(field);
    const std::string quoted = std::string("\"") + field + "\"";
    if (argv == request.end() || !argv->is_array() || argv->empty()) {
      return fail(Errc::bad_request, quoted + " must be a non-empty array of strings");
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < argv->size(); ++i) {
      const Json& a = (*argv)[i];
      if (!a.is_string()) return fail(Errc::bad_request, quoted + " must hold only strings");
      out.push_back(a.get<std::string>());
      if (auto r = nul_in(out.back(), quoted + " entry " + std::to_string(i)); !r) {
        return tl::unexpected(r.error());
      }
    }
    return out;
  };
  auto argv = command("argv");
  if (!argv) return tl::unexpected(argv.error());
  spec.argv = std::move(*argv);
  // The first session may run another program (restore's: print the saved scrollback, then
  // exec the shell); `argv` is the actor's command, what status shows and restart runs.
  std::optional<std::vector<std::string>> first_argv;
  if (const auto f = request.find("first_argv"); f != request.end() && !f->is_null()) {
    auto parsed = command("first_argv");
    if (!parsed) return tl::unexpected(parsed.error());
    first_argv = std::move(*parsed);
  }
  if (request.contains("cwd")) {
    auto cwd = string_field(request, "cwd");
    if (!cwd) return tl::unexpected(cwd.error());
    if (auto r = nul_in(*cwd, "\"cwd\""); !r) return tl::unexpected(r.error());
    spec.cwd = *cwd;
  }
  if (const auto env = request.find("env"); env != request.end()) {
    if (!env->is_object()) return fail(Errc::bad_request, "\"env\" must be an object of strings");
    for (const auto& [k, v] : env->items()) {
      if (!v.is_string() || k.empty() || k.find('=') != std::string::npos) {
        return fail(Errc::bad_request, "\"env\" must map names to strings");
      }
      if (auto r = nul_in(k + v.get<std::string>(), "\"env\" entry '" + k + "'"); !r) {
        return tl::unexpected(r.error());
      }
      spec.env.emplace_back(k, v.get<std::string>());
    }
  }
  if (const auto mode = request.find("env_mode"); mode != request.end() && !mode->is_null()) {
    if (*mode != "add" && *mode != "replace") {
      return fail(Errc::bad_request, "\"env_mode\" must be \"add\" or \"replace\"");
    }
    spec.env_replace = *mode == "replace";
  }
  // The program knows it runs under backscroll, and as which actor (as $TMUX tells tmux's).
  std::erase_if(spec.env, [](const auto& e) { return e.first == "BACKSCROLL_ACTOR"; });
  spec.env.emplace_back("BACKSCROLL_ACTOR", *name);
  auto cols = dimension(request, "cols", 80);
  if (!cols) return tl::unexpected(cols.error());
  auto rows = dimension(request, "rows", 24);
  if (!rows) return tl::unexpected(rows.error());
  spec.size = {*cols, *rows};
  Actor::Removal removal = Actor::Removal::never;
  if (const auto r = request.find("remove"); r != request.end() && !r->is_null()) {
    if (*r == "on_success") removal = Actor::Removal::on_success;
    else if (*r == "always") removal = Actor::Removal::always;
    else if (*r != "never")
      return fail(Errc::bad_request, "\"remove\" must be \"never\", \"on_success\" or \"always\"");
  }

  if (auto fits = MemoryBudget::check_budget(*name, reserved_for(spec.size), reserved_by_actors(),
                                             memory_budget_of(settings_.memory_budget));
      !fits) {
    log(LogLevel::warn, "spawn of {} refused: {}", *name, fits.error().message);
    return tl::unexpected(fits.error());
  }
  if (auto fits = MemoryBudget::check_cap(*name, settings_.actor.ring_bytes); !fits) {
    log(LogLevel::warn, "spawn of {} refused: {}", *name, fits.error().message);
    return tl::unexpected(fits.error());
  }
  auto actor = Actor::create(*this, *name, settings_.actor, notify_fd_);
  if (!actor) return tl::unexpected(actor.error());
  std::vector<std::string> actor_command = spec.argv;
  if (first_argv) spec.argv = std::move(*first_argv);
  auto session = (*actor)->start(std::move(spec));
  if (!session) {
    (*actor)->close_ring();
    return tl::unexpected(session.error());
  }
  Actor& a = **actor;
  a.set_command(std::move(actor_command));
  a.set_removal(removal);
  actors_.emplace(*name, std::move(*actor));
  recordings_.emplace(*name, recorder::Recording(settings_.track));
  mirror_add(a);
  transcripts_.add(a);
  announce_spawn(a, *session);
  due_foreground_check(a, std::chrono::steady_clock::now() + kForegroundEvery);
  return Json{{"actor", *name},
              {"session", session->id},
              {"pid", session->pid},
              {"cursor", session->start},
              {"epoch", hex64(a.epoch())}};
}

Cursor Engine::oldest_in_memory(const Actor& actor) const {
  Cursor oldest = actor.ring().floor();
  if (const auto cached = cache_.range(actor.name()); cached && cached->first < oldest) {
    oldest = cached->first;
  }
  return oldest;
}

Json Engine::status_of(const Actor& actor) const {
  const auto& ring = actor.ring();
  Json sessions = Json::array();
  const bool syncing = transcripts_.seal_pending(actor.name());
  for (const auto& s : actor.sessions()) {
    // With persistence, sealed once the writer synced it (the last session; the ring's own flag
    // says the bytes are final, this says they are durable too).
    const bool sealed =
        (s.flags & shm::kSessionSealed) != 0 && !(syncing && s.id == actor.sessions().back().id);
    sessions.push_back({{"id", s.id},
                        {"start", s.start},
                        {"end", sealed ? s.end : value(ring.committed())},
                        {"pid", s.pid},
                        {"exit_code", s.exit_code},
                        {"term_signal", s.term_signal},
                        {"sealed", sealed}});
  }
  const auto current = actor.current_session();
  const auto owner = attachments_.owner_of(actor.name());
  Json attached = Json::array();
  const std::int64_t now = wall_clock_ms();
  for (const auto& [id, a] : attachments_.of_actor(actor.name())) {
    attached.push_back({{"attachment", id},
                        {"role", a->controller ? "controller" : "viewer"},
                        {"owner", owner == id},
                        {"cols", a->controller ? Json(a->size.cols) : Json(nullptr)},
                        {"rows", a->controller ? Json(a->size.rows) : Json(nullptr)},
                        {"attached_ms", a->attached_ms},
                        {"age_ms", std::max<std::int64_t>(0, now - a->attached_ms)}});
  }
  const shm::RingAnnouncement announced = ring.announcement();
  Json argv = actor.spec().argv;
  Json status{{"name", actor.name()},
              {"state", state_name(actor.state())},
              {"pid", live_pid(actor)},
              {"session", current ? current->id : 0},
              {"epoch", hex64(actor.epoch())},
              {"floor", value(ring.floor())},
              {"oldest", value(oldest_in_memory(actor))},
              {"committed", value(ring.committed())},
              {"cols", actor.size().cols},
              {"rows", actor.size().rows},
              {"capacity", ring.capacity()},
              {"header_fd", announced.header_fd},
              {"data_fd", announced.data_fd},
              {"nonce", announced.nonce},
              {"argv", std::move(argv)},
              {"cwd", actor.spec().cwd},
              {"remove", actor.removal() == Actor::Removal::always       ? "always"
                         : actor.removal() == Actor::Removal::on_success ? "on_success"
                                                                         : "never"},
              {"foreground", actor.foreground() ? foreground_json(*actor.foreground()) : Json()},
              {"cgroup", actor.cgroup() ? Json(actor.cgroup()->path().string()) : Json()},
              {"input_queued", actor.input_queued()},
              {"pending_sends", pending_sends_status(actor.name())},
              {"memory", memory_status(actor)},
              {"paused", actor.paused()},
              {"waiting_for_lease", actor.lease_used_up()},
              {"controller", owner ? Json(*owner) : Json(nullptr)},
              {"attachments", std::move(attached)},
              {"sessions", std::move(sessions)}};
  status.update(ending(actor));
  status.update(transcripts_.status(actor));  // persist, archive_error, unarchived_bytes, ...
  status.update(readers_status(actor));       // readers, mirror_lag, transcript_lag
  // What the output says (the ring header carries the same: shm OutputStatus).
  if (const auto r = recordings_.find(actor.name()); r != recordings_.end()) {
    const recorder::OutputState& o = r->second.output;
    status["title"] = o.title;
    status["bells"] = o.bells;
    status["agent_status"] = term::to_string(o.status);
    status["agent"] = o.agent.empty() ? Json(nullptr) : Json(o.agent);
  }
  return status;
}

Result<Json> Engine::op_status(const Json& request) const {
  Json actors = Json::array();
  if (request.contains("actor")) {
    auto actor = find_actor(request);
    if (!actor) return tl::unexpected(actor.error());
    actors.push_back(status_of(**actor));
  } else {
    for (const auto& [name, actor] : actors_) actors.push_back(status_of(*actor));
  }
  Json out{{"actors", std::move(actors)}, {"memory", memory_status()}};
  if (mirror_) {
    const MirrorStats m = mirror_->stats();
    out["mirror"] = {{"fed_bytes", m.bytes},
                     {"skipped_bytes", m.skipped},
                     {"resyncs", m.resyncs},
                     {"snapshots", m.snapshots},
                     {"held_snapshots", m.held_snapshots},
                     {"quick_snapshots", lane_.answers()},
                     {"keyframes", m.keyframes}};
  }
  return out;
}

Result<Json> Engine::op_reload() {
  const std::string path = places_.settings_path().string();
  auto file = load_settings(places_.settings_path());
  if (!file) {
    log(LogLevel::warn, "reload of {} refused, nothing changed: {}", path, file.error().message);
    return tl::unexpected(file.error());
  }
  Json applied = Json::array();
  Json needs_restart = Json::array();
  for (const SettingChange& c : reload_settings(settings_, *file)) {
    (c.live ? applied : needs_restart).push_back({{"key", c.key}, {"from", c.from}, {"to", c.to}});
    log(LogLevel::info, "reload: {} {} -> {}{}", c.key, c.from, c.to,
        c.live ? "" : " (at the next engine start)");
  }
  control_->set_snapshot_scrollback(settings_.snapshot_scrollback);
  return Json{
      {"file", path}, {"applied", std::move(applied)}, {"needs_restart", std::move(needs_restart)}};
}

Result<Json> Engine::op_list() const {
  Json actors = Json::array();
  for (const auto& [name, actor] : actors_) {
    const auto current = actor->current_session();
    Json entry{
        {"name", name},
        {"state", state_name(actor->state())},
        {"session", current ? current->id : 0},
        {"pid", live_pid(*actor)},
        {"argv", actor->spec().argv},
        {"foreground", actor->foreground() ? foreground_json(*actor->foreground()) : Json()}};
    entry.update(ending(*actor));
    actors.push_back(std::move(entry));
  }
  return Json{{"actors", std::move(actors)}};
}

Result<Json> Engine::op_input(ConnectionId connection, const control::Frame& request) {
  auto actor = find_actor(request.header);
  if (!actor) return tl::unexpected(actor.error());
  bool paste = false;
  if (const auto it = request.header.find("paste"); it != request.header.end() && !it->is_null()) {
    if (!it->is_boolean()) return fail(Errc::bad_request, "\"paste\" must be a boolean");
    paste = it->get<bool>();
  }
  if (const auto w = request.header.find("when_idle"); w != request.header.end() && !w->is_null()) {
    if (!w->is_boolean()) return fail(Errc::bad_request, "\"when_idle\" must be a boolean");
    if (w->get<bool>()) return queue_send(connection, request, **actor, paste);
  }
  auto queued = (*actor)->input(request.payload, paste);
  if (!queued) return tl::unexpected(queued.error());
  watch_foreground(**actor);  // a command typed starts a program
  return Json{{"queued", *queued}};
}

Result<Json> Engine::op_resize(const Json& request) {
  auto actor = find_actor(request);
  if (!actor) return tl::unexpected(actor.error());
  auto cols = dimension(request, "cols", std::nullopt);
  if (!cols) return tl::unexpected(cols.error());
  auto rows = dimension(request, "rows", std::nullopt);
  if (!rows) return tl::unexpected(rows.error());
  std::optional<std::uint64_t> attachment;
  if (request.contains("attachment")) {
    auto id = uint_field(request, "attachment");
    if (!id) return tl::unexpected(id.error());
    attachment = *id;
  }
  if (auto allowed = attachments_.check_resize((*actor)->name(), attachment); !allowed) {
    return tl::unexpected(allowed.error());
  }
  if (auto r = resize_actor(**actor, {*cols, *rows}); !r) return tl::unexpected(r.error());
  if (const auto owner = attachments_.owner_of((*actor)->name())) {
    attachments_.set_size(*owner, {*cols, *rows});  // check_resize: it came from the owner
  }
  return Json{{"cols", *cols}, {"rows", *rows}};
}

Result<Json> Engine::op_lifecycle(ConnectionId connection, const Json& request,
                                  Deferred::Kind kind) {
  auto found = find_actor(request);
  if (!found) return tl::unexpected(found.error());
  Actor& actor = **found;
  const auto deleting = deletions_.find(actor.name());
  if (deleting != deletions_.end() && kind != Deferred::Kind::remove) {
    return fail(Errc::no_such_actor, "actor '" + actor.name() + "' is being deleted");
  }
  if (kind == Deferred::Kind::restart && shutting_down_) {
    return fail(Errc::shutting_down, "the engine is shutting down");
  }
  auto grace_ms =
      uint_field(request, "grace_ms", static_cast<std::uint64_t>(settings_.actor.grace.count()));
  if (!grace_ms) return tl::unexpected(grace_ms.error());
  if (*grace_ms > kMaxGraceMs) {
    return fail(Errc::too_large, "\"grace_ms\" exceeds " + std::to_string(kMaxGraceMs));
  }
  auto sig = stop_signal_field(request);
  if (!sig) return tl::unexpected(sig.error());
  const Json id = request.contains("id") ? request["id"] : Json(nullptr);
  auto waiting = std::count_if(deferred_.begin(), deferred_.end(), [connection](const auto& d) {
    return d.second.connection == connection;
  });
  for (const auto& [name, waiters] : deletions_) {
    waiting += std::count_if(waiters.begin(), waiters.end(), [connection](const Deferred& d) {
      return d.connection == connection;
    });
  }
  if (waiting >= static_cast<std::ptrdiff_t>(kMaxDeferredPerConnection)) {
    return fail(Errc::too_large, "this connection already waits for " +
                                     std::to_string(kMaxDeferredPerConnection) +
                                     " stop/restart/delete answers");
  }
  if (kind == Deferred::Kind::stop && deleting == deletions_.end() && !actor.live() &&
      !transcripts_.seal_pending(actor.name())) {
    // Nothing to stop: say so, with the session that ended before.
    Json reply =
        stopped_reply(actor.name(), actor.current_session().value_or(shm::SessionRecord{}));
    reply["already_stopped"] = true;
    return reply;
  }
  if (deleting != deletions_.end()) {  // answered with the deletion under way
    deleting->second.push_back(Deferred{kind, connection, id});
    return Json(nullptr);
  }
  deferred_.emplace(actor.name(), Deferred{kind, connection, id});
  if (kind == Deferred::Kind::remove) actor.mark_closing();  // its readers end as deleted
  actor.note_working_directory();  // where the user was: restore starts there
  if (actor.live()) {
    actor.stop(std::chrono::milliseconds(*grace_ms), *sig);
  } else if (transcripts_.seal_pending(actor.name())) {
    // Sealed by the io thread, not yet durable: answered with that seal.
  } else {
    // Idle already: settle now as if its last session had just been sealed.
    finish_deferred(actor, actor.current_session().value_or(shm::SessionRecord{}));
  }
  return Json(nullptr);
}

void Engine::finish_deferred(Actor& actor, const shm::SessionRecord& session) {
  const std::string name = actor.name();
  auto [first, last] = deferred_.equal_range(name);
  std::vector<Deferred> waiting;
  for (auto it = first; it != last; ++it) waiting.push_back(it->second);
  deferred_.erase(first, last);
  if (waiting.empty()) return;

  const Json sealed = stopped_reply(name, session);
  // A delete wins over a restart that raced it: the actor goes away.
  const bool remove = std::any_of(waiting.begin(), waiting.end(), [](const Deferred& d) {
    return d.kind == Deferred::Kind::remove;
  });
  std::optional<Result<shm::SessionRecord>> restarted;
  std::vector<Deferred> removers;
  for (const Deferred& d : waiting) {
    switch (d.kind) {
      case Deferred::Kind::stop:
        control_->reply(d.connection, control::ok_response(d.id, sealed));
        break;
      case Deferred::Kind::remove:
        removers.push_back(d);  // answered once the deletion snapshot is written
        break;
      case Deferred::Kind::restart:
        if (!restarted) {
          if (remove) {
            restarted = fail(Errc::no_such_actor, "actor '" + name + "' is being deleted");
          } else if (shutting_down_) {
            restarted = fail(Errc::shutting_down, "the engine is shutting down");
          } else {
            restarted = actor.start(actor.spec());
            if (*restarted) {
              const auto& s = **restarted;
              mirror_reset(actor, Cursor{s.start});  // a new session is a fresh terminal
              transcripts_.new_session(actor, s);
              announce_spawn(actor, s);
              due_foreground_check(actor, std::chrono::steady_clock::now() + kForegroundEvery);
            }
          }
        }
        if (*restarted) {
          const auto& s = **restarted;
          control_->reply(d.connection,
                          control::ok_response(d.id, {{"actor", name},
                                                      {"session", s.id},
                                                      {"pid", s.pid},
                                                      {"cursor", s.start},
                                                      {"epoch", hex64(actor.epoch())}}));
        } else {
          control_->reply(d.connection, control::error_response(d.id, restarted->error()));
        }
        break;
    }
  }
  if (remove) begin_deletion(actor, std::move(removers));
}

}  // namespace backscroll::engine
