// ControlThread: the control socket on a thread of its own (docs/architecture.md, "Control
// socket").
//
// It runs a ControlServer on an io_uring of its own: it accepts connections, reads and decodes
// requests, and writes replies and events. It answers two requests itself: `ping`, and a
// `snapshot` of the present screen that the SnapshotLane holds an answer for. Every other
// request goes to the io thread, in the order it came, through handle(); the io thread's replies
// and events come back through reply() and send_event(). So the answers a client needs at once
// (a quiet actor's screen, the engine being there) never wait while the io thread sleeps in a
// PTY read (the line discipline's kworker) or works through other actors' floods.
//
// Order on a connection: as if the io thread handled every request. The io thread takes one
// request of a connection at a time: the next is read only once the io thread has handled the
// previous one (answered it, or put it aside to answer later, as a stop waiting for its seal),
// and every reply it queued while handling it goes out first. A request the thread answers
// itself is answered at that same point, so it is answered when the io thread would have.
//
// Hand-over: two queues under one mutex. A side signals the other's eventfd only when the queue
// it pushed to was empty (the io thread pushes a whole batch at once, at send_queued()); the
// other side swaps the whole queue out after its eventfd read completes, so a push after that
// swap finds the queue empty and signals again: nothing is left unseen, and a burst costs one
// wake-up.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "engine/control_server.hpp"
#include "engine/snapshot_lane.hpp"
#include "engine/timer_queue.hpp"
#include "engine/uring_loop.hpp"
#include "shm/control_frame.hpp"

namespace backscroll::engine {

// `ping`'s answer, wherever it is given.
control::Json ping_answer();

class ControlThread final : private RequestHandler {
 public:
  // Takes ownership of `listen_fd` (bound, listening, non-blocking, close-on-exec). `notify_fd`:
  // the io thread's eventfd, written when requests wait for take(). `scrollback`: the history
  // lines of a snapshot whose request names none (settings.yaml; set_snapshot_scrollback).
  static Result<std::unique_ptr<ControlThread>> start(int listen_fd, int notify_fd,
                                                      SnapshotLane& lane, std::uint64_t scrollback);
  // Stops the thread, dropping unsent bytes if close_all() has not finished, and joins it.
  ~ControlThread();
  ControlThread(const ControlThread&) = delete;
  ControlThread& operator=(const ControlThread&) = delete;

  // Io thread. Hands what came since the last call to `handler`, in order.
  void handle(RequestHandler& handler);
  // What the following three queue leaves at send_queued() (once per batch of the io thread's
  // work: one wake-up of the control thread for all of it).
  void send_queued();
  // Queues the reply to one of the connection's requests (dropped if the connection is gone).
  void reply(ConnectionId connection, control::Json header, std::string payload = {});
  // Queues an event; the control thread disconnects a connection whose unsent bytes exceed
  // ControlServer::kMaxQueuedEventBytes.
  void send_event(ConnectionId connection, control::Json header);
  // Stops accepting and closes every connection once its queued bytes are sent.
  void close_all();
  // After close_all(): waits until every connection is closed, or until `deadline`.
  bool wait_closed(std::chrono::steady_clock::time_point deadline);
  // The process that connected (SO_PEERCRED when it was accepted), for a connection that has
  // sent a request and not yet closed as far as handle() has told.
  std::optional<pid_t> peer_pid(ConnectionId connection) const;
  void set_snapshot_scrollback(std::uint64_t lines) noexcept {
    scrollback_.store(lines, std::memory_order_relaxed);
  }

 private:
  struct Outbound {
    // handled: the io thread is done with the connection's request (its immediate reply, if
    // any, was queued before).
    enum class Kind : std::uint8_t { reply, event, handled, close_all };
    Kind kind = Kind::reply;
    ConnectionId connection = 0;
    control::Json header;
    std::string payload;
  };
  // What the io thread is handed: a request, or (none) the connection closed. A connection's
  // requests come in order, and its closing after them.
  struct Handed {
    ConnectionId connection = 0;
    std::optional<control::Frame> request;
    pid_t peer_pid = 0;  // who sent it
  };

  ControlThread(int notify_fd, SnapshotLane& lane, std::uint64_t scrollback,
                std::unique_ptr<UringLoop> loop, int wake_fd);
  void run() noexcept;
  void push(Outbound outbound);

  // Control thread.
  void on_request(ConnectionId connection, control::Frame request) noexcept override;
  void on_disconnect(ConnectionId connection) noexcept override;
  // One request at a time per connection at the io thread (see "Order" above); so a client
  // that pipelines requests without reading the answers makes the engine hold at most one reply
  // beyond ControlServer's unsent bound.
  bool ready(ConnectionId connection) noexcept override;
  bool answer_here(ConnectionId connection, const control::Frame& request);
  void hand_over(Handed handed);
  void on_wake(int result) noexcept;

  const int notify_fd_;  // the io thread's
  SnapshotLane& lane_;
  std::atomic<std::uint64_t> scrollback_;  // a setting: relaxed
  std::atomic<bool> stop_{false};          // release by the destructor, acquire by run()

  // Control thread only (built before it starts).
  std::unique_ptr<UringLoop> loop_;
  TimerQueue timers_;
  std::unique_ptr<ControlServer> server_;
  int wake_fd_;
  std::uint64_t wake_buffer_ = 0;
  bool closing_ = false;
  std::unordered_set<ConnectionId> at_io_;  // connections with a request at the io thread
  std::vector<Outbound> sending_;           // the batch being dispatched
  OpSlot<&ControlThread::on_wake> wake_op_{this};

  // Shared, guarded by mutex_.
  mutable std::mutex mutex_;
  std::condition_variable closed_changed_;
  std::vector<Handed> inbound_;
  std::vector<Outbound> outbound_;
  bool closed_ = false;  // the thread ended (after close_all, or stopped)

  // Io thread only.
  std::map<ConnectionId, pid_t> peers_;
  std::vector<Handed> taking_;
  std::vector<Outbound> queued_;  // this batch's, moved to outbound_ by send_queued()

  std::thread thread_;  // last: started once everything above is built
};

}  // namespace backscroll::engine
