// The rule table of the status detector (docs/status-detector.md): what the built-in rules make
// of the titles Claude Code, Codex CLI, Gemini CLI and Aider set (working, idle, permission,
// unknown), titles they must not claim, rules files that add to or replace them, and the errors
// a malformed rules file gets: each names the file, the rule and the field at fault.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "engine/term/status_rules.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::term {
namespace {

using testing::TempDir;

struct Case {
  std::string title;
  AgentStatus status;
  std::string agent;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "'" << c.title << "' -> " << to_string(c.status) << " (" << c.agent << ")";
}

// Test names: the case's index and expected status (the title, in GetParam(), may be any text).
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return "Case" + std::to_string(info.index) + "_" + std::string(to_string(info.param.status));
}

class DefaultRules : public ::testing::TestWithParam<Case> {};

TEST_P(DefaultRules, ClassifyTheTitle) {
  const Case& c = GetParam();
  const Classification got = StatusRules::defaults().classify(c.title);
  EXPECT_EQ(to_string(got.status), to_string(c.status)) << c.title;
  EXPECT_EQ(got.agent, c.agent) << c.title;
}

// Claude Code: '✳ <task>' waiting for the user, '⠂'/'⠐ <task>' while a turn runs. Its title
// does not change at a permission prompt (the spinner stops, ✳ returns): that reads as idle.
INSTANTIATE_TEST_SUITE_P(
    ClaudeCode, DefaultRules,
    ::testing::Values(Case{"✳ Claude Code", AgentStatus::idle, "claude-code"},
                      Case{"✳ Fix the flaky login test", AgentStatus::idle, "claude-code"},
                      Case{"✳", AgentStatus::idle, "claude-code"},
                      Case{"⠂ Fix the flaky login test", AgentStatus::working, "claude-code"},
                      Case{"⠐ Fix the flaky login test", AgentStatus::working, "claude-code"},
                      Case{"⠐ Waiting for CI", AgentStatus::working,
                           "claude-code"},  // the glyph decides
                      Case{"Claude Code - action required", AgentStatus::permission, "claude-code"},
                      Case{"Claude needs your permission", AgentStatus::permission, "claude-code"},
                      Case{"claude", AgentStatus::unknown, "claude-code"}),
    case_name);

// Codex CLI: spinner frame + project while working, '[ ! ] Action Required | project' (blinking
// with '[ . ]') on approval; its idle title is the bare project name, which names nothing.
INSTANTIATE_TEST_SUITE_P(
    Codex, DefaultRules,
    ::testing::Values(Case{"⠴ testi", AgentStatus::working, "codex"},
                      Case{"⠋ my-project", AgentStatus::working, "codex"},
                      Case{"⠏", AgentStatus::working, "codex"},
                      Case{"[ ! ] Action Required | testi", AgentStatus::permission, "codex"},
                      Case{"[ . ] Action Required | testi", AgentStatus::permission, "codex"},
                      Case{"Codex done", AgentStatus::idle, "codex"},
                      Case{"codex | my-project | Ready", AgentStatus::idle, "codex"},
                      Case{"Codex working", AgentStatus::working, "codex"},
                      Case{"Codex action required", AgentStatus::permission, "codex"},
                      Case{"Codex", AgentStatus::unknown, "codex"},
                      Case{"testi", AgentStatus::unknown, ""}),
    case_name);

// Gemini CLI (computeTerminalTitle): glyph, two spaces, state, (folder), padded to 80 columns.
INSTANTIATE_TEST_SUITE_P(
    GeminiCli, DefaultRules,
    ::testing::Values(
        Case{"✋  Action Required (proj)                    ", AgentStatus::permission,
             "gemini-cli"},
        Case{"✦  Working… (proj)", AgentStatus::working, "gemini-cli"},
        Case{"✦  Reading the build files (proj)", AgentStatus::working, "gemini-cli"},
        Case{"⏲  Working… (proj)", AgentStatus::working, "gemini-cli"},
        Case{"◇  Ready (proj)                              ", AgentStatus::idle, "gemini-cli"},
        Case{"Gemini CLI (proj)                            ", AgentStatus::unknown, "gemini-cli"},
        Case{"gemini waiting for approval", AgentStatus::permission, "gemini-cli"}),
    case_name);

// Aider sets no title of its own; titles that name it (wrappers, Orca's convention) do.
INSTANTIATE_TEST_SUITE_P(
    Aider, DefaultRules,
    ::testing::Values(Case{"aider: thinking", AgentStatus::working, "aider"},
                      Case{"Aider running tests", AgentStatus::working, "aider"},
                      Case{"Aider ready", AgentStatus::idle, "aider"},
                      Case{"aider idle.", AgentStatus::idle, "aider"},
                      Case{"aider - action required", AgentStatus::permission, "aider"},
                      Case{"Aider waiting", AgentStatus::permission, "aider"},
                      Case{"aider", AgentStatus::unknown, "aider"}),
    case_name);

