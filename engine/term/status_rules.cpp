#include "engine/term/status_rules.hpp"

#include <cerrno>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace backscroll::term {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxRulesFileBytes = 1 << 20;

// The built-in table, in the rules-file format. docs/status-detector.md explains each rule and
// where its pattern comes from; keep the two in step. Order matters: the first match decides, so
// glyph rules (exact, from each program's source) come before the name-and-keyword rules.
constexpr std::string_view kDefaultRulesJson = R"json({
  "version": 1,
  "include_defaults": false,
  "rules": [
    {"agent": "gemini-cli", "status": "permission", "title": "^✋",
     "note": "Gemini CLI: '✋  Action Required (folder)'"},
    {"agent": "gemini-cli", "status": "working", "title": "^[✦⏲]",
     "note": "Gemini CLI: '✦  <thought> (folder)', '⏲  Working… (folder)'"},
    {"agent": "gemini-cli", "status": "idle", "title": "^◇",
     "note": "Gemini CLI: '◇  Ready (folder)'"},
    {"agent": "gemini-cli", "status": "unknown", "title": "^Gemini CLI \\(",
     "note": "Gemini CLI with dynamic titles off: 'Gemini CLI (folder)'"},

    {"agent": "codex", "status": "permission", "title": "^\\[ [!.] \\] Action Required",
     "note": "Codex CLI: '[ ! ] Action Required | project', blinking with '[ . ]'"},
    {"agent": "codex", "status": "working", "title": "^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏](\\s|$)",
     "note": "Codex CLI: a spinner frame before the project name, '⠴ project'"},

    {"agent": "claude-code", "status": "working", "title": "^[⠂⠐](\\s|$)",
     "note": "Claude Code: '⠂ <task>' and '⠐ <task>' while a turn runs"},
    {"agent": "claude-code", "status": "idle", "title": "^✳(\\s|$)",
     "note": "Claude Code: '✳ <task>' while it waits for the user (a permission prompt too)"},

    {"agent": "", "status": "working", "title": "^\\s*[\u2800-\u28ff]",
     "note": "any other braille spinner frame (OpenCode, Pi and others animate one while busy)"},

    {"agent": "claude-code", "status": "permission", "ignore_case": true, "title":
     "^(?=.*(^|\\s)claude(?![\\w./-])).*(^|\\s)(action required|permission|waiting)(?![\\w-])",
     "note": "a title naming the agent and a keyword (Orca's convention for agent titles)"},
    {"agent": "claude-code", "status": "idle", "ignore_case": true, "title":
     "^(?=.*(^|\\s)claude(?![\\w./-])).*(^|\\s)(ready|idle|done)(?![\\w-])"},
    {"agent": "claude-code", "status": "working", "ignore_case": true, "title":
     "^(?=.*(^|\\s)claude(?![\\w./-])).*(^|\\s)(working|thinking|running)(?![\\w-])"},
    {"agent": "claude-code", "status": "unknown", "ignore_case": true, "title":
     "(^|\\s)claude(?![\\w./-])"},

    {"agent": "codex", "status": "permission", "ignore_case": true, "title":
     "^(?=.*(^|\\s)codex(?![\\w./-])).*(^|\\s)(action required|permission|waiting)(?![\\w-])"},
    {"agent": "codex", "status": "idle", "ignore_case": true, "title":
     "^(?=.*(^|\\s)codex(?![\\w./-])).*(^|\\s)(ready|idle|done)(?![\\w-])"},
    {"agent": "codex", "status": "working", "ignore_case": true, "title":
     "^(?=.*(^|\\s)codex(?![\\w./-])).*(^|\\s)(working|thinking|running)(?![\\w-])"},
    {"agent": "codex", "status": "unknown", "ignore_case": true, "title":
     "(^|\\s)codex(?![\\w./-])"},

    {"agent": "gemini-cli", "status": "permission", "ignore_case": true, "title":
     "^(?=.*(^|\\s)gemini(?![\\w./-])).*(^|\\s)(action required|permission|waiting)(?![\\w-])"},
    {"agent": "gemini-cli", "status": "idle", "ignore_case": true, "title":
     "^(?=.*(^|\\s)gemini(?![\\w./-])).*(^|\\s)(ready|idle|done)(?![\\w-])"},
    {"agent": "gemini-cli", "status": "working", "ignore_case": true, "title":
     "^(?=.*(^|\\s)gemini(?![\\w./-])).*(^|\\s)(working|thinking|running)(?![\\w-])"},
    {"agent": "gemini-cli", "status": "unknown", "ignore_case": true, "title":
     "(^|\\s)gemini(?![\\w./-])"},

    {"agent": "aider", "status": "permission", "ignore_case": true, "title":
     "^(?=.*(^|\\s)aider(?![\\w./-])).*(^|\\s)(action required|permission|waiting)(?![\\w-])"},
    {"agent": "aider", "status": "idle", "ignore_case": true, "title":
     "^(?=.*(^|\\s)aider(?![\\w./-])).*(^|\\s)(ready|idle|done)(?![\\w-])"},
    {"agent": "aider", "status": "working", "ignore_case": true, "title":
     "^(?=.*(^|\\s)aider(?![\\w./-])).*(^|\\s)(working|thinking|running)(?![\\w-])"},
    {"agent": "aider", "status": "unknown", "ignore_case": true, "title":
     "(^|\\s)aider(?![\\w./-])"}
  ]
})json";

