// What the bridge's tests (and its benchmark) drive: a backscroll-bridge process next to a test
// engine, and a blocking WebSocket client of it (Boost.Beast) whose reads time out, so a silent
// bridge fails a test instead of hanging it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <nlohmann/json.hpp>

#include "shm/places.hpp"

namespace backscroll::testing {

// backscroll-bridge --port 0 for the engine at `places` (its token file in the state dir).
class BridgeProcess {
 public:
  explicit BridgeProcess(const Places& places, std::vector<std::string> extra_args = {});
  ~BridgeProcess();
  BridgeProcess(const BridgeProcess&) = delete;
  BridgeProcess& operator=(const BridgeProcess&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  const std::string& token() const noexcept { return token_; }
  pid_t pid() const noexcept { return pid_; }
  // SIGTERM, then the exit status (expected 0).
  int stop();

  struct HttpAnswer {
    int status = 0;
    std::string body;
  };
  // One HTTP/1.1 request; `headers` as "Name: value" lines (a Host or Connection header given
  // replaces the default one).
  HttpAnswer http(const std::string& method, const std::string& target,
                  const std::vector<std::string>& headers = {}) const;
  // A fresh ticket (POST /api/ticket with the token).
  std::string ticket() const;

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  std::string token_;
  std::string log_path_;
};

// One message from the bridge: a JSON text frame or a binary output frame.
struct WsMessage {
  bool text = false;
  std::string data;
  nlohmann::json json() const { return nlohmann::json::parse(data); }
  std::string type() const { return text ? json().value("type", "") : std::string{}; }
};

// Reads run asynchronously all the time on the client's own io_context (one read and one write
// may be outstanding on a Beast stream), so waiting for a message can time out without
// cancelling anything: the stream stays usable after a timeout.
class WsClient {
 public:
  // Opens ws://127.0.0.1:PORT/ws?QUERY with an optional Origin header. Throws when the
  // handshake fails (BridgeProcess::http() shows a refused handshake's HTTP answer).
  WsClient(std::uint16_t port, const std::string& query, const std::string& origin = {});
  ~WsClient();

  // The next message; nullopt once the bridge closed the socket (see close_code()). Throws when
  // none comes within `timeout`.
  std::optional<WsMessage> next(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Like next(), but nullopt on a timeout too (then closed() is false).
  std::optional<WsMessage> poll(std::chrono::milliseconds timeout);
  // Messages until one of type `type` (returned, the ones before appended to `before`).
  WsMessage until(const std::string& type, std::vector<WsMessage>* before = nullptr,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Reads (and drops) messages until the bridge closes the socket; the close code.
  std::uint16_t wait_close() {
    while (next()) {
    }
    return close_code_;
  }
  void send(const nlohmann::json& message) { send_text(message.dump()); }
  void send_text(const std::string& text);
  void close();
  // The close frame's code once the bridge closed; 0 before (or for a dropped connection).
  std::uint16_t close_code() const noexcept { return close_code_; }
  std::string close_reason() const { return close_reason_; }
  bool closed() const noexcept { return closed_; }

 private:
  void read_more();
  // Runs the io_context until `done()` or the deadline; false on the deadline.
  template <class Done>
  bool run_until(Done done, std::chrono::steady_clock::time_point deadline);

  boost::asio::io_context io_;
  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  boost::beast::flat_buffer buffer_;
  std::deque<WsMessage> received_;
  bool closed_ = false;
  std::uint16_t close_code_ = 0;
  std::string close_reason_;
};

// Everything a fresh attach sends, read up to and including `replayed`: the snapshot message,
// the catch-up bytes (the snapshot's, then the ring's), and the cursor `replayed` names.
struct CatchUp {
  nlohmann::json hello;
  nlohmann::json start;  // `snapshot` or `resume`
  std::string bytes;
  std::uint64_t replayed = 0;
};
CatchUp read_catch_up(WsClient& client);

}  // namespace backscroll::testing
