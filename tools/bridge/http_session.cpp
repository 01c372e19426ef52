#include "tools/bridge/http_session.hpp"

#include <fstream>
#include <sstream>

#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <nlohmann/json.hpp>

#include <set>

#include "shm/actor_name.hpp"
#include "tools/bridge/bridge.hpp"
#include "tools/bridge/client_session.hpp"
#include "tools/bridge/json_text.hpp"
#include "tools/bridge/url_query.hpp"

namespace backscroll::bridge {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using Json = nlohmann::json;

namespace {

constexpr std::chrono::seconds kRequestTimeout{30};
constexpr std::size_t kMaxRequestBody = 64 * 1024;

// Beast 1.74 speaks boost::string_view.
std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }
beast::string_view bsv(std::string_view s) { return {s.data(), s.size()}; }

std::string_view content_type(const std::filesystem::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".map" || ext == ".json") return "application/json";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  return "application/octet-stream";
}

// A path under the web root made only of plain segments (no "..", no hidden files).
bool safe_path(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  std::size_t start = 1;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    const std::string_view segment = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (segment.empty() || segment.front() == '.') return false;
    for (const char c : segment) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'))
        return false;
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return true;
}

std::optional<std::uint64_t> number(const std::map<std::string, std::string>& query,
                                    const char* name) {
  const auto it = query.find(name);
  if (it == query.end() || it->second.empty() || it->second.size() > 20) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : it->second) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

// The WebSocket URL's query as an AttachRequest; nullopt when anything is malformed.
std::optional<AttachRequest> attach_request(const std::map<std::string, std::string>& query) {
  AttachRequest r;
  const auto actor = query.find("actor");
  if (actor == query.end() || !is_valid_actor_name(actor->second)) return std::nullopt;
  r.actor = actor->second;
  if (const auto role = query.find("role"); role != query.end()) {
    if (role->second != "viewer" && role->second != "controller") return std::nullopt;
    r.controller = role->second == "controller";
  }
  if (const auto visible = query.find("visible"); visible != query.end()) {
    if (visible->second != "0" && visible->second != "1") return std::nullopt;
    r.visible = visible->second == "1";
  }
  const auto cols = number(query, "cols"), rows = number(query, "rows");
  if (query.contains("cols") || query.contains("rows")) {
    if (!cols || !rows || *cols < 1 || *cols > 1000 || *rows < 1 || *rows > 1000)
      return std::nullopt;
    r.cols = static_cast<std::uint16_t>(*cols);
    r.rows = static_cast<std::uint16_t>(*rows);
  }
  if (const auto follow = query.find("follow"); follow != query.end()) {
    if (follow->second != "0" && follow->second != "1") return std::nullopt;
    r.follow = follow->second == "1";
  }
  const auto have_cols = number(query, "have_cols"), have_rows = number(query, "have_rows");
  if (query.contains("have_cols") || query.contains("have_rows")) {
    if (!have_cols || !have_rows || *have_cols < 1 || *have_cols > 1000 || *have_rows < 1 ||
        *have_rows > 1000) {
      return std::nullopt;
    }
    r.have =
        TermSize{static_cast<std::uint16_t>(*have_cols), static_cast<std::uint16_t>(*have_rows)};
  }
  if (query.contains("cursor") || query.contains("epoch") || query.contains("session")) {
    const auto cursor = number(query, "cursor"), session = number(query, "session");
    const auto epoch = query.find("epoch");
    if (!cursor || !session || epoch == query.end() || epoch->second.size() != 16)
      return std::nullopt;
    AttachRequest::Resume resume;
    for (const char c : epoch->second) {
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return std::nullopt;
      resume.epoch = resume.epoch * 16 + static_cast<std::uint64_t>(d);
    }
    resume.session = *session;
    resume.cursor = Cursor{*cursor};
    r.resume = resume;
  }
  return r;
}

}  // namespace

HttpSession::HttpSession(Bridge& bridge, boost::asio::ip::tcp::socket socket)
    : bridge_(bridge), stream_(std::move(socket)) {}

void HttpSession::read_next() {
  parser_.emplace();
  parser_->body_limit(kMaxRequestBody);
  parser_->header_limit(16 * 1024);
  stream_.expires_after(kRequestTimeout);
  http::async_read(
      stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) {
          beast::error_code ignored;
          self->stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
          return;
        }
        self->on_request(self->parser_->release());
      });
}