// PCRE2's options for a rule: UTF-8 titles (a malformed sequence cannot reach a rule: titles
// come sanitized from VtScanner, but a caller may pass anything), ECMAScript's \uHHHH escapes
// (rules files written for std::wregex keep working) and its `$` (the end only, not before a
// final newline), and `[^]` for any character.
constexpr std::uint32_t kCompileOptions = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ALT_BSUX |
                                          PCRE2_DOLLAR_ENDONLY | PCRE2_ALLOW_EMPTY_CLASS;

// A rule gives up on a title past this many backtracking steps (and counts as not matching it),
// so that no expression in a rules file can make a title cost more than about a millisecond.
constexpr std::uint32_t kMatchLimit = 100'000;

// The match context every rule is matched with (kMatchLimit); made once, only read after.
pcre2_match_context* match_context() {
  static const std::unique_ptr<pcre2_match_context, void (*)(pcre2_match_context*)> context = [] {
    pcre2_match_context* c = pcre2_match_context_create(nullptr);
    if (c == nullptr) throw std::bad_alloc();
    pcre2_set_match_limit(c, kMatchLimit);
    return std::unique_ptr<pcre2_match_context, void (*)(pcre2_match_context*)>(
        c, pcre2_match_context_free);
  }();
  return context.get();
}

// Where a match is recorded: one per thread (a table is matched from several), room for the
// whole match only (classify() needs no groups; PCRE2 still reports the match).
pcre2_match_data* thread_match_data() {
  thread_local const std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> data(
      pcre2_match_data_create(1, nullptr), pcre2_match_data_free);
  if (data == nullptr) throw std::bad_alloc();
  return data.get();
}

tl::unexpected<Error> bad_rules(std::string_view source, const std::string& what) {
  return fail(Errc::bad_request, std::string(source) + ": " + what);
}

std::string rule_name(std::size_t index) { return "rule " + std::to_string(index + 1); }

Result<StatusRule> parse_rule(const Json& item, std::size_t index, std::string_view source) {
  const std::string where = rule_name(index);
  if (!item.is_object()) return bad_rules(source, where + ": expected an object");
  for (const auto& [key, value] : item.items()) {
    if (key != "agent" && key != "status" && key != "title" && key != "ignore_case" &&
        key != "note") {
      return bad_rules(source, where + ": unknown field '" + key +
                                   "' (expected agent, status, title, ignore_case, note)");
    }
  }
  StatusRule rule;
  const auto string_field = [&](const char* key, std::string& out, bool required) -> Result<void> {
    const auto it = item.find(key);
    if (it == item.end()) {
      if (required) return bad_rules(source, where + ": missing '" + key + "'");
      return {};
    }
    if (!it->is_string()) return bad_rules(source, where + ": '" + key + "' must be a string");
    out = it->get<std::string>();
    return {};
  };
  if (auto r = string_field("agent", rule.agent, true); !r) return tl::unexpected(r.error());
  std::string status;
  if (auto r = string_field("status", status, true); !r) return tl::unexpected(r.error());
  if (auto r = string_field("title", rule.title, true); !r) return tl::unexpected(r.error());
  if (auto r = string_field("note", rule.note, false); !r) return tl::unexpected(r.error());
  const auto parsed = parse_agent_status(status);
  if (!parsed) {
    return bad_rules(source, where +
                                 ": 'status' must be working, idle, permission or unknown, "
                                 "got '" +
                                 status + "'");
  }
  rule.status = *parsed;
  if (const auto it = item.find("ignore_case"); it != item.end()) {
    if (!it->is_boolean()) {
      return bad_rules(source, where + ": 'ignore_case' must be true or false");
    }
    rule.ignore_case = it->get<bool>();
  }
  auto pattern =
      compile_pattern(rule.title, kCompileOptions | (rule.ignore_case ? PCRE2_CASELESS : 0u));
  if (!pattern) {
    return bad_rules(source, where + ": 'title' is not a valid regular expression (" +
                                 pattern.error().message + " at offset " +
                                 std::to_string(pattern.error().offset) + "): " + rule.title);
  }
  rule.pattern = std::move(*pattern);
  return rule;
}

}  // namespace

