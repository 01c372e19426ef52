// `backscroll status -f` against a backscrolld of the test's own: actors (sh scripts) set titles
// and ring bells on request; the command prints the state restored from each ring as one
// "initial" line (a working title in the history is never a "change"), then one line per live
// change; it picks up actors spawned later, applies a rules file, and, lapped while stopped during
// a flood in a small ring, reports one resync and then follows titles again.
#include <signal.h>

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/cli_process.hpp"

namespace backscroll::testing {
namespace {

// An actor that sets the title $1, then reads lines: "bell" rings, "flood" prints 600 kB (`yes`:
// 400000 bytes, each "\n" made "\r\n" by the terminal) and then sets the title "✳ after flood",
// any other line becomes the title.
std::vector<std::string> title_setter(const std::string& first_title) {
  return {"sh", "-c",
          "stty -echo; printf '\\033]0;%s\\007' \"$1\"; "
          "while read -r t; do case \"$t\" in "
          "bell) printf '\\007';; "
          "flood) yes | head -c 400000; printf '\\033]0;%s\\007' '✳ after flood';; "
          "*) printf '\\033]0;%s\\007' \"$t\";; esac; done",
          "sh", first_title};
}

std::vector<Json> json_lines(const std::string& out) {
  std::vector<Json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(Json::parse(line));
  }
  return lines;
}

std::vector<std::string> text_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "event status previous agent title bells" of a JSON line, for assertions that print well.
std::string summary(const Json& line) {
  const auto field = [&](const char* key) {
    const auto it = line.find(key);
    if (it == line.end()) return std::string("?");
    if (it->is_null()) return std::string("null");
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  if (field("event") == "closed") return "closed";
  return field("event") + " " + field("status") + " " + field("previous") + " " + field("agent") +
         " '" + field("title") + "' " + field("bells");
}

class StatusFollowTest : public CliTest {
 protected:
  void spawn(const std::string& actor, const std::string& first_title) {
    engine_.spawn(actor, title_setter(first_title));
    engine_.wait_output(actor, first_title);
  }
  void type_line(const std::string& actor, const std::string& line) {
    engine_.call("input", {{"actor", actor}}, line + "\r");
  }
  // `backscroll status -f ARGS...` running against the test's engine.
  std::unique_ptr<CliProcess> follow(std::vector<std::string> args) {
    args.insert(args.begin(), {"--no-autostart", "status", "-f"});
    return std::make_unique<CliProcess>(args, CliOptions{runtime_dir(), std::nullopt, {}});
  }
};

TEST_F(StatusFollowTest, PrintsTheStateRestoredFromHistoryOnceThenOneJsonLinePerChange) {
  // The actor's history ends in a working title before anyone follows it.
  spawn("agent", "⠂ Fix the tests");
  auto proc = follow({"agent", "--json"});
  proc->wait_stdout("\"event\":\"initial\"");

  type_line("agent", "✳ Fix the tests");
  proc->wait_stdout("\"status\":\"idle\",\"previous\":\"working\"");
  type_line("agent", "bell");
  proc->wait_stdout("\"bells\":1");
  type_line("agent", "[ ! ] Action Required | proj");
  proc->wait_stdout("\"status\":\"permission\"");

  // Deleting the only actor followed ends the command normally.
  EXPECT_TRUE(Succeeds(cli({"delete", "agent"})));
  const CliResult r = proc->finish();
  ASSERT_EQ(r.exit_code(), 0) << ::testing::PrintToString(r);
  EXPECT_EQ(r.err, "");

  const std::vector<Json> lines = json_lines(r.out);
  std::vector<std::string> got;
  for (const Json& line : lines) got.push_back(summary(line));
  EXPECT_EQ(got, (std::vector<std::string>{
                     "initial working null claude-code '⠂ Fix the tests' 0",
                     "change idle working claude-code '✳ Fix the tests' 0",
                     "change idle idle claude-code '✳ Fix the tests' 1",
                     "change permission idle codex '[ ! ] Action Required | proj' 1",
                     "closed",
                 }));
  ASSERT_EQ(lines.size(), 5u);
  // Every field of the format, in order; history has no time, live changes have.
  std::vector<std::string> keys;
  const auto first = nlohmann::ordered_json::parse(r.out.substr(0, r.out.find('\n')));
  for (const auto& item : first.items()) keys.push_back(item.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"actor", "event", "status", "previous", "agent", "title",
                                      "bells", "last_output_ms", "cursor", "skipped"}));
  EXPECT_EQ(lines[0]["actor"], "agent");
  EXPECT_TRUE(lines[0]["last_output_ms"].is_null());
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_TRUE(lines[i]["last_output_ms"].is_number_integer()) << lines[i].dump();
    EXPECT_GT(lines[i]["cursor"].get<std::uint64_t>(), lines[i - 1]["cursor"].get<std::uint64_t>());
    EXPECT_EQ(lines[i]["skipped"], 0);
  }
}

