#include "engine/control_thread.hpp"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <utility>

#include "engine/eventfd_signal.hpp"
#include "engine/log.hpp"
#include "engine/request_fields.hpp"
#include "engine/snapshot_request.hpp"

namespace backscroll::engine {

using control::Json;

Json ping_answer() { return Json{{"version", 1}, {"pid", ::getpid()}}; }

Result<std::unique_ptr<ControlThread>> ControlThread::start(int listen_fd, int notify_fd,
                                                            SnapshotLane& lane,
                                                            std::uint64_t scrollback) {
  auto loop = UringLoop::create(1024);
  if (!loop) {
    ::close(listen_fd);
    return tl::unexpected(loop.error());
  }
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    const int err = errno;
    ::close(listen_fd);
    return fail_errno("eventfd", err);
  }
  auto thread = std::unique_ptr<ControlThread>(
      new ControlThread(notify_fd, lane, scrollback, std::move(*loop), wake_fd));
  RequestHandler& handler = *thread;
  thread->server_ =
      std::make_unique<ControlServer>(*thread->loop_, thread->timers_, handler, listen_fd);
  thread->loop_->read(wake_fd, std::as_writable_bytes(std::span(&thread->wake_buffer_, 1)),
                      &thread->wake_op_);
  // Everything above happens before the thread's first instruction (std::thread's start).
  thread->thread_ = std::thread([t = thread.get()] { t->run(); });
  return thread;
}

ControlThread::ControlThread(int notify_fd, SnapshotLane& lane, std::uint64_t scrollback,
                             std::unique_ptr<UringLoop> loop, int wake_fd)
    : notify_fd_(notify_fd),
      lane_(lane),
      scrollback_(scrollback),
      loop_(std::move(loop)),
      wake_fd_(wake_fd) {}

ControlThread::~ControlThread() {
  stop_.store(true, std::memory_order_release);  // pairs with run()'s acquire
  signal_eventfd(wake_fd_);
  if (thread_.joinable()) thread_.join();
  // The loop goes first: its exit cancels the ops still in flight before the connections
  // (whose buffers they name) are freed.
  loop_.reset();
  server_.reset();
  ::close(wake_fd_);
}

void ControlThread::run() noexcept {
  ::pthread_setname_np(::pthread_self(), "bs-control");  // for top, perf and the benchmarks
  while (!stop_.load(std::memory_order_acquire)) {
    loop_->run_once(timers_.next());
    timers_.run_due(TimerQueue::Clock::now());
    if (closing_ && !server_->busy()) break;
  }
  {
    const std::lock_guard lock(mutex_);
    closed_ = true;
  }
  closed_changed_.notify_all();
}

// ---- Control thread ----

void ControlThread::on_request(ConnectionId connection, control::Frame request) noexcept {
  try {
    if (answer_here(connection, request)) return;
  } catch (const std::exception& e) {
    // A request that does not parse the way the lane expects: the io thread answers it.
    log(LogLevel::debug, "connection {}: handed over ({})", connection, e.what());
  }
  at_io_.insert(connection);
  hand_over({connection, std::move(request), server_->peer_pid(connection).value_or(0)});
}

void ControlThread::on_disconnect(ConnectionId connection) noexcept {
  at_io_.erase(connection);
  hand_over({connection, std::nullopt, 0});
}

bool ControlThread::ready(ConnectionId connection) noexcept { return !at_io_.contains(connection); }