// Titles no rule may claim: shells, paths, words that only contain a keyword or a name.
INSTANTIATE_TEST_SUITE_P(
    NotAnAgent, DefaultRules,
    ::testing::Values(
        Case{"", AgentStatus::unknown, ""}, Case{"bash", AgentStatus::unknown, ""},
        Case{"me@host: ~/src", AgentStatus::unknown, ""},
        Case{"vim README.md", AgentStatus::unknown, ""},
        Case{"~/src/codex/ready", AgentStatus::unknown, ""},
        Case{"~/src/claude-scratch", AgentStatus::unknown, ""},
        Case{"aider.conf.yml", AgentStatus::unknown, ""},
        Case{"codex already built", AgentStatus::unknown, "codex"},  // "already" is not "ready"
        Case{"✳ is not first: ✳", AgentStatus::idle, "claude-code"},
        Case{"task ✳", AgentStatus::unknown, ""},
        Case{"⣾ Building", AgentStatus::working, ""}),  // some other spinner: working, no agent
    case_name);

TEST(StatusRules, StatusNamesRoundTrip) {
  for (const AgentStatus s :
       {AgentStatus::unknown, AgentStatus::working, AgentStatus::idle, AgentStatus::permission}) {
    EXPECT_EQ(parse_agent_status(to_string(s)), s);
  }
  EXPECT_FALSE(parse_agent_status("busy"));
  EXPECT_FALSE(parse_agent_status("Working"));
}

TEST(StatusRules, EveryBuiltInRuleHasAStatusAndAnExpression) {
  const auto rules = StatusRules::defaults().rules();
  ASSERT_GE(rules.size(), 9u);
  for (const StatusRule& r : rules) EXPECT_FALSE(r.title.empty()) << r.agent;
}

TEST(StatusRules, ACustomFileIsTriedBeforeTheBuiltInRules) {
  auto rules = StatusRules::parse(R"({
    "rules": [
      {"agent": "mybot", "status": "working", "title": "^BUSY\\b"},
      {"agent": "codex", "status": "idle", "title": "^my-project$", "note": "Codex idle here"},
      {"agent": "mybot", "status": "permission", "title": "approve\\?", "ignore_case": true}
    ]})",
                                  "test rules");
  ASSERT_TRUE(rules) << rules.error().describe();
  EXPECT_EQ(rules->classify("BUSY compiling"), (Classification{AgentStatus::working, "mybot"}));
  EXPECT_EQ(rules->classify("BUSYNESS"), (Classification{}));
  EXPECT_EQ(rules->classify("my-project"), (Classification{AgentStatus::idle, "codex"}));
  EXPECT_EQ(rules->classify("APPROVE? y/n"), (Classification{AgentStatus::permission, "mybot"}));
  // The built-in rules still apply after them.
  EXPECT_EQ(rules->classify("✳ Claude Code"), (Classification{AgentStatus::idle, "claude-code"}));
  EXPECT_EQ(rules->rules().size(), 3 + StatusRules::defaults().rules().size());
}

TEST(StatusRules, AFileWithoutDefaultsIsTheWholeTable) {
  auto rules = StatusRules::parse(R"({"version": 1, "include_defaults": false, "rules": [
      {"agent": "", "status": "idle", "title": "^\\$ $"}]})",
                                  "test rules");
  ASSERT_TRUE(rules) << rules.error().describe();
  ASSERT_EQ(rules->rules().size(), 1u);
  EXPECT_EQ(rules->classify("$ "), (Classification{AgentStatus::idle, ""}));
  EXPECT_EQ(rules->classify("✳ Claude Code"), (Classification{}));
}

TEST(StatusRules, ExpressionsWorkOnCharactersNotBytes) {
  // A range of code points, and "." as one (three-byte) character.
  auto rules = StatusRules::parse(R"({"include_defaults": false, "rules": [
      {"agent": "a", "status": "working", "title": "^[⠀-⣿]$"},
      {"agent": "b", "status": "idle", "title": "^\\u2733.$"}]})",
                                  "test rules");
  ASSERT_TRUE(rules) << rules.error().describe();
  EXPECT_EQ(rules->classify("⠴"), (Classification{AgentStatus::working, "a"}));
  EXPECT_EQ(rules->classify("✳✳"), (Classification{AgentStatus::idle, "b"}));
  EXPECT_EQ(rules->classify("✳xx"), (Classification{}));
}

// The ECMAScript forms a rules file written for std::wregex may use keep their meaning (the
// rules now run on PCRE2): `$` only at the very end, `[^]` any character, \uHHHH (above).
TEST(StatusRules, EcmaScriptFormsKeepTheirMeaning) {
  auto rules = StatusRules::parse(R"({"include_defaults": false, "rules": [
      {"agent": "a", "status": "working", "title": "^x$"},
      {"agent": "b", "status": "idle", "title": "^y[^]z"}]})",
                                  "test rules");
  ASSERT_TRUE(rules) << rules.error().describe();
  EXPECT_EQ(rules->classify("x"), (Classification{AgentStatus::working, "a"}));
  EXPECT_EQ(rules->classify("x\n"), (Classification{}));  // Perl's `$` would match here
  EXPECT_EQ(rules->classify("y\u2733z"), (Classification{AgentStatus::idle, "b"}));
  EXPECT_EQ(rules->classify("yz"), (Classification{}));
}

