// StatusRules: the table that maps a terminal title to an agent status (docs/status-detector.md).
// An ordered list of rules, each a regular expression over the title and the agent and status it
// stands for; the first rule whose expression is found in the title decides, and a title no rule
// matches is `unknown` with no agent. Built-in defaults cover Claude Code, Codex CLI, Gemini CLI
// and Aider; a JSON rules file adds rules before them (or replaces them). Immutable once built,
// so one table may be shared by the follower threads of `status -f`.
//
// Expressions are PCRE2 (Perl syntax, with ECMAScript's \uHHHH escapes and `$` only at the end),
// compiled once (JIT where the machine has it) and matched over the title's code points: "[⠀-⣿]"
// is the braille block, and "." is one character. A title costs each rule a few hundred
// nanoseconds at most, so a program that sets titles in a loop costs the mirror thread little
// (std::wregex took 20-150 us per title no rule matched: docs/status-detector.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/compiled_pattern.hpp"
#include "shm/error.hpp"

namespace backscroll::term {

enum class AgentStatus : std::uint8_t { unknown, working, idle, permission };

std::string_view to_string(AgentStatus status) noexcept;
std::optional<AgentStatus> parse_agent_status(std::string_view name) noexcept;

struct StatusRule {
  std::string agent;  // "" when the rule recognises a status but not which program set it
  AgentStatus status = AgentStatus::unknown;
  std::string title;  // the expression as written (UTF-8)
  bool ignore_case = false;
  std::string note;  // where the pattern comes from; not used for matching
  // `title`, compiled; immutable, shared by the copies of the rule (a rules file's table holds
  // the built-in rules too), matched from any thread.
  CompiledPattern pattern;
};

// What a title says.
struct Classification {
  AgentStatus status = AgentStatus::unknown;
  std::string agent;  // "" when no rule (or an agent-less rule) matched

  bool operator==(const Classification&) const = default;
};

class StatusRules {
 public:
  // The built-in table (its JSON text is kDefaultRulesJson in status_rules.cpp).
  static const StatusRules& defaults();
  // A rules document (the format of docs/status-detector.md). `source` names it in errors
  // ("rules file x.json: rule 3: ..."). Errors: bad_request, with the rule and field at fault.
  static Result<StatusRules> parse(std::string_view json_text, std::string_view source);
  // parse() of a file's contents; io_error when it cannot be read.
  static Result<StatusRules> load(const std::string& path);

  Classification classify(std::string_view title) const;
  std::span<const StatusRule> rules() const noexcept { return rules_; }

 private:
  std::vector<StatusRule> rules_;
};

}  // namespace backscroll::term
