// Who may use the bridge (docs/bridge.md, "Authentication"):
// - a token, kept in a 0600 file the bridge creates on first start; a client shows it as
//   "Authorization: Bearer <token>" to the HTTP API;
// - one-time tickets: a browser cannot set headers on a WebSocket, so the page trades the token
//   for a ticket (POST /api/ticket) and opens the socket with ?ticket=...; a ticket works once,
//   within 30 s of being issued.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>

#include "shm/error.hpp"
#include "shm/random_hex.hpp"

namespace backscroll::bridge {

// The token in `path`: read it when the file exists (it must be a regular file of ours, mode
// 0600, holding a token), else create it (0600, created exclusively) with a fresh one.
Result<std::string> load_or_create_token(const std::filesystem::path& path);

// Compares secrets in time that depends only on their lengths.
bool same_secret(std::string_view a, std::string_view b) noexcept;

class TicketBook {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kLifetime{30};
  // Outstanding tickets are bounded: issuing past this forgets the expired ones first, then
  // refuses (a client that asks for tickets in a loop cannot grow the bridge).
  static constexpr std::size_t kMaxOutstanding = 1024;

  // A new ticket, or "" when kMaxOutstanding unexpired tickets are waiting.
  std::string issue(Clock::time_point now);
  // True once for a ticket issued within kLifetime before `now`; the ticket is gone afterwards.
  bool redeem(std::string_view ticket, Clock::time_point now);
  std::size_t outstanding() const noexcept { return expiry_.size(); }

 private:
  void forget_expired(Clock::time_point now);
  std::unordered_map<std::string, Clock::time_point> expiry_;
};

}  // namespace backscroll::bridge
