#include "engine/engine.hpp"
#include "engine/wall_clock.hpp"

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/eventfd_signal.hpp"
#include "engine/log.hpp"

namespace backscroll::engine {
namespace {

// At shutdown, how long the io thread waits for the mirror's keyframes of the sessions' last
// screens (normally a few milliseconds: the mirror has parsed everything by the seal).
constexpr std::chrono::milliseconds kFinalKeyframeWait{500};

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const Places& places, EngineSettings settings) {
  auto dir = RuntimeDir::claim(places);
  if (!dir) return tl::unexpected(dir.error());
  // Many idle control connections and actors each hold fds: use the hard limit.
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  auto loop = UringLoop::create(1024);
  if (!loop) return tl::unexpected(loop.error());

  // SIGTERM/SIGINT (stop) and SIGHUP (reload settings.yaml, as daemons do; a closed terminal's
  // hangup therefore never kills the engine) arrive through a signalfd read by the loop;
  // SIGPIPE (a vanished client) must not kill the engine.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  // SIGCHLD: an orphan of an actor's program, reparented to the engine (the subreaper below),
  // exited and is reaped (actors' leaders are waited for through their pidfds).
  sigaddset(&mask, SIGCHLD);
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  // Descendants that leave an actor's process tree (double fork, setsid) stay the engine's, so
  // stop can find and end them (docs/architecture.md, "Process trees").
  if (!become_subreaper())
    log(LogLevel::warn, "PR_SET_CHILD_SUBREAPER refused: {}", std::strerror(errno));
  ::signal(SIGPIPE, SIG_IGN);
  // An ignored SIGCHLD (inherited from whoever started us) makes the kernel reap children
  // itself, and the exit status would be lost: take the default.
  ::signal(SIGCHLD, SIG_DFL);
  const int signal_fd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0) return fail_errno("signalfd", errno);
  const int notify_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (notify_fd < 0) {
    const int err = errno;
    ::close(signal_fd);
    return fail_errno("eventfd", err);
  }
  auto listen_fd = dir->listen();
  if (!listen_fd) {
    ::close(signal_fd);
    ::close(notify_fd);
    return tl::unexpected(listen_fd.error());
  }
  auto engine = std::unique_ptr<Engine>(new Engine(places, std::move(settings), std::move(*dir),
                                                   std::move(*loop), signal_fd, notify_fd));
  // Housekeeping that a client may observe is done before the socket is served: the control
  // thread answers ping itself, so anything after its start races the first client.
  engine->purge_deleted();
  auto control = ControlThread::start(*listen_fd, engine->notify_fd_, engine->lane_,
                                      engine->settings_.snapshot_scrollback);
  if (!control) return tl::unexpected(control.error());
  engine->control_ = std::move(*control);
  engine->restore_actors();
  return engine;
}

Engine::Engine(const Places& places, EngineSettings settings, RuntimeDir dir,
               std::unique_ptr<UringLoop> loop, int signal_fd, int notify_fd)
    : places_(places),
      settings_(std::move(settings)),
      dir_(std::move(dir)),
      loop_(std::move(loop)),
      signal_fd_(signal_fd),
      notify_fd_(notify_fd),
      transcripts_(places_.transcripts_dir(), settings_.transcript, settings_.persist, notify_fd_,
                   *this) {
  loop_->read(signal_fd_, signal_buffer_, &signal_op_);
  loop_->read(notify_fd_, std::as_writable_bytes(std::span(&notify_buffer_, 1)), &notify_op_);
  if (settings_.mirror) {
    mirror_ = std::make_unique<MirrorThread>(notify_fd_, settings_.scrollback,
                                             term::StatusRules::defaults(), settings_.keyframes);
    replay_ = std::make_unique<ReplayThread>(notify_fd_, settings_.scrollback);
  }
  settings_.actor.leased_cursors = transcripts_.enabled();
  if (settings_.cgroups) {
    auto tree = CgroupTree::open();
    if (tree) {
      cgroups_ = std::move(*tree);
      log(LogLevel::info, "each actor runs in a cgroup of its own, under {}",
          cgroups_->path().string());
    } else {
      log(LogLevel::info,
          "actors run without cgroups ({}): their processes are found by "
          "session token and as the engine's descendants",
          tree.error().message);
    }
  }
}

Engine::~Engine() {
  // Join the threads, which write notify_fd_ and read the rings (and the control thread the
  // lane).
  control_.reset();
  replay_.reset();
  mirror_.reset();
  transcripts_.stop();
  // The loop goes first: closing the ring cancels whatever op is still in flight (an actor that
  // never sealed before the shutdown deadline), before the buffers those ops name are freed.
  loop_.reset();
  for (auto& [name, actor] : actors_) actor->close_ring();
  actors_.clear();
  graveyard_.clear();
  cgroups_.reset();  // ends what is left in the actors' cgroups, removes them
  ::close(signal_fd_);
  ::close(notify_fd_);
}