void HttpSession::send(Response response) {
  response.set(http::field::server, "backscroll-bridge");
  response.set(http::field::cache_control, "no-store");
  response.set("X-Content-Type-Options", "nosniff");
  response.prepare_payload();
  auto shared = std::make_shared<Response>(std::move(response));
  http::async_write(
      stream_, *shared, [self = shared_from_this(), shared](beast::error_code ec, std::size_t) {
        if (ec || !shared->keep_alive()) {
          beast::error_code ignored;
          self->stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
          return;
        }
        self->read_next();
      });
}

void HttpSession::on_request(Request request) {
  const auto reply = [&](http::status status, std::string body,
                         std::string_view type = "application/json") {
    Response r{status, request.version()};
    r.keep_alive(request.keep_alive());
    r.set(http::field::content_type, bsv(type));
    r.body() = std::move(body);
    send(std::move(r));
  };
  const auto error = [&](http::status status, std::string code, std::string message) {
    reply(status,
          to_text(Json{{"error", {{"code", std::move(code)}, {"message", std::move(message)}}}}) +
              "\n");
  };
  const auto target = parse_target(sv(request.target()));
  // A WebSocket request refused below still spends its ticket: a ticket is good for one try,
  // and a page a foreign origin loaded must not learn a ticket it could use again.
  const auto spend_ticket = [&] {
    if (!target || target->path != "/ws") return;
    if (const auto t = target->query.find("ticket"); t != target->query.end()) {
      (void)bridge_.tickets().redeem(t->second, TicketBook::Clock::now());
    }
  };
  const std::string host(request[http::field::host]);
  if (!bridge_.host_allowed(host)) {
    spend_ticket();
    return error(http::status::forbidden, "permission_denied",
                 "Host '" + host + "' is not this bridge's (see --allow-host)");
  }
  const auto origin = request.find(http::field::origin);
  if (origin != request.end() && !bridge_.origin_allowed(sv(origin->value()), host)) {
    spend_ticket();
    return error(http::status::forbidden, "permission_denied",
                 "Origin '" + std::string(sv(origin->value())) +
                     "' may not use this bridge (see --allow-origin)");
  }
  if (!target) return error(http::status::bad_request, "bad_request", "malformed request target");

  if (target->path == "/ws") {
    if (!websocket::is_upgrade(request)) {
      return error(http::status::upgrade_required, "bad_request", "/ws is a WebSocket");
    }
    return upgrade(request, target->query);
  }
  if (target->path.starts_with("/api/")) {
    const std::string auth(request[http::field::authorization]);
    const bool authorized =
        auth.starts_with("Bearer ") && same_secret(auth.substr(7), bridge_.token());
    if (!authorized) {
      return error(http::status::unauthorized, "permission_denied",
                   "missing or wrong token (Authorization: Bearer <the token file's contents>)");
    }
    if (target->path == "/api/ticket") {
      if (request.method() != http::verb::post)
        return error(http::status::method_not_allowed, "bad_request", "POST");
      const std::string ticket = bridge_.tickets().issue(TicketBook::Clock::now());
      if (ticket.empty()) {
        return error(http::status::service_unavailable, "too_large",
                     "too many tickets waiting; try again later");
      }
      return reply(http::status::ok,
                   to_text(Json{{"ticket", ticket},
                                {"expires_in_ms",
                                 std::chrono::milliseconds(TicketBook::kLifetime).count()}}) +
                       "\n");
    }
    if (target->path == "/api/actors") {
      if (request.method() != http::verb::get)
        return error(http::status::method_not_allowed, "bad_request", "GET");
      return answer_actors(request);
    }
    return error(http::status::not_found, "bad_request", "no such API: " + target->path);
  }

  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    return error(http::status::method_not_allowed, "bad_request", "GET");
  }
  const std::string path = target->path == "/" ? "/index.html" : target->path;
  if (!safe_path(path)) return error(http::status::not_found, "bad_request", "not found");
  const std::filesystem::path file = bridge_.options().web_root / path.substr(1);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    return error(http::status::not_found, "bad_request", "not found");
  std::ifstream in(file, std::ios::binary);
  std::ostringstream body;
  body << in.rdbuf();
  Response r{http::status::ok, request.version()};
  r.keep_alive(request.keep_alive());
  r.set(http::field::content_type, bsv(content_type(file)));
  r.body() = request.method() == http::verb::head ? std::string{} : std::move(body).str();
  send(std::move(r));
}

