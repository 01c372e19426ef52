#include "engine/actor_record.hpp"

#include <charconv>

#include "engine/actor.hpp"
#include "engine/request_fields.hpp"
#include "engine/wall_clock.hpp"

namespace backscroll::engine {
namespace {

using control::Json;

tl::unexpected<Error> bad(const std::string& field) {
  return fail(Errc::bad_request, "actor record: \"" + field + "\" is missing or malformed");
}

template <class T>
bool get(const Json& json, const char* key, T& out) {
  const auto it = json.find(key);
  if (it == json.end()) return false;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return false;
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!it->is_number_unsigned()) return false;
  } else {
    if (!it->is_number_integer()) return false;
  }
  out = it->get<T>();
  return true;
}

}  // namespace

ActorRecord ActorRecord::of(const Actor& actor) {
  return ActorRecord{actor.name(),     actor.epoch(),      actor.spec(),   actor.ring().committed(),
                     actor.sessions(), actor.created_ms(), wall_clock_ms()};
}

Json ActorRecord::to_json() const {
  Json env = Json::object();
  for (const auto& [k, v] : spec.env) env[k] = v;
  Json list = Json::array();
  for (const auto& s : sessions) {
    list.push_back({{"id", s.id},
                    {"start", s.start},
                    {"end", s.end},
                    {"pid", s.pid},
                    {"exit_code", s.exit_code},
                    {"term_signal", s.term_signal},
                    {"sealed", (s.flags & shm::kSessionSealed) != 0}});
  }
  return {{"format", kFormat},
          {"name", name},
          {"epoch", hex64(epoch)},
          {"argv", spec.argv},
          {"cwd", spec.cwd},
          {"env", std::move(env)},
          {"env_replace", spec.env_replace},
          {"cols", spec.size.cols},
          {"rows", spec.size.rows},
          {"cursor", value(cursor)},
          {"sessions", std::move(list)},
          {"created_ms", created_ms},
          {"updated_ms", updated_ms}};
}

Result<ActorRecord> ActorRecord::from_json(const Json& json) {
  if (!json.is_object()) return bad("format");
  std::string format;
  if (!get(json, "format", format) || format != kFormat) return bad("format");
  ActorRecord r;
  if (!get(json, "name", r.name)) return bad("name");
  std::string epoch;
  if (!get(json, "epoch", epoch) || epoch.size() != 16 ||
      std::from_chars(epoch.data(), epoch.data() + epoch.size(), r.epoch, 16).ptr !=
          epoch.data() + epoch.size() ||
      r.epoch == 0)
    return bad("epoch");
  const auto argv = json.find("argv");
  if (argv == json.end() || !argv->is_array() || argv->empty()) return bad("argv");
  for (const auto& a : *argv) {
    if (!a.is_string()) return bad("argv");
    r.spec.argv.push_back(a.get<std::string>());
  }
  if (!get(json, "cwd", r.spec.cwd)) return bad("cwd");
  const auto env = json.find("env");
  if (env == json.end() || !env->is_object()) return bad("env");
  for (const auto& [k, v] : env->items()) {
    if (!v.is_string() || k.empty() || k.find('=') != std::string::npos) return bad("env");
    r.spec.env.emplace_back(k, v.get<std::string>());
  }
  // Absent in records written before the CLI sent whole environments: added to the engine's.
  if (const auto replace = json.find("env_replace"); replace != json.end()) {
    if (!replace->is_boolean()) return bad("env_replace");
    r.spec.env_replace = replace->get<bool>();
  }
  std::uint64_t cols = 0, rows = 0, cursor = 0;
  if (!get(json, "cols", cols) || cols == 0 || cols > kMaxWindowDimension) return bad("cols");
  if (!get(json, "rows", rows) || rows == 0 || rows > kMaxWindowDimension) return bad("rows");
  r.spec.size = {static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows)};
  if (!get(json, "cursor", cursor)) return bad("cursor");
  r.cursor = Cursor{cursor};
  const auto sessions = json.find("sessions");
  if (sessions == json.end() || !sessions->is_array()) return bad("sessions");
  for (const auto& s : *sessions) {
    shm::SessionRecord rec;
    bool sealed = false;
    if (!s.is_object() || !get(s, "id", rec.id) || rec.id == 0 || !get(s, "start", rec.start) ||
        !get(s, "end", rec.end) || !get(s, "pid", rec.pid) || !get(s, "exit_code", rec.exit_code) ||
        !get(s, "term_signal", rec.term_signal) || !s.contains("sealed") ||
        !s["sealed"].is_boolean())
      return bad("sessions");
    sealed = s["sealed"].get<bool>();
    if (sealed) rec.flags |= shm::kSessionSealed;
    if (!r.sessions.empty() && rec.id <= r.sessions.back().id) return bad("sessions");
    r.sessions.push_back(rec);
  }
  if (!get(json, "created_ms", r.created_ms)) return bad("created_ms");
  if (!get(json, "updated_ms", r.updated_ms)) return bad("updated_ms");
  return r;
}

}  // namespace backscroll::engine