TEST_F(StatusFollowTest, FollowsEveryActorIncludingOnesSpawnedLater) {
  spawn("first", "◇  Ready (proj)");
  auto proc = follow({});
  proc->wait_stdout("first initial idle agent=gemini-cli bells=0 title=\"◇  Ready (proj)\"\n");

  // A new actor: its follower starts on the engine's `spawned` event. Whether its first title
  // is history by then (initial) or comes live (a change from unknown) is a race; both are right.
  spawn("second", "✳ Claude Code");
  proc->wait_stdout("title=\"✳ Claude Code\"\n");
  type_line("first", "✦  Working… (proj)");
  proc->wait_stdout(
      "first change working previous=idle agent=gemini-cli bells=0 title=\"✦  Working… (proj)\"\n");

  // Deleted, then spawned again under the same name: a new ring, a new follower.
  EXPECT_TRUE(Succeeds(cli({"delete", "second"})));
  proc->wait_stdout("second closed\n");
  spawn("second", "✳ Back again");
  proc->wait_stdout("title=\"✳ Back again\"\n");

  ::kill(proc->pid(), SIGTERM);
  const CliResult r = proc->finish();
  const std::regex second_idle(
      "second (initial idle|change idle previous=unknown) agent=claude-code bells=0 "
      "title=\"✳ (Claude Code|Back again)\"");
  int second_lines = 0;
  for (const std::string& line : text_lines(r.out)) {
    if (line.rfind("second ", 0) != 0) continue;
    ++second_lines;
    if (line == "second closed") continue;
    if (line.rfind("second initial unknown agent=- bells=0 title=\"\"", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, second_idle)) << line;
  }
  EXPECT_GE(second_lines, 3) << r.out;
}

TEST_F(StatusFollowTest, AppliesARulesFileBeforeTheBuiltInRules) {
  const std::string rules = (scratch_.path() / "rules.json").string();
  std::ofstream(rules) << R"({"rules": [
      {"agent": "mybot", "status": "working", "title": "^BUSY"}]})";
  spawn("bot", "BUSY compiling");
  auto proc = follow({"bot", "--json", "--rules", rules});
  proc->wait_stdout("\"event\":\"initial\"");
  type_line("bot", "✳ Claude Code");
  proc->wait_stdout("\"status\":\"idle\"");
  EXPECT_TRUE(Succeeds(cli({"delete", "bot"})));
  const CliResult r = proc->finish();
  ASSERT_EQ(r.exit_code(), 0) << ::testing::PrintToString(r);
  const std::vector<Json> lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(summary(lines[0]), "initial working null mybot 'BUSY compiling' 0");
  EXPECT_EQ(summary(lines[1]), "change idle working claude-code '✳ Claude Code' 0");
}

