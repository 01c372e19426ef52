// HttpSession: one TCP connection to the bridge (docs/bridge.md, "HTTP"). It answers HTTP
// requests (the page's files, POST /api/ticket, GET /api/actors) and hands a WebSocket upgrade
// of /ws to a ClientSession once its Host, Origin, ticket and query pass.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace backscroll::bridge {

class Bridge;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  HttpSession(Bridge& bridge, boost::asio::ip::tcp::socket socket);
  void start() { read_next(); }

 private:
  void read_next();
  void on_request(Request request);
  // `query`: the request target's, parsed.
  void upgrade(const Request& request, const std::map<std::string, std::string>& query);
  void answer_actors(const Request& request);
  void send(Response response);

  Bridge& bridge_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
};

}  // namespace backscroll::bridge