void Engine::request_shutdown() noexcept {
  shutdown_requested_.store(true, std::memory_order_release);  // pairs with on_notify's acquire
  signal_eventfd(notify_fd_);
}

std::shared_ptr<InternalConsumer> Engine::attach_consumer(const std::string& actor) {
  const auto it = actors_.find(actor);
  return it == actors_.end() ? nullptr : it->second->attach_consumer();
}

void Engine::on_signal(int result) noexcept {
  if (result > 0) {
    signalfd_siginfo info{};
    std::memcpy(&info, signal_buffer_.data(), std::min(sizeof info, signal_buffer_.size()));
    if (info.ssi_signo == SIGHUP) {
      log(LogLevel::info, "SIGHUP: reloading settings");
      (void)op_reload();  // logs what changed, or why nothing did
    } else if (info.ssi_signo == SIGCHLD) {
      reap_orphans([this](pid_t pid) { return is_leader(pid); });
    } else {
      log(LogLevel::info, "signal {}: shutting down", info.ssi_signo);
      begin_shutdown();
    }
  }
  if (!stopping_loop_) loop_->read(signal_fd_, signal_buffer_, &signal_op_);
}

void Engine::on_notify(int) noexcept {
  if (shutdown_requested_.load(std::memory_order_acquire)) begin_shutdown();
  for (auto& [name, actor] : actors_) actor->resume_if_possible();
  answer_snapshots();
  answer_replays();
  record_output_events();
  transcripts_.answer();
  // Once the last replies went (stopping_loop_), a request that came after is not handled.
  if (!stopping_loop_) {
    control_->handle(*this);
    loop_->read(notify_fd_, std::as_writable_bytes(std::span(&notify_buffer_, 1)), &notify_op_);
  }
}

void Engine::on_committed(Actor& actor) noexcept {
  workers_wake_owed_ = true;
  if (!actor.wake_pending()) {
    actor.set_wake_pending(true);
    committed_.push_back(&actor);
  }
}

void Engine::on_exited(Actor& actor, const shm::SessionRecord& session) noexcept {
  // The track's frame first, as for every event the track records: a client that waits for
  // `exit` has its `track` frame by then.
  record_event(actor.name(), recorder::EventKind::exit, actor.ring().committed(),
               {{"session", session.id},
                {"pid", session.pid},
                {"exit_code", session.exit_code},
                {"term_signal", session.term_signal}});
  broadcast({{"event", "exit"},
             {"actor", actor.name()},
             {"session", session.id},
             {"pid", session.pid},
             {"exit_code", session.exit_code},
             {"term_signal", session.term_signal}});
}

void Engine::restore_actors() {
  for (RestorableActor& restored : transcripts_.restorable()) {
    auto actor = Actor::create(*this, restored.name, settings_.actor, notify_fd_, &restored.past);
    if (!actor) {
      log(LogLevel::error, "transcript {}: not restored ({})", restored.name,
          actor.error().describe());
      continue;
    }
    Actor& a = **actor;
    actors_.emplace(restored.name, std::move(*actor));
    recordings_.emplace(restored.name, recorder::Recording(settings_.track));
    std::optional<MirrorStart::Cold> cold = restore_recording(a, restored);
    if (!cold) record_fresh_terminal(a, a.ring().committed());  // where its mirror starts
    mirror_add(a, std::move(cold));
    transcripts_.adopt(a, std::move(restored));
  }
  // Persistence goes off when the transcripts' folder cannot be made: no lease to wait for.
  settings_.actor.leased_cursors = transcripts_.enabled();
}

Actor* Engine::transcript_actor(const std::string& name) noexcept {
  const auto a = actors_.find(name);
  return a == actors_.end() ? nullptr : a->second.get();
}

void Engine::on_sealed(Actor& actor, const shm::SessionRecord& session) noexcept {
  // finish_deferred may retire the actor (delete); the seal already woke its readers.
  std::erase(committed_, &actor);
  actor.set_wake_pending(false);
  record_session_end(actor, Cursor{session.end});  // synced with the session's bytes
  // With a transcript, the session counts as sealed once the writer synced its bytes.
  if (!transcripts_.seal(actor, session)) report_sealed(actor, session, false);
}

