// ControlServer: the engine's Unix control socket (docs/protocol.md). Control thread
// (engine/control_thread.hpp).
// It accepts connections, checks each peer's uid with SO_PEERCRED, decodes frames and hands each
// request to the RequestHandler, and queues replies and events per connection. A malformed frame
// gets an error reply and closes only that connection. Sends are bounded: a subscriber that
// lets kMaxQueuedEventBytes pile up unread is disconnected.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "engine/timer_queue.hpp"
#include "engine/uring_loop.hpp"
#include "shm/control_frame.hpp"

namespace backscroll::engine {

using ConnectionId = std::uint64_t;

class RequestHandler {
 public:
  virtual void on_request(ConnectionId connection, control::Frame request) noexcept = 0;
  virtual void on_disconnect(ConnectionId connection) noexcept = 0;
  // False while the handler will not take another request from the connection (it still owes
  // an answer): the server stops reading it until resume().
  virtual bool ready(ConnectionId) noexcept { return true; }

 protected:
  ~RequestHandler() = default;
};

class ControlServer {
 public:
  static constexpr std::size_t kMaxQueuedEventBytes = 4u << 20;
  static constexpr std::size_t kMaxConnections = 4096;
  static constexpr std::chrono::milliseconds kAcceptRetry{100};
  static constexpr std::size_t kTrimAfterReaps = 256;  // malloc_trim after this many closes

  // Takes ownership of `listen_fd` (bound, listening, non-blocking, close-on-exec).
  ControlServer(UringLoop& loop, TimerQueue& timers, RequestHandler& handler, int listen_fd);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Queues a reply. False when the connection is gone (a deferred reply may outlive it).
  bool reply(ConnectionId connection, control::Json header, std::string_view payload = {});
  // Queues an event; disconnects a connection whose unsent bytes exceed kMaxQueuedEventBytes.
  void send_event(ConnectionId connection, control::Json header);
  // Closes the connection now, dropping what it has not sent.
  void abort(ConnectionId connection) noexcept;
  // Reads the connection's requests again, once the handler is ready() for them.
  void resume(ConnectionId connection) noexcept;
  // Stops accepting and closes every connection once its queued bytes are sent.
  void close_all() noexcept;
  // True while an op still refers to the server or a connection.
  bool busy() const noexcept;
  std::size_t connections() const noexcept { return connections_.size(); }
  // The process that connected (SO_PEERCRED when it was accepted); nullopt when gone.
  std::optional<pid_t> peer_pid(ConnectionId connection) const;

 private:
  class Connection;
  void on_accept(int result) noexcept;
  void accept_next() noexcept;
  void reap(ConnectionId id) noexcept;

  UringLoop& loop_;
  TimerQueue& timers_;
  TimerQueue::Id retry_timer_ = 0;  // accept paused after EMFILE and friends
  RequestHandler& handler_;
  int listen_fd_;
  bool accepting_ = false;
  bool closed_ = false;
  uid_t uid_;
  ConnectionId next_id_ = 1;
  std::size_t reaped_since_trim_ = 0;
  std::unordered_map<ConnectionId, std::unique_ptr<Connection>> connections_;
  OpSlot<&ControlServer::on_accept> accept_op_{this};
};

}  // namespace backscroll::engine
