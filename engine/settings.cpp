#include "engine/settings.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
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

Result<void> read_section(const YAML::Node& map, const std::string& prefix, std::string_view origin,
                          const Fields& fields) {
  if (!map.IsMap())
    return bad(origin, map, prefix.empty() ? "the file" : prefix, "expected a mapping");
  for (const auto& entry : map) {
    const std::string name = entry.first.Scalar();
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    const auto field =
        std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == name; });
    if (field == fields.end())
      return bad(origin, entry.first, key, "not a setting this engine knows");
    if (auto r = field->second(entry.second, key); !r) return r;
  }
  return {};
}

Take section(std::string_view origin, Fields fields) {
  return [origin, fields = std::move(fields)](const YAML::Node& v, const std::string& key) {
    return read_section(v, key, origin, fields);
  };
}

// Exactly `true` or `false`: YAML 1.1's yes/no/on/off/y/n are refused, they read as strings to
// half the tools that read this file.
Take boolean(std::string_view origin, bool& out) {
  return [origin, &out](const YAML::Node& v, const std::string& key) -> Result<void> {
    // A plain scalar only (tag "?"): a quoted "true" is a string.
    const std::string text = v.IsScalar() && v.Tag() == "?" ? v.Scalar() : std::string();
    if (text != "true" && text != "false") return bad(origin, v, key, "expected true or false");
    out = text == "true";
    return {};
  };
}

// A whole number; 0 keeps the default, anything above Settings::kMaxNumber is capped there, and
// anything else below `minimum` is an error that names the minimum.
Take number(std::string_view origin, std::uint64_t& out, std::uint64_t minimum = 1) {
  return [origin, &out, minimum](const YAML::Node& v, const std::string& key) -> Result<void> {
    const std::string text = v.IsScalar() ? v.Scalar() : std::string();
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
      return bad(origin, v, key, "expected a whole number (0 means the default)");
    const std::size_t first = text.find_first_not_of('0');
    const std::string digits = first == std::string::npos ? "0" : text.substr(first);
    // More than 9 digits is past the cap whatever they are (and past 2^64 from 20 digits).
    const std::uint64_t n = digits.size() > 9 ? Settings::kMaxNumber : std::stoull(digits);
    if (n != 0 && n < minimum) {
      return bad(origin, v, key,
                 "expected at least " + std::to_string(minimum) + " (or 0 for the default), got " +
                     std::to_string(n));
    }
    if (n != 0) out = std::min(n, Settings::kMaxNumber);
    return {};
  };
}

// A duration: a whole number of seconds, or one followed by s, m, h or d ("30m"); 0 keeps the
// default. Capped at ten years.
Take duration(std::string_view origin, std::uint64_t& out_seconds) {
  return [origin, &out_seconds](const YAML::Node& v, const std::string& key) -> Result<void> {
    static constexpr std::uint64_t kMax = 10ull * 365 * 86400;
    const std::string text = v.IsScalar() ? v.Scalar() : std::string();
    const std::size_t digits_end = text.find_first_not_of("0123456789");
    const std::string digits = text.substr(0, digits_end);
    const std::string unit = digits_end == std::string::npos ? "s" : text.substr(digits_end);
    const std::uint64_t scale = unit == "s"   ? 1
                                : unit == "m" ? 60
                                : unit == "h" ? 3600
                                : unit == "d" ? 86400
                                              : 0;
    if (digits.empty() || scale == 0) {
      return bad(origin, v, key,
                 "expected a duration: whole seconds, or with s, m, h or d (0 means never)");
    }
    const std::size_t first = digits.find_first_not_of('0');
    const std::string significant = first == std::string::npos ? "0" : digits.substr(first);
    const std::uint64_t n = significant.size() > 9 ? kMax : std::stoull(significant);
    out_seconds = std::min(n * scale, kMax);
    return {};
  };
}

