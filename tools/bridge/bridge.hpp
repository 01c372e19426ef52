// Bridge: the state backscroll-bridge shares between its HTTP connections and WebSocket
// clients, all on one io_context thread (docs/bridge.md): the options, the token and tickets,
// two connections to the engine (requests; events after `subscribe`), one ActorFeed per watched
// actor and the live client sessions. The engine is reached lazily: a request finds the
// connection gone, connects again and re-subscribes; clients of a lost connection are closed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "shm/control_frame.hpp"
#include "shm/error.hpp"
#include "shm/places.hpp"
#include "tools/bridge/actor_feed.hpp"
#include "tools/bridge/agent_statuses.hpp"
#include "tools/bridge/auth.hpp"
#include "tools/bridge/engine_link.hpp"

namespace backscroll::bridge {

class ClientSession;

struct BridgeOptions {
  std::string listen = "127.0.0.1";
  std::uint16_t port = 7682;  // 0: any free port (tests)
  std::filesystem::path web_root;
  // Origins a browser page may come from besides the bridge's own (same host and port).
  std::vector<std::string> allow_origins;
  // Host names (besides localhost and IP literals) the bridge answers to.
  std::vector<std::string> allow_hosts;
  // The status detector's rules for the actor list (docs/status-detector.md). With the
  // built-in rules the engine's own reading is used (its `status` answer, the ring header);
  // other rules are applied by a detector of the bridge's own, following each ring.
  const term::StatusRules* rules = &term::StatusRules::defaults();
};

class Bridge {
 public:
  // WebSocket clients at once; one more is closed with 4409.
  static constexpr std::size_t kMaxClients = 256;

  Bridge(boost::asio::io_context& io, Places places, BridgeOptions options, std::string token);
  ~Bridge();
  // Binds the listener and starts accepting.
  Result<void> listen();
  // --listen's address: an IP literal, or a host name resolved (its first IPv4 address, else
  // its first): `--listen localhost` listens on 127.0.0.1.
  static Result<boost::asio::ip::address> listen_address(const std::string& name);
  std::uint16_t port() const noexcept { return port_; }

  boost::asio::io_context& io() noexcept { return io_; }
  const BridgeOptions& options() const noexcept { return options_; }
  const std::string& token() const noexcept { return token_; }
  TicketBook& tickets() noexcept { return tickets_; }
  // The bridge's own agent statuses: only with rules other than the built-in ones (the engine
  // reads the status with those itself); null otherwise.
  AgentStatuses* agent_statuses() noexcept { return agent_statuses_.get(); }

  // A request to the engine; engine_unavailable when it cannot be reached.
  void engine_call(std::string_view op, control::Json fields, const std::string& payload,
                   EngineLink::Reply reply);
  void engine_call(std::string_view op, control::Json fields, EngineLink::Reply reply) {
    engine_call(op, std::move(fields), {}, std::move(reply));
  }
  // The feed of `actor`, shared by its clients (opened on first use).
  Result<std::shared_ptr<ActorFeed>> feed(const std::string& actor);

  void add_session(const std::shared_ptr<ClientSession>& session);
  void remove_session(const ClientSession* session);
  std::size_t sessions() const noexcept { return sessions_.size(); }

  // Same-host checks against DNS rebinding and cross-site pages (docs/bridge.md).
  bool host_allowed(std::string_view host) const;
  bool origin_allowed(std::string_view origin, std::string_view host) const;

 private:
  void accept_next();
  Result<void> ensure_engine();
  void on_engine_lost();
  void on_event(const control::Json& event);

  boost::asio::io_context& io_;
  Places places_;
  BridgeOptions options_;
  std::string token_;
  TicketBook tickets_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::shared_ptr<EngineLink> requests_;
  std::shared_ptr<EngineLink> events_;
  std::map<std::string, std::weak_ptr<ActorFeed>> feeds_;
  // How feeds' waiter threads reach io_: cut off before the bridge (and io_) go away.
  std::shared_ptr<FeedWaker> waker_;
  boost::asio::steady_timer accept_retry_;
  std::map<const ClientSession*, std::weak_ptr<ClientSession>> sessions_;
  std::unique_ptr<AgentStatuses> agent_statuses_;
};

}  // namespace backscroll::bridge
