// Typed access to the fields of a control request (docs/protocol.md), with the errors the
// protocol gives for missing or malformed fields. Io thread, header-only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "engine/pty_process.hpp"
#include "shm/control_frame.hpp"
#include "shm/error.hpp"

namespace backscroll::engine {

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

// An epoch as the protocol spells it: 16 lower-case hex digits.
inline std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace backscroll::engine