// A rule that backtracks without end on a title gives up on it (counts as not matching) and the
// next rules are still tried: a rules file cannot stall the mirror thread (this title would
// take about 2^40 steps to the end).
TEST(StatusRules, ARuleThatBacktracksWithoutEndGivesUpOnThatTitleOnly) {
  auto rules = StatusRules::parse(R"({"include_defaults": false, "rules": [
      {"agent": "slow", "status": "working", "title": "^(a|aa|a?a)+$"},
      {"agent": "next", "status": "idle", "title": "a"}]})",
                                  "test rules");
  ASSERT_TRUE(rules) << rules.error().describe();
  EXPECT_EQ(rules->classify(std::string(40, 'a') + "b"),
            (Classification{AgentStatus::idle, "next"}));
  EXPECT_EQ(rules->classify("aaa"), (Classification{AgentStatus::working, "slow"}));
}

// A malformed document is refused with bad_request, and the message names the source, the rule
// (1-based) and what is wrong with it.
struct Malformed {
  std::string json;
  std::string expected;  // a substring of the message
};

void PrintTo(const Malformed& m, std::ostream* os) { *os << m.json; }

class MalformedRules : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedRules, AreRefusedWithAClearMessage) {
  auto rules = StatusRules::parse(GetParam().json, "rules file my.json");
  ASSERT_FALSE(rules) << GetParam().json;
  EXPECT_EQ(rules.error().code, Errc::bad_request);
  EXPECT_NE(rules.error().message.find("rules file my.json: "), std::string::npos)
      << rules.error().message;
  EXPECT_NE(rules.error().message.find(GetParam().expected), std::string::npos)
      << rules.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    StatusRules, MalformedRules,
    ::testing::Values(
        Malformed{"{\"rules\": [", "not valid JSON"},
        Malformed{"[]", "expected a JSON object with a 'rules' array"},
        Malformed{"{}", "expected a 'rules' array"},
        Malformed{R"({"rules": {}})", "expected a 'rules' array"},
        Malformed{R"({"rule": []})", "unknown field 'rule'"},
        Malformed{R"({"version": 2, "rules": []})", "'version' must be 1, got 2"},
        Malformed{R"({"include_defaults": "no", "rules": []})", "'include_defaults' must be true"},
        Malformed{R"({"rules": ["x"]})", "rule 1: expected an object"},
        Malformed{R"({"rules": [{"status": "idle", "title": "x"}]})", "rule 1: missing 'agent'"},
        Malformed{R"({"rules": [{"agent": "a", "title": "x"}]})", "rule 1: missing 'status'"},
        Malformed{R"({"rules": [{"agent": "a", "status": "idle"}]})", "rule 1: missing 'title'"},
        Malformed{R"({"rules": [{"agent": 1, "status": "idle", "title": "x"}]})",
                  "rule 1: 'agent' must be a string"},
        Malformed{R"({"rules": [{"agent": "a", "status": "idle", "title": "x"},
                            {"agent": "a", "status": "busy", "title": "x"}]})",
                  "rule 2: 'status' must be working, idle, permission or unknown, got 'busy'"},
        Malformed{R"({"rules": [{"agent": "a", "status": "idle", "title": "(x"}]})",
                  "rule 1: 'title' is not a valid regular expression (missing closing "
                  "parenthesis at offset 2): (x"},
        Malformed{R"({"rules": [{"agent": "a", "status": "idle", "titel": "x"}]})",
                  "rule 1: unknown field 'titel'"},
        Malformed{
            R"({"rules": [{"agent": "a", "status": "idle", "title": "x", "ignore_case": 1}]})",
            "rule 1: 'ignore_case' must be true or false"}));

TEST(StatusRules, LoadReadsAFileAndNamesItInErrors) {
  TempDir dir;
  const std::string good = (dir.path() / "good.json").string();
  const std::string bad = (dir.path() / "bad.json").string();
  std::ofstream(good) << R"({"rules": [{"agent": "x", "status": "idle", "title": "^X$"}]})";
  std::ofstream(bad) << R"({"rules": [{"agent": "x", "status": "sleepy", "title": "^X$"}]})";

  auto loaded = StatusRules::load(good);
  ASSERT_TRUE(loaded) << loaded.error().describe();
  EXPECT_EQ(loaded->classify("X"), (Classification{AgentStatus::idle, "x"}));

  auto refused = StatusRules::load(bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::bad_request);
  EXPECT_NE(refused.error().message.find("rules file " + bad + ": rule 1: 'status'"),
            std::string::npos)
      << refused.error().message;

  auto missing = StatusRules::load((dir.path() / "none.json").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::io_error);
  EXPECT_NE(missing.error().message.find("none.json"), std::string::npos);
}

}  // namespace
}  // namespace backscroll::term
