#include "tools/bridge/bridge.hpp"

#include <boost/asio/ip/address.hpp>

#include "tools/bridge/client_session.hpp"
#include "tools/bridge/http_session.hpp"

namespace backscroll::bridge {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Bridge::Bridge(asio::io_context& io, Places places, BridgeOptions options, std::string token)
    : io_(io),
      places_(std::move(places)),
      options_(std::move(options)),
      token_(std::move(token)),
      acceptor_(io),
      waker_(std::make_shared<FeedWaker>(io)),
      accept_retry_(io),
      agent_statuses_(options_.rules == &term::StatusRules::defaults()
                          ? nullptr
                          : std::make_unique<AgentStatuses>(places_, *options_.rules)) {}

Bridge::~Bridge() {
  waker_->cut();
  // Closing now is no loss of the engine: no client is told anything any more.
  for (auto* link : {&requests_, &events_}) {
    if (*link) {
      (*link)->on_closed(nullptr);
      (*link)->close();
    }
  }
}

Result<void> Bridge::listen() {
  auto address = listen_address(options_.listen);
  if (!address) return tl::unexpected(address.error());
  const tcp::endpoint endpoint(*address, options_.port);
  boost::system::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return fail(Errc::io_error, "cannot listen on " + options_.listen + ":" +
                                    std::to_string(options_.port) + ": " + ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  accept_next();
  return {};
}

Result<asio::ip::address> Bridge::listen_address(const std::string& name) {
  boost::system::error_code ec;
  const auto literal = asio::ip::make_address(name, ec);
  if (!ec) return literal;
  // A host name (localhost): its first IPv4 address, else its first address.
  asio::io_context resolving;
  tcp::resolver resolver(resolving);
  const auto found = resolver.resolve(name, "", ec);
  if (ec || found.empty()) {
    return fail(Errc::bad_request, "cannot listen on '" + name + "': not an IP address, and " +
                                       (ec ? ec.message() : "it resolves to no address"));
  }
  for (const auto& entry : found) {
    if (entry.endpoint().address().is_v4()) return entry.endpoint().address();
  }
  return found.begin()->endpoint().address();
}

void Bridge::accept_next() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of file descriptors (or the like): try again shortly instead of spinning.
      accept_retry_.expires_after(std::chrono::milliseconds(100));
      accept_retry_.async_wait([this](boost::system::error_code e) {
        if (!e) accept_next();
      });
      return;
    }
    std::make_shared<HttpSession>(*this, std::move(socket))->start();
    accept_next();
  });
}

Result<void> Bridge::ensure_engine() {
  if (requests_ && requests_->open() && events_ && events_->open()) return {};
  if (requests_) requests_->close();
  if (events_) events_->close();
  requests_.reset();
  events_.reset();
  auto requests = EngineLink::connect(io_, places_);
  if (!requests) return tl::unexpected(requests.error());
  auto events = EngineLink::connect(io_, places_);
  if (!events) {
    (*requests)->close();
    return tl::unexpected(events.error());
  }
  requests_ = *requests;
  events_ = *events;
  requests_->on_closed([this] { on_engine_lost(); });
  events_->on_closed([this] { on_engine_lost(); });
  events_->on_event([this](const control::Json& event) { on_event(event); });
  events_->call("subscribe", control::Json::object(), [](const Result<control::Frame>&) {});
  return {};
}

void Bridge::on_engine_lost() {
  // Attachments end with the engine connection that made them: every client starts over.
  std::vector<std::shared_ptr<ClientSession>> live;
  for (auto& [key, weak] : sessions_) {
    if (auto s = weak.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) s->engine_lost();
}

void Bridge::on_event(const control::Json& event) {
  const std::string actor = event.value("actor", "");
  std::vector<std::shared_ptr<ClientSession>> targets;
  for (auto& [key, weak] : sessions_) {
    if (auto s = weak.lock(); s && s->actor() == actor) targets.push_back(std::move(s));
  }
  for (auto& s : targets) s->on_engine_event(event);
}

void Bridge::engine_call(std::string_view op, control::Json fields, const std::string& payload,
                         EngineLink::Reply reply) {
  if (auto ok = ensure_engine(); !ok) {
    reply(tl::unexpected(ok.error()));
    return;
  }
  requests_->call(op, std::move(fields), payload, std::move(reply));
}

Result<std::shared_ptr<ActorFeed>> Bridge::feed(const std::string& actor) {
  std::erase_if(feeds_, [](const auto& entry) { return entry.second.expired(); });
  if (auto it = feeds_.find(actor); it != feeds_.end()) {
    auto feed = it->second.lock();
    if (!feed->closed()) return feed;  // a deleted actor's old ring: open the new one
  }
  auto feed = ActorFeed::open(waker_, places_, actor);
  if (!feed) return tl::unexpected(feed.error());
  feeds_[actor] = *feed;
  return *feed;
}

void Bridge::add_session(const std::shared_ptr<ClientSession>& session) {
  sessions_[session.get()] = session;
}

void Bridge::remove_session(const ClientSession* session) { sessions_.erase(session); }

namespace {

// The host part of a Host header or an origin's authority: "[::1]:80" -> "[::1]", "a:1" -> "a".
std::string_view host_name(std::string_view authority) {
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    return close == std::string_view::npos ? authority : authority.substr(0, close + 1);
  }
  return authority.substr(0, authority.find(':'));
}

bool is_ip_literal(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  asio::ip::make_address(std::string(host), ec);
  return !ec;
}

}  // namespace

bool Bridge::host_allowed(std::string_view host) const {
  const std::string_view name = host_name(host);
  if (name.empty()) return false;
  // A name that resolves elsewhere could be pointed at this machine later (DNS rebinding):
  // only localhost, IP literals, and names the user allowed.
  if (name == "localhost" || is_ip_literal(name)) return true;
  for (const auto& allowed : options_.allow_hosts) {
    if (allowed == name) return true;
  }
  return false;
}

bool Bridge::origin_allowed(std::string_view origin, std::string_view host) const {
  if (origin == "http://" + std::string(host)) return true;  // the bridge's own page
  for (const auto& allowed : options_.allow_origins) {
    if (allowed == origin) return true;
  }
  return false;
}

}  // namespace backscroll::bridge