void HttpSession::answer_actors(const Request& request) {
  const unsigned version = request.version();
  const bool keep_alive = request.keep_alive();
  bridge_.engine_call(
      "status", Json::object(),
      [self = shared_from_this(), version, keep_alive](Result<control::Frame> answer) {
        Response r{answer ? http::status::ok : http::status::service_unavailable, version};
        r.keep_alive(keep_alive);
        r.set(http::field::content_type, "application/json");
        if (!answer) {
          r.body() = to_text(Json{{"error",
                                   {{"code", to_string(answer.error().code)},
                                    {"message", answer.error().message}}}}) +
                     "\n";
        } else {
          Json actors = Json::array();
          std::set<std::string> names;
          // The engine's reading, or (custom rules) the bridge's own once it read the ring.
          AgentStatuses* own = self->bridge_.agent_statuses();
          for (const Json& a : answer->header.value("actors", Json::array())) {
            const std::string name = a.value("name", "");
            names.insert(name);
            const auto agent = own ? own->get(name) : std::nullopt;
            const auto field = [&](const char* key, auto of_own) {
              if (!own) return a.value(key, Json());
              return agent ? Json(of_own(*agent)) : Json();
            };
            actors.push_back(
                {{"name", name},
                 {"state", a.value("state", "")},
                 {"session", a.value("session", 0)},
                 {"cols", a.value("cols", 0)},
                 {"rows", a.value("rows", 0)},
                 {"epoch", a.value("epoch", "")},
                 {"committed", a.value("committed", 0)},
                 {"argv", a.value("argv", Json::array())},
                 {"foreground", a.value("foreground", Json())},
                 {"agent_status",
                  field("agent_status", [](const auto& s) { return term::to_string(s.status); })},
                 {"agent", field("agent", [](const auto& s) { return s.agent; })},
                 {"title", field("title", [](const auto& s) { return s.title; })}});
          }
          if (own) own->want(std::move(names));
          r.body() = to_text(Json{{"actors", std::move(actors)}}) + "\n";
        }
        self->send(std::move(r));
      });
}

void HttpSession::upgrade(const Request& request, const std::map<std::string, std::string>& query) {
  // The ticket is spent before anything else, so it is one-time whatever happens next.
  const auto ticket = query.find("ticket");
  const bool authorized =
      ticket != query.end() && bridge_.tickets().redeem(ticket->second, TicketBook::Clock::now());
  const auto attach = attach_request(query);
  stream_.expires_never();  // the WebSocket's own timeouts from here
  auto ws = std::make_shared<ClientSession::Socket>(std::move(stream_));
  // 30 s for the handshake and for a close to be answered; a client silent for 90 s (it pings
  // every 15 s) is dropped.
  auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
  timeouts.idle_timeout = std::chrono::seconds(90);
  ws->set_option(timeouts);
  ws->set_option(websocket::stream_base::decorator(
      [](websocket::response_type& r) { r.set(http::field::server, "backscroll-bridge"); }));
  ws->async_accept(
      request, [ws, authorized, attach = attach, &bridge = bridge_](beast::error_code ec) {
        if (ec) return;
        if (authorized && attach && bridge.sessions() >= Bridge::kMaxClients) {
          ws->async_close(websocket::close_reason(static_cast<websocket::close_code>(kCloseRefused),
                                                  "too many clients"),
                          [ws](beast::error_code) {});
          return;
        }
        if (!authorized || !attach) {
          // 4401 for both (Natamux): the page asks for a new ticket or fixes its URL, never
          // retries.
          ws->async_close(
              websocket::close_reason(static_cast<websocket::close_code>(kCloseUnauthorized),
                                      authorized ? "bad query" : "bad or used ticket"),
              [ws](beast::error_code) {});
          return;
        }
        std::make_shared<ClientSession>(bridge, std::move(*ws), *attach)->start();
      });
}

}  // namespace backscroll::bridge
