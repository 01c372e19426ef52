#include "engine/control_server.hpp"

#include <malloc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "engine/log.hpp"

namespace backscroll::engine {

// One client connection. Receives into a fixed buffer; sends from `sending_` (immutable while a
// send is in flight) while new bytes gather in `pending_`.
class ControlServer::Connection {
 public:
  Connection(ControlServer& server, ConnectionId id, int fd, pid_t peer_pid)
      : server_(server), id_(id), fd_(fd), peer_pid_(peer_pid) {}
  ~Connection() { ::close(fd_); }

  pid_t peer_pid() const noexcept { return peer_pid_; }

  void start() noexcept { receive(); }
  bool busy() const noexcept { return receiving_ || sending_in_flight_; }
  bool closing() const noexcept { return closing_; }
  std::size_t unsent() const noexcept { return pending_.size() + sending_.size() - sent_; }

  void queue(std::string bytes) noexcept {
    if (closing_) return;
    if (pending_.empty()) {
      pending_ = std::move(bytes);
    } else {
      pending_ += bytes;
    }
    flush();
  }

  // Stop reading; close once everything queued is sent (or the peer is gone).
  void close_after_flush() noexcept {
    closing_ = true;
    ::shutdown(fd_, SHUT_RD);  // completes the pending recv
    if (unsent() == 0) ::shutdown(fd_, SHUT_RDWR);
  }
  // Reads requests again after a stall (see handle_frames).
  void resume() noexcept {
    if (!stalled_ || closing_) return;
    stalled_ = false;
    handle_frames();
  }

  // Close now, dropping unsent bytes.
  void abort() noexcept {
    closing_ = true;
    pending_.clear();
    ::shutdown(fd_, SHUT_RDWR);  // completes pending recv and send
  }

 private:
  void receive() noexcept {
    if (closing_) return;
    receiving_ = true;
    server_.loop_.recv(fd_, std::as_writable_bytes(std::span(buffer_)), &recv_op_);
  }

  // An idle connection keeps a small receive buffer (it waits with a recv in flight); one that
  // fills it grows it to kLargeReceive, where large requests are read in few completions.
  static constexpr std::size_t kSmallReceive = 4096;
  static constexpr std::size_t kLargeReceive = 65536;

  void on_recv(int result) noexcept {
    receiving_ = false;
    if (result <= 0 || closing_) {
      if (!closing_) {  // the peer hung up (0) or the socket failed
        closing_ = true;
        pending_.clear();
        ::shutdown(fd_, SHUT_RDWR);
      }
      server_.reap(id_);
      return;
    }
    decoder_.feed({buffer_.data(), static_cast<std::size_t>(result)});
    if (static_cast<std::size_t>(result) == buffer_.size() && buffer_.size() < kLargeReceive) {
      buffer_.resize(kLargeReceive);
    }
    handle_frames();
  }

  // Handles the frames received so far, then receives more. Stops (stalled_) while more than
  // kMaxUnsentBeforeReading reply bytes wait for this peer, or while the handler is not ready
  // for another request: a client that pipelines requests without reading the answers stalls
  // itself instead of making the engine buffer without bound. on_send and resume() resume it.
  // Invariant: no recv is in flight while stalled_.
  void handle_frames() noexcept {
    for (;;) {
      if (unsent() > kMaxUnsentBeforeReading || !server_.handler_.ready(id_)) {
        stalled_ = true;
        return;
      }
      auto frame = decoder_.next();
      if (!frame) {
        log(LogLevel::info, "connection {}: {}; closing it", id_, frame.error().describe());
        queue(control::encode_frame(control::error_response(nullptr, frame.error())));
        close_after_flush();
        server_.reap(id_);
        return;
      }
      if (!*frame) break;
      server_.handler_.on_request(id_, std::move(**frame));
      if (closing_) break;
    }
    receive();
  }

  void flush() noexcept {
    if (sending_in_flight_) return;
    if (sent_ == sending_.size()) {
      // A large reply's buffer goes back to the allocator once sent: an idle connection keeps
      // none (2,000 connections that each once fetched a 16 MiB history would otherwise hold
      // gigabytes).
      if (sending_.capacity() > kKeptSendCapacity) {
        std::string().swap(sending_);
      } else {
        sending_.clear();
      }
      sent_ = 0;
      std::swap(sending_, pending_);
    }
    if (sending_.empty()) {
      if (closing_) ::shutdown(fd_, SHUT_RDWR);
      return;
    }
    sending_in_flight_ = true;
    server_.loop_.send(fd_, std::as_bytes(std::span(sending_)).subspan(sent_), &send_op_);
  }

  void on_send(int result) noexcept {
    sending_in_flight_ = false;
    if (result < 0) {
      if (result == -EAGAIN || result == -EINTR) {
        flush();
        return;
      }
      // EPIPE / ECONNRESET: the peer is gone; drop what is left.
      closing_ = true;
      pending_.clear();
      sending_.clear();
      sent_ = 0;
      ::shutdown(fd_, SHUT_RDWR);
      server_.reap(id_);
      return;
    }
    sent_ += static_cast<std::size_t>(result);
    flush();
    if (closing_) {
      server_.reap(id_);
    } else if (unsent() <= kMaxUnsentBeforeReading) {
      resume();
    }
  }

  // One reply may add up to a full history payload (16 MiB) on top of this.
  static constexpr std::size_t kMaxUnsentBeforeReading = 4u << 20;
  static constexpr std::size_t kKeptSendCapacity = 64u << 10;

