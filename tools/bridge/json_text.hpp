// JSON as the bridge sends it, and fields of what clients send, without exceptions: a client's
// bytes (an Origin header, a message's `type`) may be anything, and nothing a client sends may
// throw out of a handler (one io_context runs every client).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace backscroll::bridge {

// Invalid UTF-8 inside strings is replaced (U+FFFD), never thrown.
inline std::string to_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline std::optional<std::string> string_field(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(name);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

inline std::optional<std::int64_t> int_field(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(name);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

inline std::optional<std::uint64_t> uint_field(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(name);
  if (it == object.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::uint64_t>();
}

inline std::optional<bool> bool_field(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(name);
  if (it == object.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

}  // namespace backscroll::bridge