std::string_view to_string(AgentStatus status) noexcept {
  switch (status) {
    case AgentStatus::working: return "working";
    case AgentStatus::idle: return "idle";
    case AgentStatus::permission: return "permission";
    case AgentStatus::unknown: break;
  }
  return "unknown";
}

std::optional<AgentStatus> parse_agent_status(std::string_view name) noexcept {
  for (const AgentStatus s :
       {AgentStatus::unknown, AgentStatus::working, AgentStatus::idle, AgentStatus::permission}) {
    if (to_string(s) == name) return s;
  }
  return std::nullopt;
}

const StatusRules& StatusRules::defaults() {
  // Parsed once; the built-in text is covered by the tests, so a failure here is a bug.
  static const StatusRules rules = [] {
    auto parsed = parse(kDefaultRulesJson, "built-in rules");
    if (!parsed) throw std::logic_error(parsed.error().describe());
    return std::move(*parsed);
  }();
  return rules;
}

Result<StatusRules> StatusRules::parse(std::string_view json_text, std::string_view source) {
  Json doc;
  try {
    doc = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    return bad_rules(source, std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) return bad_rules(source, "expected a JSON object with a 'rules' array");
  for (const auto& [key, value] : doc.items()) {
    if (key != "version" && key != "include_defaults" && key != "rules") {
      return bad_rules(source,
                       "unknown field '" + key + "' (expected version, include_defaults, rules)");
    }
  }
  if (const auto it = doc.find("version"); it != doc.end() && *it != 1) {
    return bad_rules(source, "'version' must be 1, got " + it->dump());
  }
  bool include_defaults = true;
  if (const auto it = doc.find("include_defaults"); it != doc.end()) {
    if (!it->is_boolean()) return bad_rules(source, "'include_defaults' must be true or false");
    include_defaults = it->get<bool>();
  }
  const auto list = doc.find("rules");
  if (list == doc.end() || !list->is_array()) {
    return bad_rules(source, "expected a 'rules' array");
  }
  StatusRules out;
  out.rules_.reserve(list->size());
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto rule = parse_rule((*list)[i], i, source);
    if (!rule) return tl::unexpected(rule.error());
    out.rules_.push_back(std::move(*rule));
  }
  if (include_defaults) {
    const auto& builtin = defaults().rules();
    out.rules_.insert(out.rules_.end(), builtin.begin(), builtin.end());
  }
  return out;
}

Result<StatusRules> StatusRules::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail_errno("rules file " + path, errno);
  std::string text;
  text.resize(kMaxRulesFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return fail_errno("read rules file " + path, errno);
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxRulesFileBytes) {
    return fail(Errc::too_large, "rules file " + path + ": larger than " +
                                     std::to_string(kMaxRulesFileBytes) + " bytes");
  }
  return parse(text, "rules file " + path);
}

Classification StatusRules::classify(std::string_view title) const {
  pcre2_match_data* data = thread_match_data();
  for (const StatusRule& rule : rules_) {
    // A negative result is no match, or a limit reached (kMatchLimit, the JIT's stack): that
    // rule does not match this title; the next rules still may.
    if (pcre2_match(rule.pattern.get(), reinterpret_cast<PCRE2_SPTR>(title.data()), title.size(), 0,
                    0, data, match_context()) >= 0)
      return {rule.status, rule.agent};
  }
  return {};
}

}  // namespace backscroll::term