// Called only while ready(connection): the io thread has no request of this connection.
bool ControlThread::answer_here(ConnectionId connection, const control::Frame& request) {
  const Json& h = request.header;
  const auto op = h.find("op");
  const Json id = h.contains("id") ? h["id"] : Json(nullptr);
  if (op == h.end() || !op->is_string() || !valid_request_id(id)) return false;
  if (*op == "ping") {
    server_->reply(connection, control::ok_response(id, ping_answer()));
    return true;
  }
  if (*op != "snapshot" || asks_for_past(h)) return false;
  const auto actor = h.find("actor");
  if (actor == h.end() || !actor->is_string()) return false;
  const auto asked = std::chrono::steady_clock::now();
  const auto ask = parse_snapshot_ask(h, scrollback_.load(std::memory_order_relaxed));
  if (!ask || ask->raw_reason) return false;
  const auto held = lane_.held(actor->get_ref<const std::string&>(), ask->options, Cursor{0});
  if (!held) return false;
  Json reply = snapshot_v1_fields(held->epoch, *held->taken);
  if (ask->timing) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - asked)
                        .count();
    reply["timing_us"] = {{"to_mirror", 0}, {"catch_up", 0}, {"build", 0}, {"to_answer", us}};
  }
  server_->reply(connection, control::ok_response(id, std::move(reply)),
                 held->taken->snapshot.bytes);
  return true;
}

void ControlThread::hand_over(Handed handed) {
  bool was_empty = false;
  {
    const std::lock_guard lock(mutex_);
    was_empty = inbound_.empty();
    inbound_.push_back(std::move(handed));
  }
  if (was_empty) signal_eventfd(notify_fd_);
}

void ControlThread::on_wake(int) noexcept {
  {
    const std::lock_guard lock(mutex_);
    sending_.swap(outbound_);
  }
  for (Outbound& o : sending_) {
    try {
      switch (o.kind) {
        case Outbound::Kind::reply:
          // The payload is freed once framed, not at the end of the batch (a 16 MiB history).
          server_->reply(o.connection, std::move(o.header), std::exchange(o.payload, {}));
          break;
        case Outbound::Kind::handled:
          if (at_io_.erase(o.connection) > 0) server_->resume(o.connection);
          break;
        case Outbound::Kind::event: server_->send_event(o.connection, std::move(o.header)); break;
        case Outbound::Kind::close_all:
          closing_ = true;
          server_->close_all();
          break;
      }
    } catch (const std::exception& e) {
      // Out of memory framing a reply: the client would wait for it forever; close instead.
      log(LogLevel::error, "connection {}: {}; closing it", o.connection, e.what());
      server_->abort(o.connection);
    }
  }
  sending_.clear();
  loop_->read(wake_fd_, std::as_writable_bytes(std::span(&wake_buffer_, 1)), &wake_op_);
}

// ---- Io thread ----

void ControlThread::handle(RequestHandler& handler) {
  {
    const std::lock_guard lock(mutex_);
    taking_.swap(inbound_);
  }
  for (Handed& h : taking_) {
    const ConnectionId c = h.connection;
    if (h.request) {
      peers_[c] = h.peer_pid;
      handler.on_request(c, std::move(*h.request));
      push({Outbound::Kind::handled, c, {}, {}});
    } else {
      handler.on_disconnect(c);
      peers_.erase(c);
    }
  }
  taking_.clear();
}

void ControlThread::push(Outbound outbound) { queued_.push_back(std::move(outbound)); }

void ControlThread::send_queued() {
  if (queued_.empty()) return;
  bool was_empty = false;
  {
    const std::lock_guard lock(mutex_);
    was_empty = outbound_.empty();
    if (was_empty) {
      outbound_.swap(queued_);
    } else {
      std::move(queued_.begin(), queued_.end(), std::back_inserter(outbound_));
    }
  }
  queued_.clear();
  if (was_empty) signal_eventfd(wake_fd_);
}

void ControlThread::reply(ConnectionId connection, Json header, std::string payload) {
  push({Outbound::Kind::reply, connection, std::move(header), std::move(payload)});
}

void ControlThread::send_event(ConnectionId connection, Json header) {
  push({Outbound::Kind::event, connection, std::move(header), {}});
}

void ControlThread::close_all() { push({Outbound::Kind::close_all, 0, {}, {}}); }

bool ControlThread::wait_closed(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return closed_changed_.wait_until(lock, deadline, [this] { return closed_; });
}

std::optional<pid_t> ControlThread::peer_pid(ConnectionId connection) const {
  const auto it = peers_.find(connection);
  if (it == peers_.end()) return std::nullopt;
  return it->second;
}

}  // namespace backscroll::engine