void Engine::report_sealed(Actor& actor, const shm::SessionRecord& session, bool durable) {
  record_event(actor.name(), recorder::EventKind::seal, Cursor{session.end},
               {{"session", session.id}, {"durable", durable}});
  if (const auto m = mirror_ids_.find(actor.name()); mirror_ && m != mirror_ids_.end()) {
    mirror_->request_keyframe(m->second, Cursor{session.end});  // the session's last screen
  }
  broadcast({{"event", "sealed"},
             {"actor", actor.name()},
             {"session", session.id},
             {"end", session.end},
             {"durable", durable}});
  keep_sealed_tail(actor, session);
  finish_deferred(actor, session);
  schedule_removal(actor, session);
}

void Engine::schedule_removal(const Actor& actor, const shm::SessionRecord& session) {
  const bool success = session.exit_code == 0 && session.term_signal == 0;
  std::chrono::steady_clock::duration after;
  if (actor.removal() == Actor::Removal::always ||
      (actor.removal() == Actor::Removal::on_success && success)) {
    after = std::chrono::steady_clock::duration::zero();
  } else if (settings_.file_now.close_idle_after_s > 0) {
    after = std::chrono::seconds(settings_.file_now.close_idle_after_s);
  } else {
    return;
  }
  // On the timer queue, never inside the seal: a restart or delete that waited for the seal
  // acts first, and the actor must still be this session's, idle, when its time comes.
  timers_.schedule(std::chrono::steady_clock::now() + after,
                   [this, name = actor.name(), id = session.id] {
                     const auto it = actors_.find(name);
                     if (it == actors_.end() || shutting_down_ || deletions_.contains(name)) return;
                     Actor& a = *it->second;
                     const auto current = a.current_session();
                     if (a.live() || a.busy() || !current || current->id != id) return;
                     log(LogLevel::info, "actor {}: its program ended: deleting it", name);
                     begin_deletion(a, {});
                   });
}

void Engine::broadcast(const control::Json& event) {
  // Copied first: a send may drop a subscriber, whose end changes the set.
  const std::vector<ConnectionId> targets(subscribers_.begin(), subscribers_.end());
  for (const ConnectionId c : targets) control_->send_event(c, event);
}

void Engine::on_disconnect(ConnectionId connection) noexcept {
  subscribers_.erase(connection);
  readers_.drop_connection(connection);
  std::erase_if(pending_snapshots_,
                [connection](const auto& p) { return p.second.connection == connection; });
  // A connection's attachments end with it; an owner among them hands control back.
  for (const std::uint64_t id : attachments_.of_connection(connection)) end_attachment(id);
}

void Engine::remove_actor(const std::string& name) {
  const auto it = actors_.find(name);
  if (it == actors_.end()) return;
  std::erase(committed_, it->second.get());
  attachments_.drop_actor(name);
  if (const auto m = mirror_ids_.find(name); m != mirror_ids_.end()) {
    if (mirror_) mirror_->remove_actor(m->second);
    mirror_ids_.erase(m);
    mirror_watch_.erase(name);
    lane_.remove(name);
  }
  readers_.drop_actor(name);
  transcripts_.remove(name);
  cache_.erase(name);
  recordings_.erase(name);
  it->second->close_ring();
  graveyard_.push_back(std::move(it->second));
  actors_.erase(it);
  broadcast({{"event", "deleted"}, {"actor", name}});
  log(LogLevel::info, "actor {}: deleted", name);
}

void Engine::begin_shutdown() noexcept {
  if (shutting_down_) return;
  shutting_down_ = true;
  log(LogLevel::info, "stopping {} actors", actors_.size());
  shutdown_deadline_ = std::chrono::steady_clock::now() + settings_.actor.grace +
                       settings_.actor.drain_window + settings_.shutdown_slack;
  for (auto& [name, actor] : actors_) {
    actor->stop(settings_.actor.grace);
    end_leftovers(*actor);
  }
}

bool Engine::is_leader(pid_t pid) const noexcept {
  for (const auto& [name, actor] : actors_) {
    if (actor->leader_pid() == pid) return true;
  }
  return false;
}

void Engine::end_leftovers(const Actor& actor) {
  const auto now = std::chrono::steady_clock::now();
  // A stop sealed the last session moments ago: its signal went out and the SIGKILL of every
  // leftover is due at the end of its grace period already (a second signal could cut short
  // what the first one asked a program to do).
  if (actor.leftovers_killed_at() > now) return;
  try {
    Actor::Leftovers left = actor.leftovers();
    if (left.empty()) return;
    log(LogLevel::info,
        "actor {}: ending the processes its sessions left ({} cgroups, {} found by token)",
        actor.name(), left.cgroups.size(), left.by_token.size());
    left.signal(SIGHUP);
    schedule_leftover_kill(std::move(left), now + settings_.actor.grace);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "actor {}: looking for processes it left: {}", actor.name(), e.what());
  }
}

