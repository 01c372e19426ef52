#include "engine/actor.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/log.hpp"
#include "engine/wall_clock.hpp"
#include "shm/random_hex.hpp"
#include "shm/ring_reader.hpp"

namespace backscroll::engine {

// The fds and timers of the running session. Destroyed at seal.
struct Actor::Live {
  PtyProcess process;
  bool exited = false;          // the pidfd fired and the status was collected
  bool output_done = false;     // EOF/EIO, confirmed: no slave fd remains open
  bool hangup_seen = false;     // a read answered EOF/EIO; the confirming read is due
  bool drain_over = false;      // the drain window passed after exit
  bool held_in_window = false;  // the consumer gate held reads back during this drain window
  bool stop_requested = false;
  std::chrono::steady_clock::time_point kill_at{};  // when the grace timer fires
  bool cancel_sent = false;  // in-flight reads/writes were asked to stop (sealing)
  TimerQueue::Id grace_timer = 0;
  TimerQueue::Id drain_timer = 0;
  TimerQueue::Id input_timer = 0;
  TimerQueue::Id hangup_timer = 0;  // the confirming read after a first EOF/EIO

  bool sealing() const noexcept { return exited && (output_done || drain_over); }
  // Between a first EOF/EIO and the read that confirms it, input waits: its echo must not pass
  // for output the program wrote before the hang-up.
  bool confirming_hangup() const noexcept { return hangup_seen && !output_done; }
};

namespace {

std::uint64_t random_epoch() {
  std::uint64_t epoch = 0;
  while (epoch == 0) random_bytes(std::as_writable_bytes(std::span(&epoch, 1)));
  return epoch;
}

// Linux can answer EIO on a PTY master while the slave's last bytes are still on their way to
// the line discipline: a CI run here lost the last 1,728 of 3,000,000 bytes a program wrote
// before it exited, and libuv found the same (a read after the hang-up still returned data).
// So an EOF/EIO ends the output only when a read this much later answers it again.
constexpr auto kHangupConfirmDelay = std::chrono::milliseconds(5);

ActorSettings with_read_chunk_within(ActorSettings settings, std::uint64_t capacity) {
  settings.read_chunk = std::min<std::size_t>(settings.read_chunk, capacity / 4);
  return settings;
}

}  // namespace

Result<std::unique_ptr<Actor>> Actor::create(ActorHost& host, std::string name,
                                             const ActorSettings& settings, int consumer_notify_fd,
                                             const ActorPast* past) {
  if (!is_valid_actor_name(name)) {
    return fail(Errc::bad_actor_name,
                "'" + name + "' is not an actor name ([A-Za-z0-9][A-Za-z0-9._-]{0,63})");
  }
  const std::uint64_t epoch = past ? past->epoch : random_epoch();
  shm::RingIdentity identity{name, epoch, shm::ring_capacity_for(settings.ring_bytes),
                             past ? past->start : min(settings.first_cursor, kCursorEnd)};
  auto ring = shm::RingWriter::create(identity);
  if (!ring) return tl::unexpected(ring.error());
  auto actor = std::unique_ptr<Actor>(
      new Actor(host, std::move(name), std::move(*ring), epoch, settings, consumer_notify_fd));
  if (past) {
    actor->created_ms_ = past->created_ms;
    actor->spec_ = past->spec;
    const std::size_t keep = std::min(past->sessions.size(), kSessionHistory);
    actor->sessions_.assign(past->sessions.end() - static_cast<std::ptrdiff_t>(keep),
                            past->sessions.end());
    for (const auto& session : actor->sessions_) actor->ring_.publish_session(session);
    actor->publish_meta();
  }
  return actor;
}

Actor::Actor(ActorHost& host, std::string name, shm::RingWriter ring, std::uint64_t epoch,
             const ActorSettings& settings, int consumer_notify_fd)
    : host_(host),
      name_(std::move(name)),
      ring_(std::move(ring)),
      epoch_(epoch),
      created_ms_(wall_clock_ms()),
      settings_(with_read_chunk_within(settings, ring_.capacity())),
      // A read never exceeds read_chunk (at most a quarter of the capacity), so a consumer held
      // at the high-water mark plus one read stays within the capacity: it is never lapped.
      gate_(ring_.capacity() - 2 * settings_.read_chunk, ring_.capacity() / 4, consumer_notify_fd),
      input_(settings.input_capacity) {
  publish_meta();
}

Actor::~Actor() = default;

bool Actor::busy() const noexcept {
  return reading_ || read_polling_ || writing_ || write_polling_ || exit_polling_;
}

std::optional<shm::SessionRecord> Actor::current_session() const {
  if (sessions_.empty()) return std::nullopt;
  return sessions_.back();
}

void Actor::publish_meta() noexcept {
  shm::ActorMeta meta;
  meta.state = state_;
  meta.cols = spec_.size.cols;
  meta.rows = spec_.size.rows;
  meta.session = sessions_.empty() ? 0 : sessions_.back().id;
  meta.pid = live_ ? live_->process.pid : 0;
  meta.closed = closed_ ? 1 : 0;
  ring_.publish_meta(meta);
}

void Actor::publish_session() noexcept { ring_.publish_session(session_record()); }

Result<shm::SessionRecord> Actor::start(SpawnSpec spec) {
  if (live_ || busy()) return fail(Errc::bad_request, "actor '" + name_ + "' is already running");
  spec.session_token = new_session_token();
  if (CgroupTree* tree = host_.cgroups()) {
    std::erase_if(left_cgroups_, [](const auto& c) { return !c->populated(); });
    if (cgroup_ && cgroup_->populated()) left_cgroups_.push_back(std::move(cgroup_));
    cgroup_.reset();
    auto made = tree->create(name_);
    if (made) cgroup_ = std::move(*made);
    else log(LogLevel::warn, "actor {}: no cgroup of its own: {}", name_, made.error().message);
  }
  auto process = spawn_on_pty(spec, cgroup_ ? cgroup_->dir_fd() : -1);
  if (!process) return tl::unexpected(process.error());
  session_token_ = spec.session_token;
  input_wait_ = {};
  spec_ = std::move(spec);
  spec_.session_token.clear();  // a restart draws a new one
  live_ = std::make_unique<Live>();
  live_->process = *process;

  shm::SessionRecord record;
  record.id = sessions_.empty() ? 1 : sessions_.back().id + 1;
  record.start = value(ring_.committed());  // cursors continue across sessions
  record.pid = process->pid;
  if (sessions_.size() == kSessionHistory) sessions_.erase(sessions_.begin());
  sessions_.push_back(record);
  lease_session_ = record.id;
  lease_limit_ = ring_.committed();  // nothing until the session's own lease is granted
  state_ = shm::ActorState::running;
  publish_session();
  publish_meta();

  exit_polling_ = true;
  host_.loop().poll(live_->process.pidfd, POLLIN, &exit_op_);
  submit_read();
  log(LogLevel::info, "actor {}: session {} started, pid {}, cursor {}", name_, record.id,
      record.pid, record.start);
  return record;
}

void Actor::note_working_directory() {
  if (!live_) return;
  if (auto cwd = working_directory_of(live_->process.master_fd, live_->process.pid)) {
    working_directory_ = std::move(*cwd);
  }
}

bool Actor::lease_used_up() const noexcept {
  return live_ && settings_.leased_cursors && lease_limit_ <= ring_.committed();
}

bool Actor::reads_held() const noexcept {
  return gate_.paused() || lease_used_up() || output_held_;
}

void Actor::hold_output(bool held) noexcept {
  output_held_ = held;
  if (!held) {
    resume_if_possible();
  } else if (reading_) {
    host_.loop().cancel(&read_op_);  // on_read commits what it got, then finds the hold
  }
}

void Actor::submit_read() noexcept {
  if (!live_ || reading_ || read_polling_ || live_->output_done || live_->drain_over ||
      live_->hangup_timer != 0) {
    return;
  }
  if (ring_.committed() == kCursorEnd) {
    // The program's further output stays in the PTY; the session seals once it exits.
    log(LogLevel::error, "actor {}: the cursor space is used up; output stops here", name_);
    live_->output_done = true;
    return;
  }
  if (gate_.hold(ring_.committed()) || lease_used_up() || output_held_) {
    live_->held_in_window = true;
    return;
  }
  std::size_t room = settings_.read_chunk;
  if (settings_.leased_cursors)
    room = std::min<std::uint64_t>(room, lease_limit_ - ring_.committed());
  const std::span<std::byte> space = ring_.reserve(room);
  reading_ = true;
  host_.loop().read(live_->process.master_fd, space, &read_op_);
}

void Actor::on_read(int result) noexcept {
  reading_ = false;
  // A clear during the read left the cleared bytes under it for its end (RingWriter::clear).
  if (result <= 0) ring_.read_over();
  if (result > 0) {
    ring_.commit(static_cast<std::size_t>(result));
    host_.on_committed(*this);
    if (live_ && live_->hangup_seen) {
      live_->hangup_seen = false;
      log(LogLevel::info, "actor {}: {} bytes arrived after the PTY reported a hang-up", name_,
          result);
      pump_input();
    }
  } else if (result == -EAGAIN || result == -EINTR) {
    // Not ready after all: wait for readability, then read again. EAGAIN also means a slave fd
    // is open again (the master answers EIO first while none is): no hang-up to confirm.
    if (live_ && result == -EAGAIN && live_->confirming_hangup()) {
      live_->hangup_seen = false;
      pump_input();
    }
    if (live_ && !live_->drain_over) {
      read_polling_ = true;
      host_.loop().poll(live_->process.master_fd, POLLIN, &read_ready_op_);
      return;
    }
  } else if (live_) {
    // 0 or -EIO: every slave fd is closed and the output is drained, once a second read
    // says so too (kHangupConfirmDelay). -ECANCELED: the drain window ended or the output is
    // held. Anything else is unexpected, but also ends the session's output.
    if ((result == 0 || result == -EIO) && !live_->hangup_seen) {
      live_->hangup_seen = true;
      live_->hangup_timer =
          host_.timers().schedule(std::chrono::steady_clock::now() + kHangupConfirmDelay, [this] {
            live_->hangup_timer = 0;
            resume_if_possible();
          });
      if (live_->sealing()) maybe_seal();
      return;
    }
    if (result != 0 && result != -EIO && result != -ECANCELED) {
      log(LogLevel::error, "actor {}: PTY read into the ring failed: {}; output stops here", name_,
          std::strerror(-result));
    }
    if (result != -ECANCELED) live_->output_done = true;
    pump_input();  // held while the hang-up was being confirmed
  }
  if (live_ && !live_->sealing()) {
    submit_read();
  } else {
    maybe_seal();
  }
}

void Actor::on_read_ready(int) noexcept {
  read_polling_ = false;
  if (live_ && !live_->sealing()) {
    submit_read();
  } else {
    maybe_seal();
  }
}

void Actor::grant_lease(std::uint64_t session, Cursor limit) noexcept {
  if (!settings_.leased_cursors || session != lease_session_ || limit <= lease_limit_) return;
  lease_limit_ = limit;
  resume_if_possible();
}

void Actor::drop_lease() noexcept {
  if (!settings_.leased_cursors) return;
  settings_.leased_cursors = false;
  resume_if_possible();
}

void Actor::resume_if_possible() noexcept {
  if (live_ && !reading_ && !read_polling_ && !live_->sealing()) submit_read();
}

Result<std::size_t> Actor::input(std::string_view bytes, bool paste) {
  if (!live_ || live_->exited) {
    return fail(Errc::not_running, "actor '" + name_ + "' has no running program");
  }
  if (!input_.try_push(bytes, paste)) {
    return fail(Errc::too_large, std::to_string(bytes.size()) +
                                     " bytes do not fit the input queue (" +
                                     std::to_string(input_.queued_bytes()) + " of " +
                                     std::to_string(input_.capacity()) + " bytes waiting)");
  }
  pump_input();
  return input_.queued_bytes();
}

void Actor::pump_input() noexcept {
  if (!live_ || writing_ || write_polling_ || live_->sealing() || live_->confirming_hangup() ||
      input_.empty()) {
    return;
  }
  const auto now = InputQueue::Clock::now();
  const auto ready_at = input_.front_ready_at();
  if (ready_at > now) {
    if (live_->input_timer == 0) {
      live_->input_timer = host_.timers().schedule(ready_at, [this] {
        live_->input_timer = 0;
        pump_input();
      });
    }
    return;
  }
  writing_ = true;
  host_.loop().write(live_->process.master_fd, input_.front(), &write_op_);
}

void Actor::on_write(int result) noexcept {
  writing_ = false;
  if (result > 0) {
    input_.consume(static_cast<std::size_t>(result), InputQueue::Clock::now());
  } else if (result == -EAGAIN || result == -EINTR) {
    // The PTY's input buffer is full (the program is not reading): wait for room.
    if (live_ && !live_->sealing()) {
      write_polling_ = true;
      host_.loop().poll(live_->process.master_fd, POLLOUT, &write_ready_op_);
      return;
    }
  } else if (result != -ECANCELED) {
    log(LogLevel::warn, "actor {}: PTY write failed: {}; dropping {} queued input bytes", name_,
        std::strerror(-result), input_.queued_bytes());
    input_.clear();
  }
  if (live_ && live_->sealing()) {
    maybe_seal();
  } else {
    pump_input();
  }
}

void Actor::on_write_ready(int) noexcept {
  write_polling_ = false;
  if (live_ && live_->sealing()) {
    maybe_seal();
  } else {
    pump_input();
  }
}

void Actor::stop(std::chrono::milliseconds grace, int sig) {
  if (!live_) return;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  if (live_->stop_requested) {
    // A second stop (e.g. shutdown during a long stop) may only shorten the grace period.
    if (live_->grace_timer == 0 || deadline >= live_->kill_at) return;
    host_.timers().cancel(live_->grace_timer);
  } else {
    live_->stop_requested = true;
    signal_session(sig);
    if (!live_->exited) {
      state_ = shm::ActorState::stopping;
      publish_meta();
    }
  }
  live_->kill_at = deadline;
  live_->grace_timer = host_.timers().schedule(deadline, [this] {
    live_->grace_timer = 0;
    log(LogLevel::info, "actor {}: grace period over, sending SIGKILL to the session of pid {}",
        name_, live_->process.pid);
    kill_group();
  });
}

void Actor::kill_group() noexcept { signal_session(SIGKILL); }

void Actor::signal_session(int sig) noexcept {
  if (!live_) return;
  // The leader is not reaped before the seal, so the group id still names this session's group
  // (a member that cleared its environment and left the leader's tree is still in it).
  ::kill(-live_->process.pid, sig);
  try {
    if (cgroup_) cgroup_->signal(sig);
    signal_processes(session_processes(live_->process.pid, session_token_), sig);
  } catch (const std::exception& e) {  // allocation: the group was signalled at least
    log(LogLevel::warn, "actor {}: signalling the session's processes: {}", name_, e.what());
  }
}

Actor::Leftovers Actor::leftovers() const {
  Leftovers out;
  std::vector<pid_t> in_cgroup;
  const auto add = [&](const std::shared_ptr<ActorCgroup>& c) {
    if (!c || !c->populated()) return;
    out.cgroups.push_back(c);
    const std::vector<pid_t> pids = c->processes();
    in_cgroup.insert(in_cgroup.end(), pids.begin(), pids.end());
  };
  for (const auto& c : left_cgroups_) add(c);
  if (live_) return out;
  add(cgroup_);
  if (session_token_.empty()) return out;
  for (const ProcessRef& p : session_processes(0, session_token_)) {
    if (std::find(in_cgroup.begin(), in_cgroup.end(), p.pid) == in_cgroup.end())
      out.by_token.push_back(p);
  }
  return out;
}

void Actor::Leftovers::signal(int sig) const {
  for (const auto& c : cgroups) c->signal(sig);
  signal_processes(by_token, sig);
}

pid_t Actor::leader_pid() const noexcept { return live_ ? live_->process.pid : 0; }

bool Actor::refresh_foreground() {
  foreground_.checked_at = std::chrono::steady_clock::now();
  std::optional<Foreground> now;
  if (live_) now = foreground_of(live_->process.master_fd, live_->process.pid);
  if (now == foreground_.now) return false;
  foreground_.now = std::move(now);
  return true;
}

void Actor::on_exit(int) noexcept {
  exit_polling_ = false;
  if (!live_) return;
  // WNOWAIT: the leader stays a zombie until the seal, so its pid, which is also the process
  // group id, cannot be reused while we may still signal the group (stop's SIGKILL).
  siginfo_t info{};
  const int rc = ::waitid(P_PIDFD, static_cast<id_t>(live_->process.pidfd), &info,
                          WEXITED | WNOHANG | WNOWAIT);
  if (rc == 0 && info.si_pid == 0) {
    // Not exited after all (a pidfd only polls readable on exit; never lose it): wait again.
    exit_polling_ = true;
    host_.loop().poll(live_->process.pidfd, POLLIN, &exit_op_);
    return;
  }
  live_->exited = true;
  shm::SessionRecord& record = session_record();
  record.flags |= shm::kSessionExited;
  if (rc != 0) {
    // ECHILD: someone else reaped it (the engine was started with SIGCHLD ignored, which the
    // kernel then does itself). It exited; its status is lost.
    log(LogLevel::warn, "actor {}: exit status of pid {} unavailable: {}", name_,
        live_->process.pid, std::strerror(errno));
    record.exit_code = -1;
    record.term_signal = 0;
  } else if (info.si_code == CLD_EXITED) {
    record.exit_code = info.si_status;
    record.term_signal = 0;
  } else {
    record.exit_code = -1;
    record.term_signal = info.si_status;
  }
  publish_session();
  // A stop's grace timer keeps running: other members of the process group may outlive the
  // leader, and SIGKILL reaches them when it fires (or at the seal, whichever is first).
  state_ = shm::ActorState::draining;
  publish_meta();
  log(LogLevel::info, "actor {}: session {} exited ({} {})", name_, record.id,
      record.term_signal ? "signal" : "status",
      record.term_signal ? record.term_signal : record.exit_code);
  host_.on_exited(*this, record);
  // A descendant may keep the PTY open: read until EOF, but no longer than the drain window.
  live_->held_in_window = reads_held();
  live_->drain_timer = host_.timers().schedule(
      std::chrono::steady_clock::now() + settings_.drain_window, [this] { on_drain_window(); });
  maybe_seal();
}

void Actor::on_drain_window() noexcept {
  live_->drain_timer = 0;
  // The window counts only while the engine may read: while an internal consumer holds the
  // reads back, the program's last bytes wait in the PTY and must not be dropped. After a
  // hold, a whole new window follows.
  if (const bool held = reads_held(); live_->held_in_window || held) {
    live_->held_in_window = held;
    live_->drain_timer = host_.timers().schedule(
        std::chrono::steady_clock::now() + settings_.drain_window, [this] { on_drain_window(); });
    return;
  }
  live_->drain_over = true;
  maybe_seal();
}

void Actor::maybe_seal() noexcept {
  if (!live_ || !live_->sealing()) return;
  if (reading_ || read_polling_ || writing_ || write_polling_) {
    // The kernel may still write into reserved ring space: wait for those completions.
    if (!live_->cancel_sent) {
      live_->cancel_sent = true;
      if (reading_) host_.loop().cancel(&read_op_);
      if (read_polling_) host_.loop().cancel(&read_ready_op_);
      if (writing_) host_.loop().cancel(&write_op_);
      if (write_polling_) host_.loop().cancel(&write_ready_op_);
    }
    return;
  }
  // A stop means every process of the session, not just the leader: the group at once (its
  // id is only safe to use before the leader is reaped), the rest at the end of the grace
  // period (ActorHost::kill_leftovers_at, below).
  std::optional<std::chrono::steady_clock::time_point> kill_rest_at;
  if (live_->stop_requested) {
    ::kill(-live_->process.pid, SIGKILL);
    kill_rest_at = live_->kill_at;
  }
  siginfo_t reaped{};
  ::waitid(P_PIDFD, static_cast<id_t>(live_->process.pidfd), &reaped, WEXITED | WNOHANG);
  TimerQueue& timers = host_.timers();
  timers.cancel(live_->grace_timer);
  timers.cancel(live_->drain_timer);
  timers.cancel(live_->input_timer);
  timers.cancel(live_->hangup_timer);
  ::close(live_->process.master_fd);
  ::close(live_->process.pidfd);
  live_.reset();
  foreground_.now.reset();
  input_.clear();

  shm::SessionRecord& record = session_record();
  record.end = value(ring_.committed());
  record.flags |= shm::kSessionSealed;
  if (close_at_seal_) {
    closed_ = true;  // published before the sealed record is (publish_session, next)
    publish_meta();
  }
  publish_session();
  state_ = shm::ActorState::idle;
  publish_meta();
  // Readers following the session learn the end now, even if no byte arrived in this batch.
  ring_.wake_readers();
  log(LogLevel::info, "actor {}: session {} sealed at cursor {}", name_, record.id, record.end);
  if (kill_rest_at) {
    leftovers_killed_at_ = *kill_rest_at;
    host_.kill_leftovers_at(*this, *kill_rest_at);
  }
  // A copy: the host may start the next session (a restart that waited for this seal), and
  // sessions_ grows under `record` (found by ThreadSanitizer as a use after free).
  host_.on_sealed(*this, shm::SessionRecord(record));
}

bool Actor::wake_readers(std::chrono::steady_clock::time_point now) noexcept {
  const shm::RingWriter& ring = ring_;
  if (ring.woken_at() == ring.committed()) return true;
  if (now < next_wake_at() && ring.committed() - ring.woken_at() < kWakeCoalesceBytes) {
    return false;
  }
  ring_.wake_readers();
  last_wake_ = now;
  return true;
}

Result<void> Actor::resize(WindowSize size) {
  if (!live_ || live_->exited) {
    return fail(Errc::not_running, "actor '" + name_ + "' has no running program");
  }
  if (auto r = set_window_size(live_->process.master_fd, size); !r) return r;
  spec_.size = size;
  publish_meta();
  return {};
}

Cursor Actor::clear() {
  ring_.clear(reading_);
  // The cleared bytes under the pending read's reservation are zeroed once it is over: end it
  // now (a cancelled read consumed nothing; on_read submits the next one).
  if (reading_) host_.loop().cancel(&read_op_);
  ring_.wake_readers();
  return ring_.floor();
}

bool Actor::release_ring() noexcept {
  if (live_ || busy() || gate_.behind(ring_.committed()) > 0) return false;
  ring_.release_pages();
  ring_.wake_readers();
  log(LogLevel::debug, "actor {}: idle ring released at cursor {}", name_,
      value(ring_.committed()));
  return true;
}

Result<std::string> Actor::history(Cursor from, Cursor to, std::size_t max_bytes) const {
  // The io thread reads its own ring like any reader: same bounds, same errors.
  auto reader = shm::RingReader::over(reinterpret_cast<const std::byte*>(ring_.header()),
                                      shm::kHeaderBytes, ring_.data(), ring_.capacity());
  if (!reader) return tl::unexpected(reader.error());
  const Cursor end = min(to, ring_.committed());
  std::string out(end > from ? std::min<std::uint64_t>(end - from, max_bytes) : 0, '\0');
  auto copied = reader->copy(from, std::as_writable_bytes(std::span(out)));
  if (!copied) return tl::unexpected(copied.error());
  return out;
}

void Actor::mark_closing() noexcept {
  if (closed_) return;
  if (live_) {
    close_at_seal_ = true;
    return;
  }
  closed_ = true;
  publish_meta();
  ring_.wake_readers();
}

void Actor::close_ring() noexcept {
  closed_ = true;
  publish_meta();
  ring_.wake_readers();
}

}  // namespace backscroll::engine
