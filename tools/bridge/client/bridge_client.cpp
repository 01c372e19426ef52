#include "tools/bridge/client/bridge_client.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace backscroll::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error(message); }

void set_receive_timeout(tcp::socket& socket, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

}  // namespace

BridgeProcess::BridgeProcess(const Places& places, std::vector<std::string> extra_args) {
  char tmpl[] = "/tmp/backscroll-bridge-test-XXXXXX";
  const int log_fd = ::mkstemp(tmpl);
  log_path_ = tmpl;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) fail("pipe");
  const std::string bin = std::string(BACKSCROLL_BIN_DIR) + "/backscroll-bridge";
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setenv("BACKSCROLL_RUNTIME_DIR", places.runtime_dir.c_str(), 1);
    ::setenv("BACKSCROLL_HOME", places.state_dir.c_str(), 1);
    ::dup2(out[1], 1);
    ::dup2(log_fd, 2);
    std::vector<std::string> args{bin, "--port", "0"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(log_fd);
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(out[0]);  // the rest of stdout is not needed (a write to it is harmless: SIGPIPE off)
  const auto colon = line.rfind(':');
  if (!line.starts_with("listening on ") || colon == std::string::npos) {
    std::ifstream log(log_path_);
    fail("backscroll-bridge did not start: '" + line + "' " +
         std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>()));
  }
  port_ = static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
  std::ifstream token(places.state_dir / "bridge.token");
  std::getline(token, token_);
}

BridgeProcess::~BridgeProcess() {
  if (pid_ > 0) stop();
  ::unlink(log_path_.c_str());
}

int BridgeProcess::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 3000; ++i) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

BridgeProcess::HttpAnswer BridgeProcess::http(const std::string& method, const std::string& target,
                                              const std::vector<std::string>& headers) const {
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  set_receive_timeout(socket, std::chrono::seconds(30));
  const auto has = [&](std::string_view name) {
    for (const auto& h : headers)
      if (h.starts_with(name)) return true;
    return false;
  };
  std::string request = method + " " + target + " HTTP/1.1\r\nContent-Length: 0\r\n";
  if (!has("Host:")) request += "Host: 127.0.0.1:" + std::to_string(port_) + "\r\n";
  if (!has("Connection:")) request += "Connection: close\r\n";
  for (const auto& h : headers) request += h + "\r\n";
  request += "\r\n";
  asio::write(socket, asio::buffer(request));
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  return {static_cast<int>(response.result_int()), response.body()};
}

std::string BridgeProcess::ticket() const {
  const auto answer = http("POST", "/api/ticket", {"Authorization: Bearer " + token_});
  if (answer.status != 200)
    fail("POST /api/ticket: " + std::to_string(answer.status) + " " + answer.body);
  return nlohmann::json::parse(answer.body).at("ticket").get<std::string>();
}

WsClient::WsClient(std::uint16_t port, const std::string& query, const std::string& origin)
    : ws_(io_) {
  ws_.next_layer().socket().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  ws_.set_option(websocket::stream_base::decorator([origin](websocket::request_type& r) {
    if (!origin.empty()) r.set(http::field::origin, origin);
  }));
  ws_.read_message_max(64 << 20);
  ws_.handshake("127.0.0.1:" + std::to_string(port), "/ws?" + query);
  read_more();
}

WsClient::~WsClient() {
  beast::error_code ignored;
  ws_.next_layer().socket().close(ignored);
  io_.run_for(std::chrono::seconds(1));  // lets the aborted read finish
}

void WsClient::read_more() {
  ws_.async_read(buffer_, [this](beast::error_code ec, std::size_t) {
    if (ec) {
      closed_ = true;
      if (ec == websocket::error::closed) {
        close_code_ = ws_.reason().code;
        close_reason_ = std::string(ws_.reason().reason.data(), ws_.reason().reason.size());
      }
      return;
    }
    received_.push_back(WsMessage{ws_.got_text(), beast::buffers_to_string(buffer_.data())});
    buffer_.consume(buffer_.size());
    read_more();
  });
}

template <class Done>
bool WsClient::run_until(Done done, std::chrono::steady_clock::time_point deadline) {
  while (!done()) {
    if (io_.stopped()) io_.restart();
    if (io_.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline)
      return done();
  }
  return true;
}

std::optional<WsMessage> WsClient::poll(std::chrono::milliseconds timeout) {
  run_until([this] { return !received_.empty() || closed_; },
            std::chrono::steady_clock::now() + timeout);
  if (received_.empty()) return std::nullopt;
  WsMessage m = std::move(received_.front());
  received_.pop_front();
  return m;
}

std::optional<WsMessage> WsClient::next(std::chrono::milliseconds timeout) {
  auto m = poll(timeout);
  if (!m && !closed_)
    fail("no message from the bridge within " + std::to_string(timeout.count()) + " ms");
  return m;
}

WsMessage WsClient::until(const std::string& type, std::vector<WsMessage>* before,
                          std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      fail("no '" + type + "' message within " + std::to_string(timeout.count()) + " ms");
    auto m = next(left);
    if (!m)
      fail("the bridge closed the socket (code " + std::to_string(close_code_) + ", " +
           close_reason_ + ") before a '" + type + "' message");
    if (m->text && m->type() == type) return *m;
    if (before) before->push_back(std::move(*m));
  }
}

void WsClient::send_text(const std::string& message) {
  const auto text = std::make_shared<std::string>(message);
  bool done = false;
  beast::error_code result;
  ws_.text(true);
  ws_.async_write(asio::buffer(*text), [&, text](beast::error_code ec, std::size_t) {
    result = ec;
    done = true;
  });
  if (!run_until([&] { return done; },
                 std::chrono::steady_clock::now() + std::chrono::seconds(30))) {
    fail("a write to the bridge did not finish");
  }
  if (result) fail("write to the bridge: " + result.message());
}

void WsClient::close() {
  bool done = false;
  ws_.async_close(websocket::close_code::normal, [&](beast::error_code) { done = true; });
  run_until([&] { return done; }, std::chrono::steady_clock::now() + std::chrono::seconds(5));
  closed_ = true;
}

CatchUp read_catch_up(WsClient& client) {
  CatchUp out;
  std::vector<WsMessage> before;
  out.hello = client.until("hello").json();
  for (;;) {
    auto m = client.next();
    if (!m) fail("closed during the catch-up");
    if (!m->text) {
      out.bytes += m->data;
      continue;
    }
    const auto j = m->json();
    const std::string type = j.value("type", "");
    if (type == "snapshot" || type == "resume") {
      out.start = j;
    } else if (type == "replayed") {
      out.replayed = j.at("cursor").get<std::uint64_t>();
      return out;
    } else if (type == "error") {
      fail("error during the catch-up: " + m->data);
    }
  }
}

}  // namespace backscroll::testing