void Engine::kill_leftovers_at(const Actor& actor,
                               std::chrono::steady_clock::time_point at) noexcept {
  try {
    schedule_leftover_kill(actor.leftovers(), at);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "actor {}: looking for processes it left: {}", actor.name(), e.what());
  }
}

void Engine::schedule_leftover_kill(Actor::Leftovers left,
                                    std::chrono::steady_clock::time_point at) {
  if (left.empty()) return;
  ++leftover_kills_;
  timers_.schedule(at, [this, left = std::move(left)] {
    left.signal(SIGKILL);
    --leftover_kills_;
  });
}

bool Engine::shutdown_complete() const noexcept {
  if (!shutting_down_ || transcripts_.seals_pending() || !deletions_.empty() || leftover_kills_ > 0)
    return false;
  for (const auto& [name, actor] : actors_) {
    if (actor->live() || actor->busy()) return false;
  }
  return true;
}

int Engine::run() noexcept {
  log(LogLevel::info, "listening on {}", places_.socket_path().string());
  try {
    while (true) {
      std::optional<TimerQueue::Clock::time_point> deadline = timers_.next();
      for (const Actor* actor : committed_) {  // readers still owed a (coalesced) wake-up
        if (!deadline || actor->next_wake_at() < *deadline) deadline = actor->next_wake_at();
      }
      if (shutting_down_ && (!deadline || *deadline > shutdown_deadline_)) {
        deadline = shutdown_deadline_;
      }
      loop_->run_once(deadline);
      if (workers_wake_owed_) {  // once per batch of commits
        if (mirror_) mirror_->wake();
        transcripts_.wake();
      }
      workers_wake_owed_ = false;
      const auto now = TimerQueue::Clock::now();
      timers_.run_due(now);
      // At most one wake-up per actor per batch, however many reads completed in it.
      if (!committed_.empty()) {
        const std::int64_t wall = wall_clock_ms();
        const auto now_steady = std::chrono::steady_clock::now();
        for (Actor* actor : committed_) {
          note_activity(*actor, wall);
          watch_foreground(*actor);
          actor->input_wait().last_output = now_steady;
        }
      }
      std::erase_if(committed_, [now](Actor* actor) {
        const bool woken = actor->wake_readers(now);
        if (woken) actor->set_wake_pending(false);
        return woken;
      });
      std::erase_if(graveyard_, [](const auto& a) { return !a->busy(); });
      // The batch's replies and events leave once the batch is done: a client told that an
      // actor was deleted finds its ring's descriptors closed.
      control_->send_queued();
      if (shutdown_complete()) break;
      if (shutting_down_ && TimerQueue::Clock::now() >= shutdown_deadline_) {
        log(LogLevel::warn, "shutdown: some actors did not seal in time; killing their groups");
        for (auto& [name, actor] : actors_) actor->kill_group();
        break;
      }
    }
  } catch (const std::exception& e) {
    log(LogLevel::error, "io loop: {}", e.what());
    return 1;
  }
  // The sessions' last screens, asked of the mirror at each seal, reach the transcripts before
  // the writer stops (a cold restore starts from them). Bounded: a mirror may decline (a screen
  // a snapshot cannot reproduce), and a restore then replays from an older keyframe.
  const auto keyframe_deadline = std::chrono::steady_clock::now() + kFinalKeyframeWait;
  while (final_keyframes_owed() && std::chrono::steady_clock::now() < keyframe_deadline) {
    loop_->run_once(keyframe_deadline);
    control_->send_queued();
  }
  // Answer what is still waiting and let the server flush its replies.
  for (const auto& [name, d] : deferred_) {
    control_->reply(d.connection, control::error_response(
                                      d.id, Error{Errc::shutting_down,
                                                  "the engine stopped before '" + name + "' sealed",
                                                  {}}));
  }
  deferred_.clear();
  for (const auto& [name, waiters] : deletions_) {
    for (const Deferred& d : waiters) {
      control_->reply(d.connection,
                      control::error_response(
                          d.id, Error{Errc::shutting_down,
                                      "the engine stopped before '" + name + "' was deleted",
                                      {}}));
    }
  }
  deletions_.clear();
  control_->close_all();
  control_->send_queued();
  stopping_loop_ = true;
  for (auto& [name, actor] : actors_) actor->close_ring();
  signal_eventfd(notify_fd_);
  const auto flush_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (
      std::any_of(actors_.begin(), actors_.end(), [](const auto& a) { return a.second->busy(); }) &&
      std::chrono::steady_clock::now() < flush_deadline) {
    loop_->run_once(flush_deadline);
  }
  (void)control_->wait_closed(flush_deadline);
  log(LogLevel::info, "stopped");
  return 0;
}

}  // namespace backscroll::engine