// A size: a whole number of bytes, or one followed by KiB, MiB, GiB or TiB ("2GiB"); 0 keeps the
// default, sizes above Settings::kMaxMemoryBudget are capped there, and anything else below
// `minimum` is an error that names the minimum.
Take size(std::string_view origin, std::uint64_t& out, std::uint64_t minimum) {
  return [origin, &out, minimum](const YAML::Node& v, const std::string& key) -> Result<void> {
    static constexpr std::pair<std::string_view, int> kUnits[] = {
        {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
    const std::string text = v.IsScalar() ? v.Scalar() : std::string();
    const std::size_t digits_end = text.find_first_not_of("0123456789");
    const std::string digits = text.substr(0, digits_end);
    const std::string unit = digits_end == std::string::npos ? "" : text.substr(digits_end);
    int shift = 0;
    bool unit_known = unit.empty();
    for (const auto& [name, bits] : kUnits) {
      if (unit == name) {
        shift = bits;
        unit_known = true;
      }
    }
    if (digits.empty() || !unit_known) {
      return bad(origin, v, key,
                 "expected a size: a whole number of bytes, or with KiB, MiB, GiB or TiB (0 "
                 "means the default)");
    }
    const std::size_t first = digits.find_first_not_of('0');
    const std::string significant = first == std::string::npos ? "0" : digits.substr(first);
    // More than 15 significant digits is past the cap whatever they are.
    std::uint64_t n =
        significant.size() > 15 ? Settings::kMaxMemoryBudget : std::stoull(significant);
    n = n > (Settings::kMaxMemoryBudget >> shift) ? Settings::kMaxMemoryBudget : n << shift;
    if (n != 0 && n < minimum) {
      return bad(origin, v, key,
                 "expected at least " + std::to_string(minimum >> 20) +
                     " MiB (or 0 for the default), got " + text);
    }
    if (n != 0) out = n;
    return {};
  };
}

// Checks the file's shape on the parser's events, before a tree is built: one document, nesting
// no deeper than kMaxDepth, no anchors or aliases (nothing here needs them, and an alias bomb
// expands exponentially), and no key given twice in one mapping (yaml-cpp would keep the last
// silently: `persist: true` ... `persist: false` must not quietly turn persistence off).
class ShapeCheck final : public YAML::EventHandler {
 public:
  static constexpr int kMaxDepth = 8;  // settings nest two levels

  struct Refused {
    int line;  // 0-based, as YAML::Mark
    std::string what;
  };

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) throw Refused{mark.line, "more than one YAML document"};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    node(mark, anchor, std::nullopt);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    throw Refused{mark.line, "aliases (*name) are not allowed in settings"};
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    node(mark, anchor, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    node(mark, anchor, std::nullopt);
    open(mark, false);
  }
  void OnSequenceEnd() override { levels_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    node(mark, anchor, std::nullopt);
    open(mark, true);
  }
  void OnMapEnd() override { levels_.pop_back(); }

 private:
  struct Level {
    bool map = false;
    bool at_key = true;               // a mapping's next node is a key
    std::map<std::string, int> keys;  // key -> its line
  };

  void open(const YAML::Mark& mark, bool map) {
    if (static_cast<int>(levels_.size()) >= kMaxDepth) {
      throw Refused{mark.line, "nested deeper than " + std::to_string(kMaxDepth) + " levels"};
    }
    levels_.push_back(Level{map, true, {}});
  }

  // Every node: within a mapping, keys and values alternate (a node that opens a collection
  // counts before it is opened).
  void node(const YAML::Mark& mark, YAML::anchor_t anchor,
            const std::optional<std::string>& scalar) {
    if (anchor != YAML::NullAnchor)
      throw Refused{mark.line, "anchors (&name) are not allowed in settings"};
    if (levels_.empty() || !levels_.back().map) return;
    Level& level = levels_.back();
    const bool key = level.at_key;
    level.at_key = !level.at_key;
    if (!key) return;
    if (!scalar) throw Refused{mark.line, "a key must be a plain name"};
    const auto [it, fresh] = level.keys.emplace(*scalar, mark.line);
    if (!fresh) {
      throw Refused{mark.line, "key '" + *scalar + "' given twice (lines " +
                                   std::to_string(it->second + 1) + " and " +
                                   std::to_string(mark.line + 1) + ")"};
    }
  }

  int documents_ = 0;
  std::vector<Level> levels_;
};

}  // namespace

Result<Settings> parse_settings(std::string_view yaml, std::string_view origin) {
  YAML::Node root;
  try {
    std::istringstream in{std::string(yaml)};
    YAML::Parser parser(in);
    ShapeCheck shape;
    while (parser.HandleNextDocument(shape)) {
    }
    root = YAML::Load(std::string(yaml));
  } catch (const ShapeCheck::Refused& r) {
    return fail(Errc::bad_request,
                std::string(origin) + " line " + std::to_string(r.line + 1) + ": " + r.what);
  } catch (const YAML::ParserException& e) {
    return fail(Errc::bad_request, std::string(origin) + " line " +
                                       std::to_string(e.mark.line + 1) +
                                       ": not valid YAML: " + e.msg);
  }
  Settings s;
  if (root.IsNull()) return s;  // an empty file, or only comments
  const Fields top = {
      {"terminal_transcript",
       section(origin, {{"enabled", boolean(origin, s.transcript_enabled)},
                        {"persist", boolean(origin, s.persist)},
                        {"per_actor_bytes",
                         number(origin, s.per_actor_bytes, Settings::kMinPerActorBytes)}})},
      {"snapshot",
       section(origin, {{"scrollback_lines", number(origin, s.snapshot_scrollback_lines)}})},
      {"retention_days", number(origin, s.retention_days)},
      {"memory_budget", size(origin, s.memory_budget, Settings::kMinMemoryBudget)},
      {"close_idle_after", duration(origin, s.close_idle_after_s)},
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
