// EngineLink: one connection to the engine's control socket (docs/protocol.md), driven by the
// bridge's io_context: requests go out as they are made, each answer goes to the callback of
// its request (matched by id), event frames (after `subscribe`) to the event handler. Never
// blocks the bridge's thread. When the engine closes the connection every waiting callback gets
// engine_unavailable, then the closed handler runs once.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include "shm/control_frame.hpp"
#include "shm/error.hpp"
#include "shm/places.hpp"

namespace backscroll::bridge {

class EngineLink : public std::enable_shared_from_this<EngineLink> {
 public:
  using Reply = std::function<void(Result<control::Frame>)>;
  using EventHandler = std::function<void(const control::Json& event)>;
  using ClosedHandler = std::function<void()>;

  // Connects (a blocking connect to a local socket: immediate or refused).
  static Result<std::shared_ptr<EngineLink>> connect(boost::asio::io_context& io,
                                                     const Places& places);

  // Sends {op, id, ...fields} (+ payload); `reply` gets the answer, an {ok:false} one as its Error.
  void call(std::string_view op, control::Json fields, const std::string& payload, Reply reply);
  void call(std::string_view op, control::Json fields, Reply reply) {
    call(op, std::move(fields), {}, std::move(reply));
  }
  void on_event(EventHandler handler) { on_event_ = std::move(handler); }
  void on_closed(ClosedHandler handler) { on_closed_ = std::move(handler); }
  bool open() const noexcept { return open_; }
  void close();

 private:
  explicit EngineLink(boost::asio::local::stream_protocol::socket socket);
  void read_more();
  void write_more();
  void fail_all(const Error& error);

  boost::asio::local::stream_protocol::socket socket_;
  control::FrameDecoder decoder_;
  std::array<char, 64 * 1024> read_buffer_{};
  std::deque<std::string> outgoing_;  // encoded frames; the front one is being written
  std::map<std::uint64_t, Reply> waiting_;
  std::uint64_t next_id_ = 1;
  bool open_ = true;
  EventHandler on_event_;
  ClosedHandler on_closed_;
};

}  // namespace backscroll::bridge
