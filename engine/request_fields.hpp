// Typed access to the fields of a control request (docs/protocol.md), with the errors the
// protocol gives for missing or malformed fields. Header-only; any thread.
#pragma once

#include <cctype>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "engine/pty_process.hpp"
#include "shm/control_frame.hpp"
#include "shm/error.hpp"

namespace backscroll::engine {

inline constexpr std::size_t kMaxIdBytes = 256;  // a request id's size

// A request id is echoed in every reply (and kept while a stop waits for its seal): null, a
// number, a boolean or a string of at most kMaxIdBytes.
inline bool valid_request_id(const control::Json& id) {
  return id.is_null() || id.is_number() || id.is_boolean() ||
         (id.is_string() && id.get_ref<const std::string&>().size() <= kMaxIdBytes);
}

inline Result<std::string> string_field(const control::Json& request, const char* name) {
  const auto it = request.find(name);
  if (it == request.end() || !it->is_string()) {
    return fail(Errc::bad_request, std::string("\"") + name + "\" must be a string");
  }
  return it->get<std::string>();
}

// An unsigned field; `fallback` when absent.
inline Result<std::uint64_t> uint_field(const control::Json& request, const char* name,
                                        std::optional<std::uint64_t> fallback = std::nullopt) {
  const auto it = request.find(name);
  if (it == request.end() || it->is_null()) {
    if (fallback) return *fallback;
    return fail(Errc::bad_request, std::string("\"") + name + "\" is required");
  }
  if (!it->is_number_unsigned()) {
    return fail(Errc::bad_request, std::string("\"") + name + "\" must be a non-negative integer");
  }
  return it->get<std::uint64_t>();
}

inline Result<std::uint16_t> dimension(const control::Json& request, const char* name,
                                       std::optional<std::uint64_t> fallback) {
  auto v = uint_field(request, name, fallback);
  if (!v) return tl::unexpected(v.error());
  if (*v == 0) return fail(Errc::bad_request, std::string("\"") + name + "\" must be at least 1");
  if (*v > kMaxWindowDimension) {
    return fail(Errc::too_large, std::string("\"") + name + "\" " + std::to_string(*v) +
                                     " exceeds " + std::to_string(kMaxWindowDimension));
  }
  return static_cast<std::uint16_t>(*v);
}

// The signal a stop, restart or delete sends first (field "signal"): a name as kill(1) takes
// it, with or without SIG ("TERM", "SIGINT"), or its number; SIGHUP when absent. SIGKILL and
// SIGSTOP are refused (the grace period's SIGKILL comes anyway; a stopped program never ends).
inline Result<int> stop_signal_field(const control::Json& request) {
  const auto it = request.find("signal");
  if (it == request.end() || it->is_null()) return SIGHUP;
  int sig = 0;
  if (it->is_number_unsigned() && it->get<std::uint64_t>() < NSIG) {
    sig = static_cast<int>(it->get<std::uint64_t>());
  } else if (it->is_string()) {
    std::string name = it->get<std::string>();
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (name.rfind("SIG", 0) == 0) name.erase(0, 3);
    if (!name.empty() && name.size() <= 2 &&
        name.find_first_not_of("0123456789") == std::string::npos) {
      sig = std::stoi(name);
    }
    for (int s = 1; s < SIGRTMIN && sig == 0; ++s) {
      const char* abbrev = ::sigabbrev_np(s);
      if (abbrev != nullptr && name == abbrev) sig = s;
    }
  }
  if (sig <= 0 || sig >= SIGRTMIN) {
    return fail(Errc::bad_request,
                "\"signal\" must name a signal (HUP, INT, TERM, ...): " + it->dump());
  }
  if (sig == SIGKILL || sig == SIGSTOP) {
    return fail(Errc::bad_request, std::string("\"signal\" cannot be SIG") + ::sigabbrev_np(sig) +
                                       " (SIGKILL follows the grace period anyway)");
  }
  return sig;
}

// An epoch as the protocol spells it: 16 lower-case hex digits.
inline std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace backscroll::engine