TEST_F(StatusFollowTest, RefusesAMalformedRulesFileAnUnknownActorAndRulesWithoutFollow) {
  const std::string bad = (scratch_.path() / "bad.json").string();
  std::ofstream(bad) << R"({"rules": [{"agent": "x", "status": "busy", "title": "^x"}]})";
  spawn("agent", "✳ Claude Code");

  const CliResult malformed = cli({"status", "-f", "--rules", bad});
  EXPECT_TRUE(FailsWithOneLine(malformed, 1,
                               "backscroll: bad_request: rules file " + bad +
                                   ": rule 1: 'status' must be working, idle, "
                                   "permission or unknown, got 'busy'"));
  const CliResult missing = cli({"status", "-f", "--rules", bad + ".none"});
  EXPECT_TRUE(FailsWithOneLine(missing, 1, "backscroll: io_error: rules file " + bad + ".none"));
  const CliResult unknown = cli({"status", "-f", "agent", "nosuch"});
  EXPECT_TRUE(FailsWithOneLine(unknown, 1, "backscroll: no_such_actor: no actor named 'nosuch'"));
  EXPECT_TRUE(FailsWithOneLine(cli({"status", "--rules", bad}), 2,
                               "backscroll: usage: status: --rules needs -f"));
  EXPECT_TRUE(FailsWithOneLine(cli({"status", "agent", "other"}), 2,
                               "backscroll: usage: status: one NAME at most without -f"));
  // Without -f, status is what it was.
  const CliResult plain = cli({"status", "agent", "--json"});
  ASSERT_TRUE(Succeeds(plain)) << ::testing::PrintToString(plain);
  EXPECT_EQ(Json::parse(plain.out).at(0).at("name"), "agent");
}

// A ring of 64 KiB (the smallest) and a follower stopped while the actor floods it many times
// over: when it runs again, it has been lapped.
class StatusFollowLapTest : public StatusFollowTest {
 protected:
  EngineConfig engine_config() override {
    return EngineConfig::with({"--ring-bytes", "65536", "--grace-ms", "500", "--drain-ms", "300"});
  }
};

TEST_F(StatusFollowLapTest, ALapDuringAFloodIsOneResyncAndTitlesAreFollowedAfterIt) {
  spawn("flood", "✳ before");
  auto proc = follow({"flood", "--json"});
  proc->wait_stdout("\"event\":\"initial\"");

  ASSERT_EQ(::kill(proc->pid(), SIGSTOP), 0);
  type_line("flood", "flood");
  wait_until(
      [&] {
        const auto committed = engine_.status("flood").at("committed").get<std::uint64_t>();
        return committed >= 600'000 &&
               engine_.history("flood", committed - 100).find("✳ after flood") != std::string::npos;
      },
      "the flood and the title after it");
  ASSERT_EQ(::kill(proc->pid(), SIGCONT), 0);
  proc->wait_stdout("\"event\":\"resync\"");

  type_line("flood", "⠂ after the lap");
  proc->wait_stdout("\"status\":\"working\",\"previous\":\"idle\"");
  EXPECT_TRUE(Succeeds(cli({"delete", "flood"})));
  const CliResult r = proc->finish();
  ASSERT_EQ(r.exit_code(), 0) << ::testing::PrintToString(r);

  const std::vector<Json> lines = json_lines(r.out);
  std::vector<std::string> got;
  for (const Json& line : lines) got.push_back(summary(line));
  EXPECT_EQ(got, (std::vector<std::string>{
                     "initial idle null claude-code '✳ before' 0",
                     "resync idle idle claude-code '✳ after flood' 0",
                     "change working idle claude-code '⠂ after the lap' 0",
                     "closed",
                 }));
  ASSERT_EQ(lines.size(), 4u);
  // Most of the flood was never scanned; what the ring held (at most its 64 KiB) was.
  const auto skipped = lines[1]["skipped"].get<std::uint64_t>();
  const auto resync_cursor = lines[1]["cursor"].get<std::uint64_t>();
  EXPECT_GT(skipped, 500'000u);
  EXPECT_LE(resync_cursor - lines[0]["cursor"].get<std::uint64_t>() - skipped, 65536u);
}

}  // namespace
}  // namespace backscroll::testing
