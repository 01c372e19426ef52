#include "engine/settings.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace backscroll::engine {
namespace {

// Takes a key's value; `key` is its dotted name, for errors.
using Take = std::function<Result<void>(const YAML::Node& value, const std::string& key)>;
using Fields = std::vector<std::pair<std::string, Take>>;

// "settings.yaml line 3: terminal_transcript.persist: expected true or false"
tl::unexpected<Error> bad(std::string_view origin, const YAML::Node& node, const std::string& key,
                          const std::string& what) {
  std::string where(origin);
  if (node.Mark().line >= 0) where += " line " + std::to_string(node.Mark().line + 1);
  return fail(Errc::bad_request, where + ": " + key + ": " + what);
}

Result<void> read_section(const YAML::Node& map, const std::string& prefix,
                          std::string_view origin, const Fields& fields) {
  if (!map.IsMap()) return bad(origin, map, prefix.empty() ? "the file" : prefix, "expected a mapping");
  for (const auto& entry : map) {
    const std::string name = entry.first.Scalar();
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    const auto field = std::find_if(fields.begin(), fields.end(),
                                    [&](const auto& f) { return f.first == name; });
    if (field == fields.end()) return bad(origin, entry.first, key, "not a setting this engine knows");
    if (auto r = field->second(entry.second, key); !r) return r;
  }
  return {};
}

Take section(std::string_view origin, Fields fields) {
  return [origin, fields = std::move(fields)](const YAML::Node& v, const std::string& key) {
    return read_section(v, key, origin, fields);
  };
}

Take boolean(std::string_view origin, bool& out) {
  return [origin, &out](const YAML::Node& v, const std::string& key) -> Result<void> {
    bool b = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b))
      return bad(origin, v, key, "expected true or false");
    out = b;
    return {};
  };
}

// A whole number; 0 keeps the default, anything above Settings::kMaxNumber is capped there.
Take number(std::string_view origin, std::uint64_t& out) {
  return [origin, &out](const YAML::Node& v, const std::string& key) -> Result<void> {
    const std::string text = v.IsScalar() ? v.Scalar() : std::string();
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
      return bad(origin, v, key, "expected a whole number (0 means the default)");
    const std::size_t first = text.find_first_not_of('0');
    const std::string digits = first == std::string::npos ? "0" : text.substr(first);
    // More than 9 digits is past the cap whatever they are (and past 2^64 from 20 digits).
    const std::uint64_t n = digits.size() > 9 ? Settings::kMaxNumber : std::stoull(digits);
    if (n != 0) out = std::min(n, Settings::kMaxNumber);
    return {};
  };
}

}  // namespace

Result<Settings> parse_settings(std::string_view yaml, std::string_view origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::ParserException& e) {
    return fail(Errc::bad_request, std::string(origin) + " line " + std::to_string(e.mark.line + 1) +
                                       ": not valid YAML: " + e.msg);
  }
  Settings s;
  if (root.IsNull()) return s;  // an empty file, or only comments
  const Fields top = {
      {"terminal_transcript", section(origin, {{"enabled", boolean(origin, s.transcript_enabled)},
                                               {"persist", boolean(origin, s.persist)},
                                               {"per_actor_bytes", number(origin, s.per_actor_bytes)}})},
      {"snapshot", section(origin, {{"scrollback_lines", number(origin, s.snapshot_scrollback_lines)}})},
      {"retention_days", number(origin, s.retention_days)},
  };
  if (auto r = read_section(root, "", origin, top); !r) return tl::unexpected(r.error());
  return s;
}

Result<Settings> load_settings(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) return Settings{};
  if (ec) return fail(Errc::io_error, path.string() + ": " + ec.message());
  if (status.type() != std::filesystem::file_type::regular)
    return fail(Errc::io_error, path.string() + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return fail(Errc::io_error, path.string() + ": " + std::strerror(errno));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_settings(text, path.string());
}

}  // namespace backscroll::engine