  ControlServer& server_;
  ConnectionId id_;
  int fd_;
  pid_t peer_pid_;  // SO_PEERCRED at accept
  control::FrameDecoder decoder_;
  std::vector<char> buffer_ = std::vector<char>(kSmallReceive);
  std::string sending_;
  std::size_t sent_ = 0;
  std::string pending_;
  bool receiving_ = false;
  bool sending_in_flight_ = false;
  bool closing_ = false;
  bool stalled_ = false;  // frames wait in decoder_ until the unsent replies drain
  OpSlot<&Connection::on_recv> recv_op_{this};
  OpSlot<&Connection::on_send> send_op_{this};
};

ControlServer::ControlServer(UringLoop& loop, TimerQueue& timers, RequestHandler& handler,
                             int listen_fd)
    : loop_(loop), timers_(timers), handler_(handler), listen_fd_(listen_fd), uid_(::geteuid()) {
  accept_next();
}

ControlServer::~ControlServer() {
  timers_.cancel(retry_timer_);
  connections_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void ControlServer::accept_next() noexcept {
  if (closed_ || accepting_) return;
  accepting_ = true;
  loop_.accept(listen_fd_, &accept_op_);
}

void ControlServer::on_accept(int result) noexcept {
  accepting_ = false;
  if (closed_) {
    if (result >= 0) ::close(result);
    return;
  }
  if (result < 0) {
    if (result == -EMFILE || result == -ENFILE || result == -ENOMEM || result == -ENOBUFS) {
      // The waiting peer keeps the socket readable: retrying at once would spin. Pause accepting
      // for a moment; the connection waits in the backlog meanwhile.
      log(LogLevel::warn, "accept on the control socket: {}; retrying in {} ms",
          std::strerror(-result), kAcceptRetry.count());
      retry_timer_ = timers_.schedule(std::chrono::steady_clock::now() + kAcceptRetry, [this] {
        retry_timer_ = 0;
        accept_next();
      });
      return;
    }
    if (result != -EAGAIN && result != -EINTR && result != -ECONNABORTED) {
      log(LogLevel::warn, "accept on the control socket: {}", std::strerror(-result));
    }
    accept_next();
    return;
  }
  const int fd = result;
  accept_next();
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != uid_) {
    // The socket's folder is 0700 already; this is the second lock. Say why, then close.
    log(LogLevel::warn, "refused a control connection from uid {} pid {}", peer.uid, peer.pid);
    const std::string refusal = control::encode_frame(control::error_response(
        nullptr, Error{Errc::permission_denied, "this engine serves only its own user", {}}));
    [[maybe_unused]] const ssize_t n =
        ::send(fd, refusal.data(), refusal.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
    return;
  }
  if (connections_.size() >= kMaxConnections) {
    const std::string refusal = control::encode_frame(control::error_response(
        nullptr, Error{Errc::too_large, "too many control connections", {}}));
    [[maybe_unused]] const ssize_t n =
        ::send(fd, refusal.data(), refusal.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
    return;
  }
  const ConnectionId id = next_id_++;
  auto [it, inserted] =
      connections_.emplace(id, std::make_unique<Connection>(*this, id, fd, peer.pid));
  it->second->start();
}

std::optional<pid_t> ControlServer::peer_pid(ConnectionId connection) const {
  const auto it = connections_.find(connection);
  if (it == connections_.end()) return std::nullopt;
  return it->second->peer_pid();
}

bool ControlServer::reply(ConnectionId connection, control::Json header, std::string_view payload) {
  const auto it = connections_.find(connection);
  if (it == connections_.end() || it->second->closing()) return false;
  it->second->queue(control::encode_frame(std::move(header), payload));
  return true;
}

void ControlServer::send_event(ConnectionId connection, control::Json header) {
  const auto it = connections_.find(connection);
  if (it == connections_.end() || it->second->closing()) return;
  std::string frame = control::encode_frame(std::move(header));
  if (it->second->unsent() + frame.size() > kMaxQueuedEventBytes) {
    log(LogLevel::warn, "connection {}: over {} bytes of events unread; disconnecting it",
        connection, kMaxQueuedEventBytes);
    abort(connection);
    return;
  }
  it->second->queue(std::move(frame));
}

void ControlServer::abort(ConnectionId connection) noexcept {
  const auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  it->second->abort();
  reap(connection);
}

void ControlServer::resume(ConnectionId connection) noexcept {
  if (const auto it = connections_.find(connection); it != connections_.end()) it->second->resume();
}

void ControlServer::reap(ConnectionId id) noexcept {
  const auto it = connections_.find(id);
  if (it == connections_.end() || !it->second->closing() || it->second->busy()) return;
  connections_.erase(it);
  handler_.on_disconnect(id);
  // Freed connection buffers stay in the allocator's heap until trimmed: after many closes, give
  // them back so a burst of connections does not leave the engine's footprint raised.
  if (++reaped_since_trim_ >= kTrimAfterReaps) {
    reaped_since_trim_ = 0;
    ::malloc_trim(0);
  }
}

void ControlServer::close_all() noexcept {
  closed_ = true;
  timers_.cancel(std::exchange(retry_timer_, 0));
  if (listen_fd_ >= 0) {
    ::shutdown(listen_fd_, SHUT_RDWR);  // completes the pending accept
  }
  std::vector<ConnectionId> ids;
  for (const auto& [id, c] : connections_) ids.push_back(id);
  for (const ConnectionId id : ids) {
    connections_[id]->close_after_flush();
    reap(id);
  }
}

bool ControlServer::busy() const noexcept {
  if (accepting_) return true;
  for (const auto& [id, c] : connections_) {
    if (c->busy()) return true;
  }
  return false;
}

}  // namespace backscroll::engine
