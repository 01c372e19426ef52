// The command line itself (docs/cli.md, "Conventions"): every command has --help, and a wrong
// command line exits 2 with one line on stderr, "backscroll: usage: ...", before anything is
// sent: no engine is started, not even the runtime directory is created.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/cli_process.hpp"

namespace backscroll::testing {
namespace {

// Every command of docs/cli.md ("Commands"), ping included.
const std::vector<std::string> kCommands = {
    "spawn",   "list",   "status",  "tail",     "send",     "resize",  "clear",  "stop",
    "restart", "delete", "restore", "history",  "snapshot", "capture", "search", "events",
    "verify",  "attach", "wait",    "shutdown", "help",     "ping"};

// A runtime directory that does not exist: a command that tried to reach (or start) an engine
// would fail on it, or create it.
class NoEngine {
 public:
  std::filesystem::path runtime_dir() const { return temp_.path() / "rt"; }
  CliResult run(const std::vector<std::string>& args, std::optional<std::string> input = {}) const {
    return run_cli(args, CliOptions{runtime_dir(), std::move(input), {}});
  }
  bool touched() const { return std::filesystem::exists(runtime_dir()); }

 private:
  TempDir temp_;
};

TEST(CliHelp, TopLevelHelpListsEveryCommandButPing) {
  NoEngine none;
  const CliResult r = none.run({"--help"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_NE(r.out.find("Usage: backscroll"), std::string::npos) << r.out;
  for (const auto& command : kCommands) {
    if (command == "ping") {
      // Diagnostic, not listed (docs/cli.md).
      EXPECT_EQ(r.out.find("\n  ping "), std::string::npos) << r.out;
      continue;
    }
    EXPECT_NE(r.out.find("\n  " + command + " "), std::string::npos)
        << "'" << command << "' missing from:\n"
        << r.out;
  }
  EXPECT_NE(r.out.find("--no-autostart"), std::string::npos) << r.out;
  EXPECT_FALSE(none.touched());
}

TEST(CliHelp, EveryCommandHasHelpThatNamesIt) {
  NoEngine none;
  for (const auto& command : kCommands) {
    SCOPED_TRACE(command);
    for (const char* flag : {"--help", "-h"}) {
      const CliResult r = none.run({command, flag});
      ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
      EXPECT_NE(r.out.find("Usage: backscroll " + command), std::string::npos) << r.out;
    }
  }
  EXPECT_FALSE(none.touched()) << "--help started an engine";
}

// Option lines show what a value is (N, CURSOR, FILE), never CLI11's parser types or ranges.
TEST(CliHelp, NoHelpShowsParserTypes) {
  NoEngine none;
  const std::vector<std::string> parser_words = {"TEXT", "INT", "UINT", "FLOAT", "BOOLEAN"};
  for (const auto& command : kCommands) {
    SCOPED_TRACE(command);
    const CliResult r = none.run({command, "--help"});
    ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("  -", 0) != 0) continue;  // option lines only
      std::istringstream words(line);
      std::string names, label;
      words >> names >> label;
      if (label.empty() || label.front() < 'A' || label.front() > 'Z') continue;  // no value
      EXPECT_EQ(line.find(" in ["), std::string::npos) << line;  // CLI11's range text
      // "CURSOR|KIND:N" names two forms; "N=16" shows a default.
      std::istringstream parts(label.substr(0, label.find('=')));
      for (std::string part; std::getline(parts, part, ':');) {
        for (const auto& word : parser_words) {
          EXPECT_NE(part, word) << line;
          EXPECT_NE(part.find(word + "|"), 0u) << line;
        }
      }
    }
  }
}

// The engine's and the bridge's help too: a name, a version, no parser types.
TEST(CliHelp, EngineAndBridgeHelpNameTheirValues) {
  const std::filesystem::path dir = std::filesystem::path(cli_binary()).parent_path();
  const auto output_of = [](const std::string& command) {
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    ::pclose(pipe);
    return out;
  };
  for (const std::string program : {"backscrolld", "backscroll-bridge"}) {
    SCOPED_TRACE(program);
    const std::string help = output_of((dir / program).string() + " --help");
    EXPECT_NE(help.find("Usage: " + program + " [OPTIONS]"), std::string::npos) << help;
    for (const char* parser_word : {" TEXT", " UINT", " INT", " in ["}) {
      EXPECT_EQ(help.find(parser_word), std::string::npos) << parser_word << " in\n" << help;
    }
    EXPECT_TRUE(std::regex_match(output_of((dir / program).string() + " --version"),
                                 std::regex(program + " [0-9]+\\.[0-9]+\\.[0-9]+\n")));
  }
}

TEST(CliHelp, VersionPrintsTheRelease) {
  NoEngine none;
  const CliResult r = none.run({"--version"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_TRUE(std::regex_match(r.out, std::regex("backscroll [0-9]+\\.[0-9]+\\.[0-9]+\n")))
      << r.out;
  EXPECT_FALSE(none.touched());
}

// `help` and `help CMD` print exactly what `--help` and `CMD --help` print.
TEST(CliHelp, HelpCommandIsDashDashHelp) {
  NoEngine none;
  const CliResult top = none.run({"help"});
  ASSERT_TRUE(Succeeds(top)) << ::testing::PrintToString(top);
  EXPECT_EQ(top.out, none.run({"--help"}).out);
  for (const auto& command : kCommands) {
    SCOPED_TRACE(command);
    const CliResult r = none.run({"help", command});
    ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
    EXPECT_EQ(r.out, none.run({command, "--help"}).out);
  }
  EXPECT_FALSE(none.touched());
}

TEST(CliHelp, HelpWinsOverMissingArguments) {
  NoEngine none;
  const CliResult r = none.run({"resize", "--help"});  // NAME, COLS, ROWS missing
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_NE(r.out.find("COLS"), std::string::npos) << r.out;
}

struct UsageCase {
  std::string name;  // the case, as the test's name
  std::vector<std::string> args;
  std::string says;  // part of the one stderr line
};

void PrintTo(const UsageCase& c, std::ostream* os) {
  *os << "backscroll";
  for (const auto& a : c.args) *os << " " << a;
}

class CliUsage : public ::testing::TestWithParam<UsageCase> {};

TEST_P(CliUsage, ExitsTwoWithOneLineAndStartsNothing) {
  NoEngine none;
  const CliResult r = none.run(GetParam().args);
  EXPECT_TRUE(FailsWithOneLine(r, 2, "backscroll: usage: "));
  EXPECT_NE(r.err.find(GetParam().says), std::string::npos) << r.err;
  EXPECT_FALSE(none.touched()) << "a usage error reached for the engine";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliUsage,
    ::testing::Values(
        // Commands and options that do not exist.
        UsageCase{"UnknownCommand", {"frobnicate"}, "unknown command 'frobnicate'"},
        UsageCase{"UnknownOption", {"--frobnicate"}, "unknown option '--frobnicate'"},
        UsageCase{"UnknownOptionOfACommand", {"list", "--bogus"}, "--bogus"},
        UsageCase{"ExtraArgument", {"list", "extra"}, "extra"},
        // Missing arguments: NAME for every command that needs one.
        UsageCase{"SpawnWithoutName", {"spawn"}, "NAME is required"},
        UsageCase{"TailWithoutName", {"tail"}, "NAME is required"},
        UsageCase{"SendWithoutName", {"send"}, "NAME is required"},
        UsageCase{"ResizeWithoutName", {"resize"}, "NAME is required"},
        UsageCase{"ClearWithoutName", {"clear"}, "NAME is required"},
        UsageCase{"StopWithoutName", {"stop"}, "NAME is required"},
        UsageCase{"RestartWithoutName", {"restart"}, "NAME is required"},
        UsageCase{"DeleteWithoutName", {"delete"}, "NAME is required"},
        UsageCase{"HistoryWithoutName", {"history", "--from", "0"}, "NAME is required"},
        UsageCase{"AttachWithoutName", {"attach"}, "NAME is required"},
        UsageCase{"ResizeWithoutRows", {"resize", "x", "10"}, "ROWS is required"},
        UsageCase{"HistoryLinesBackwards",
                  {"history", "x", "--lines", "9..3"},
                  "--lines: expected lines A..B"},
        UsageCase{"HistoryLineZero", {"history", "x", "--lines", "0"}, "--lines: expected"},
        // Sizes are 1..1000 (the engine's bounds), checked here.
        UsageCase{
            "ResizeToZeroColumns", {"resize", "x", "0", "10"}, "COLS: expected 1..1000, got 0"},
        UsageCase{
            "ResizeTo1001Rows", {"resize", "x", "10", "1001"}, "ROWS: expected 1..1000, got 1001"},
        UsageCase{"ResizeToNegativeColumns", {"resize", "x", "-5", "10"}, "got -5"},
        UsageCase{"SpawnWith1001Columns", {"spawn", "x", "--cols", "1001"}, "--cols"},
        UsageCase{"SpawnWithZeroRows", {"spawn", "x", "--rows", "0"}, "--rows"},
        // Cursors and counts are plain decimal uint64: no sign, no 0x, no overflow.
        UsageCase{"CursorWithMinusSign", {"tail", "x", "--from", "-1"}, "got -1"},
        UsageCase{"CursorWithPlusSign", {"tail", "x", "--from", "+1"}, "got +1"},
        UsageCase{"CursorInHex", {"tail", "x", "--from", "0x10"}, "got 0x10"},
        UsageCase{"CursorPast64Bits",
                  {"tail", "x", "--from", "18446744073709551616"},
                  "18446744073709551616"},
        UsageCase{"EmptyCursor", {"tail", "x", "--from", ""}, "--from: expected a decimal integer"},
        UsageCase{"CursorWithExponent", {"history", "x", "--from", "1e3"}, "got 1e3"},
        UsageCase{"NegativeEndCursor", {"history", "x", "--from", "0", "--to", "-1"}, "got -1"},
        UsageCase{"EndBeforeStart",
                  {"history", "x", "--from", "5", "--to", "3"},
                  "--to 3 is before --from 5"},
        UsageCase{"NegativeGracePeriod", {"stop", "x", "--grace-ms", "-5"}, "got -5"},
        // --env entries are K=V.
        UsageCase{"EnvWithoutEquals", {"spawn", "x", "--env", "NOEQUALS"}, "got NOEQUALS"},
        UsageCase{"EnvWithoutName", {"spawn", "x", "--env", "=v"}, "got =v"},
        // send: '-' alone, and something to send.
        UsageCase{"StdinDashAmongWords",
                  {"send", "x", "a", "-", "b"},
                  "'-' (stdin) must be the only TEXT"},
        UsageCase{"NothingToSend", {"send", "x", "-n"}, "nothing to send"},
        // attach: the spawn options need --spawn; detach keys in caret notation.
        UsageCase{"AttachSizeWithoutSpawn", {"attach", "x", "--cols", "80"}, "need --spawn"},
        UsageCase{"AttachCommandWithoutSpawn", {"attach", "x", "--", "sh"}, "need --spawn"},
        UsageCase{"DetachKeyOutsideCaretRange", {"attach", "x", "--detach-key", "^1"}, "got ^1"},
        UsageCase{"DetachKeyOfTwoCharacters", {"attach", "x", "--detach-key", "ab"}, "got ab"},
        // Every bad value: "OPTION: expected WHAT, got VALUE" (VALUE quoted only when it must be).
        UsageCase{"ScrollbackOutOfRange",
                  {"snapshot", "x", "--scrollback", "20000"},
                  "--scrollback: expected 0..10000, got 20000 (see 'backscroll snapshot --help')"},
        UsageCase{"ContextNotANumber",
                  {"search", "x", "re", "-C", "many"},
                  "--context: expected 0..1000, got many"},
        UsageCase{"NoCuts", {"verify", "x", "--cuts", "0"}, "--cuts: expected 1..1000, got 0"},
        UsageCase{"SeedNotANumber", {"verify", "x", "--seed", "abc"}, "--seed: expected a decimal"},
        UsageCase{"MalformedEpoch",
                  {"history", "x", "--from", "0", "--epoch", "zz"},
                  "--epoch: expected 16 hex digits (as status prints the epoch), got zz"},
        UsageCase{"ValueWithASpace", {"resize", "x", "1 0", "10"}, "got '1 0'"},
        UsageCase{"OptionWithoutItsValue", {"tail", "x", "-n"}, "--lines: expected a value"},
        // Common slips name the fix.
        UsageCase{"ProgramOptionWithoutDashDash",
                  {"spawn", "top2", "top", "-b"},
                  "unknown option '-b' (put `--` before the program's arguments"},
        UsageCase{"AttachProgramOptionWithoutDashDash",
                  {"attach", "x", "--spawn", "vim", "-R"},
                  "unknown option '-R' (put `--` before the program's arguments"},
        UsageCase{"SendTextWithADash",
                  {"send", "x", "ls", "-la"},
                  "unknown option '-la' (put `--` before text that starts with '-')"},
        UsageCase{"TailCountWithoutN", {"tail", "x", "5"}, "'5' (did you mean '-n 5'?)"},
        UsageCase{"TailCountAsAnOption", {"tail", "x", "-5"}, "'-5' (did you mean '-n 5'?)"},
        UsageCase{"MisspeltCommand", {"lsit"}, "unknown command 'lsit' (did you mean 'list'?)"},
        UsageCase{"MisspeltCommandWithArguments",
                  {"spwan", "x", "--", "sh"},
                  "unknown command 'spwan' (did you mean 'spawn'?)"},
        UsageCase{
            "AmbiguousPrefix", {"rest", "x"}, "unknown command 'rest' (see 'backscroll --help')"},
        UsageCase{
            "UnrelatedWord", {"zzzzzz"}, "unknown command 'zzzzzz' (see 'backscroll --help')"},
        UsageCase{"MisspeltOption",
                  {"snapshot", "x", "--at-tim", "5m"},
                  "unknown option '--at-tim' (did you mean '--at-time'?)"},
        UsageCase{"MisspeltGlobalOption",
                  {"--verison"},
                  "unknown option '--verison' (did you mean '--version'?)"},
        UsageCase{"HelpForAnUnknownCommand",
                  {"help", "lsit"},
                  "help: unknown command 'lsit' (did you mean 'list'?)"},
        UsageCase{"NoCommand", {"--no-autostart"}, "a command is required"},
        // attach needs a terminal on stdin (the test gives it /dev/null).
        UsageCase{"AttachWithoutTerminal", {"attach", "x"}, "stdin is not a terminal"},
        UsageCase{"AttachSpawnWithoutTerminal",
                  {"attach", "x", "--spawn", "--", "sh"},
                  "stdin is not a terminal"}),
    [](const ::testing::TestParamInfo<UsageCase>& param) { return param.param.name; });

TEST(CliUsage, CursorWithLeadingZerosIsDecimalNotOctal) {
  // docs/cli.md: plain decimal. "010" is ten (not octal eight, not an error), so the command
  // gets past the command line and fails on the missing engine instead (tail starts none).
  NoEngine none;
  const CliResult r = none.run({"tail", "x", "--from", "010"});
  EXPECT_TRUE(FailsWithOneLine(r, 1, "backscroll: engine_unavailable: "));
}

TEST(CliUsage, AttachWithPipedStdinIsAUsageErrorEvenWithInput) {
  NoEngine none;
  const CliResult r = none.run({"attach", "x"}, std::string("echo hi\r"));
  EXPECT_TRUE(FailsWithOneLine(r, 2, "backscroll: usage: attach: stdin is not a terminal"));
  EXPECT_FALSE(none.touched());
}

}  // namespace
}  // namespace backscroll::testing
