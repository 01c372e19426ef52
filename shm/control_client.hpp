// ControlClient: a blocking client of the engine's control socket, for tools and tests.
// One request at a time; responses carry the request's id. Event frames (from `subscribe`)
// that arrive while a response is awaited are kept and returned by next_event().
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "shm/control_frame.hpp"
#include "shm/error.hpp"
#include "shm/places.hpp"

namespace backscroll::control {

class ControlClient {
 public:
  // engine_unavailable when nothing listens on the socket; permission_denied when the process
  // serving it is another user's (SO_PEERCRED).
  static Result<ControlClient> connect(const Places& places);

  ControlClient(ControlClient&& other) noexcept;
  ControlClient& operator=(ControlClient&& other) noexcept;
  ~ControlClient();

  // Sends {op, ...fields} and waits for its response. An {ok:false} answer becomes the Error.
  Result<Frame> call(std::string_view op, Json fields = Json::object(),
                     std::string_view payload = {});
  // The next event frame (a header with "event"), waiting at most `timeout`; nullopt on timeout.
  // With 0 it only takes what has already arrived (a poller's POLLIN on fd(), or events a
  // call() read past its response), without blocking.
  Result<std::optional<Frame>> next_event(std::chrono::milliseconds timeout);
  int fd() const noexcept { return fd_; }
  // The pid of the process serving the socket, as the kernel saw it at connect (SO_PEERCRED).
  pid_t peer_pid() const noexcept { return peer_pid_; }

 private:
  ControlClient(int fd, pid_t peer_pid) : fd_(fd), peer_pid_(peer_pid) {}
  // The next frame; nullopt when `timeout` passes first (never without a timeout).
  Result<std::optional<Frame>> read_frame(std::optional<std::chrono::milliseconds> timeout);

  int fd_ = -1;
  pid_t peer_pid_ = 0;
  std::uint64_t next_id_ = 1;
  FrameDecoder decoder_;
  std::deque<Frame> events_;
};

}  // namespace backscroll::control
