// The commands of docs/cli.md against a backscrolld of the test's own: what each prints, what
// it does to the actor (checked through the engine's own status and history), and the one-line
// errors (exit 1) the engine's refusals turn into.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "shm/ring_writer.hpp"
#include "tests/engine/other_user.hpp"
#include "tests/engine/pattern.hpp"
#include "tests/tools/cli_process.hpp"

namespace backscroll::testing {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A program that prints `text` and then waits to be stopped (exec: no shell left to report).
std::vector<std::string> print_then_wait(const std::string& text) {
  return {"sh", "-c", "printf '" + text + "'; exec sleep 1000"};
}

// The actor commands run against the test's engine.
class CliCommandTest : public CliTest {
 protected:
  // `spawn NAME -- ARGV...`, which must succeed; returns the actor's pid.
  std::int64_t spawn(const std::string& actor, const std::vector<std::string>& argv,
                     std::vector<std::string> options = {}) {
    std::vector<std::string> args{"spawn", actor};
    args.insert(args.end(), options.begin(), options.end());
    args.push_back("--");
    args.insert(args.end(), argv.begin(), argv.end());
    const CliResult r = cli(args);
    EXPECT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
    const Json pid = engine_.status(actor).at("pid");  // null once the program ended
    return pid.is_null() ? 0 : pid.get<std::int64_t>();
  }
  // A CLI process that keeps running (tail -f) against the test's engine.
  std::unique_ptr<CliProcess> start(const std::vector<std::string>& args) {
    return std::make_unique<CliProcess>(args, CliOptions{runtime_dir(), std::nullopt, {}});
  }
  std::uint64_t committed(const std::string& actor) {
    return engine_.status(actor).at("committed").get<std::uint64_t>();
  }
};

// ---- spawn, list, status -------------------------------------------------------------------

class CliSpawn : public CliCommandTest {};

TEST_F(CliSpawn, PrintsNameSessionPidAndCursorAndListShowsTheActor) {
  const CliResult r = cli({"spawn", "w", "--", "sleep", "1000"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(r.out, m, std::regex("w session 1 pid ([0-9]+) cursor 0\n")))
      << r.out;
  const Json status = engine_.status("w");
  EXPECT_EQ(m[1].str(), std::to_string(status.at("pid").get<std::int64_t>()));
  EXPECT_EQ(status.at("argv"), Json({"sleep", "1000"}));

  spawn("done", {"true"});
  engine_.wait_sealed("done");

  const CliResult list = cli({"list"});
  ASSERT_TRUE(Succeeds(list)) << ::testing::PrintToString(list);
  const auto rows = lines(list.out);
  ASSERT_EQ(rows.size(), 3u) << list.out;
  EXPECT_EQ(words(rows[0]),
            (std::vector<std::string>{"NAME", "STATE", "SESSION", "PID", "COMMAND"}));
  // In the engine's order; find each by name.
  std::map<std::string, std::vector<std::string>> by_name;
  for (std::size_t i = 1; i < rows.size(); ++i) by_name[words(rows[i]).at(0)] = words(rows[i]);
  // COMMAND: the foreground program while it runs, else what it was spawned with.
  EXPECT_EQ(by_name["w"],
            (std::vector<std::string>{"w", "running", "1", m[1].str(), "sleep", "1000"}));
  EXPECT_EQ(by_name["done"], (std::vector<std::string>{"done", "exited(0)", "1", "-", "true"}));
}

// The program gets the caller's environment (not the engine's), BACKSCROLL_ACTOR, and with
// --env-clear only what --env names.
TEST_F(CliSpawn, PassesTheCallersEnvironmentNotTheEngines) {
  ::setenv("BS_FROM_CALLER", "caller value", 1);
  const std::string show = R"(printf '%s|%s|%s\n' "$BS_FROM_CALLER" "$BACKSCROLL_ACTOR" "$TERM")";
  spawn("inherits", {"sh", "-c", show});
  spawn("cleared", {"/bin/sh", "-c", show}, {"--env-clear", "--env", "BS_FROM_CALLER=given"});
  spawn("listed", {"/usr/bin/env"}, {"--env-clear"});
  ::unsetenv("BS_FROM_CALLER");
  EXPECT_EQ(cli({"tail", "inherits", "--until-exit"}).out,
            "caller value|inherits|xterm-256color\r\n");
  EXPECT_EQ(cli({"tail", "cleared", "--until-exit"}).out, "given|cleared|xterm-256color\r\n");
  // Nothing of the engine's environment: only what backscroll sets (BACKSCROLL_SESSION: the
  // token that marks the session's processes, docs/architecture.md "Process trees").
  EXPECT_TRUE(std::regex_match(cli({"tail", "listed", "--until-exit"}).out,
                               std::regex("BACKSCROLL_ACTOR=listed\r\nTERM=xterm-"
                                          "256color\r\nBACKSCROLL_SESSION=[0-9a-f]{32}\r\n")));
}

TEST_F(CliSpawn, GivesTheProgramItsSizeDirectoryAndEnvironment) {
  const fs::path dir = scratch_.path();
  spawn("env", {"sh", "-c", R"sh(printf '%s|%s|%s\n' "$BS_GREETING" "$(pwd)" "$(stty size)")sh"},
        {"--cols", "120", "--rows", "40", "--cwd", dir.string(), "--env", "BS_GREETING=a=b c"});
  const CliResult tail = cli({"tail", "env", "--until-exit"});
  ASSERT_TRUE(Succeeds(tail)) << ::testing::PrintToString(tail);
  EXPECT_EQ(tail.out, "a=b c|" + dir.string() + "|40 120\r\n");
}

// Without a program, spawn starts the user's login shell: $SHELL -l.
TEST_F(CliSpawn, WithoutAProgramStartsTheLoginShell) {
  ::setenv("SHELL", "/bin/sh", 1);
  const CliResult r = cli({"spawn", "login"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(engine_.status("login").at("argv"), Json({"/bin/sh", "-l"}));
}

// --cwd-of starts where the other actor's foreground program is now (its shell after a cd),
// not where that actor was spawned; --rm deletes an actor whose program succeeded.
TEST_F(CliSpawn, CwdOfStartsWhereTheOtherActorsShellIsAndRmCleansUp) {
  const fs::path dir = scratch_.path();
  fs::create_directory(dir / "moved");
  spawn("shell", {"sh", "-i"}, {"--cwd", dir.string()});
  engine_.call("input", {{"actor", "shell"}}, "cd moved\r");
  wait_until(
      [&] {
        const Json f = engine_.status("shell").value("foreground", Json());
        return f.is_object() && f.value("cwd", "") == (dir / "moved").string();
      },
      "the shell's new directory");
  // Not spawn(): the actor may be gone before its status could be read.
  ASSERT_TRUE(Succeeds(cli({"spawn", "here", "--cwd-of", "shell", "--rm", "--", "pwd"})));
  wait_until([&] { return cli({"list"}).out.find("here") == std::string::npos; },
             "the actor whose program succeeded to be deleted");
  std::ifstream in(engine_.places().deleted_dir() / "here.scrollback", std::ios::binary);
  const std::string scrollback{std::istreambuf_iterator<char>(in), {}};
  EXPECT_NE(scrollback.find((dir / "moved").string()), std::string::npos) << scrollback;
  EXPECT_FALSE(Succeeds(cli({"spawn", "x", "--cwd-of", "nobody", "--", "true"})));
}

TEST_F(CliSpawn, RelativeDirectoryIsMadeAbsoluteAndTheDefaultIsTheCurrentOne) {
  // The engine runs in /, so the CLI resolves directories against its own.
  fs::create_directory(scratch_.path() / "sub");
  const CliOptions in_scratch{runtime_dir(), std::nullopt, scratch_.path()};
  const CliResult rel =
      run_cli({"--no-autostart", "spawn", "rel", "--cwd", "sub", "--", "pwd"}, in_scratch);
  ASSERT_TRUE(Succeeds(rel)) << ::testing::PrintToString(rel);
  EXPECT_EQ(engine_.status("rel").at("cwd"), (scratch_.path() / "sub").string());

  const CliResult def = run_cli({"--no-autostart", "spawn", "def", "--", "pwd"}, in_scratch);
  ASSERT_TRUE(Succeeds(def)) << ::testing::PrintToString(def);
  EXPECT_EQ(engine_.status("def").at("cwd"), scratch_.path().string());
  EXPECT_EQ(cli({"tail", "def", "--until-exit"}).out, scratch_.path().string() + "\r\n");
}

class CliStatus : public CliCommandTest {};

TEST_F(CliStatus, JsonIsAnArrayWithEveryStableFieldOfTheStatusObject) {
  const auto argv = print_then_wait("abc");
  const std::int64_t pid = spawn("j", argv, {"--cols", "90", "--rows", "30", "--cwd", "/"});
  engine_.wait_output("j", "abc");

  const CliResult r = cli({"status", "j", "--json"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  const Json actors = Json::parse(r.out);
  ASSERT_TRUE(actors.is_array()) << r.out;
  ASSERT_EQ(actors.size(), 1u) << r.out;
  const Json& a = actors[0];
  ASSERT_TRUE(a.is_object()) << r.out;
  // docs/protocol.md, "Status object": names, types, and here the values.
  for (const char* key : {"name", "state", "epoch", "nonce", "cwd"}) {
    EXPECT_TRUE(a.contains(key) && a[key].is_string()) << key << " in " << r.out;
  }
  for (const char* key : {"pid", "session", "floor", "committed", "cols", "rows", "capacity",
                          "header_fd", "data_fd", "input_queued"}) {
    EXPECT_TRUE(a.contains(key) && a[key].is_number_integer()) << key << " in " << r.out;
  }
  ASSERT_TRUE(a.contains("argv") && a["argv"].is_array()) << r.out;
  ASSERT_TRUE(a.contains("paused") && a["paused"].is_boolean()) << r.out;
  ASSERT_TRUE(a.contains("attachments") && a["attachments"].is_array()) << r.out;
  for (const char* key : {"title", "agent_status"}) {
    EXPECT_TRUE(a.contains(key) && a[key].is_string()) << key << " in " << r.out;
  }
  // Null while the program runs: how it ended.
  EXPECT_TRUE(a.contains("exit_code") && a["exit_code"].is_null()) << r.out;
  EXPECT_TRUE(a.contains("term_signal") && a["term_signal"].is_null()) << r.out;
  ASSERT_TRUE(a.contains("sessions") && a["sessions"].is_array()) << r.out;

  EXPECT_EQ(a["name"], "j");
  EXPECT_EQ(a["state"], "running");
  EXPECT_EQ(a["pid"], pid);
  EXPECT_EQ(a["session"], 1);
  EXPECT_TRUE(std::regex_match(a["epoch"].get<std::string>(), std::regex("[0-9a-f]{16}")))
      << a["epoch"];
  EXPECT_EQ(a["floor"], 0);
  EXPECT_EQ(a["committed"], 3);
  EXPECT_EQ(a["cols"], 90);
  EXPECT_EQ(a["rows"], 30);
  EXPECT_GT(a["capacity"].get<std::int64_t>(), 0);
  EXPECT_NE(a["header_fd"], a["data_fd"]);
  EXPECT_GE(a["header_fd"].get<std::int64_t>(), 0);
  EXPECT_TRUE(std::regex_match(a["nonce"].get<std::string>(), std::regex("[0-9a-f]{32}")))
      << a["nonce"];
  EXPECT_EQ(a["argv"], Json(argv));
  EXPECT_EQ(a["cwd"], "/");
  EXPECT_EQ(a["input_queued"], 0);
  EXPECT_EQ(a["paused"], false);

  ASSERT_EQ(a["sessions"].size(), 1u) << r.out;
  const Json& s = a["sessions"][0];
  for (const char* key : {"id", "start", "end", "pid", "exit_code", "term_signal"}) {
    EXPECT_TRUE(s.contains(key) && s[key].is_number_integer()) << key << " in " << r.out;
  }
  EXPECT_TRUE(s.contains("sealed") && s["sealed"].is_boolean()) << r.out;
  EXPECT_EQ(s["id"], 1);
  EXPECT_EQ(s["start"], 0);
  EXPECT_EQ(s["end"], 3);  // committed while live
  EXPECT_EQ(s["pid"], pid);
  EXPECT_EQ(s["sealed"], false);

  // The option may come first (docs/cli.md's jq example); without NAME, every actor.
  const CliResult first = cli({"status", "--json", "j"});
  ASSERT_TRUE(Succeeds(first)) << ::testing::PrintToString(first);
  EXPECT_EQ(Json::parse(first.out).at(0).at("name"), "j");
  spawn("k", {"true"});
  engine_.wait_sealed("k");
  const CliResult all = cli({"status", "--json"});
  ASSERT_TRUE(Succeeds(all)) << ::testing::PrintToString(all);
  const Json both = Json::parse(all.out);
  ASSERT_EQ(both.size(), 2u) << all.out;
  const Json& k = both[0]["name"] == "k" ? both[0] : both[1];
  EXPECT_TRUE(k["pid"].is_null()) << all.out;  // no program: null, never 0
  EXPECT_EQ(k["exit_code"], 0) << all.out;
  EXPECT_TRUE(k["term_signal"].is_null()) << all.out;

  // --engine: the whole reply, with the engine's memory against its budget; the table and
  // the detail show the same figures.
  const CliResult whole = cli({"status", "--json", "--engine"});
  ASSERT_TRUE(Succeeds(whole)) << ::testing::PrintToString(whole);
  const Json reply = Json::parse(whole.out);
  ASSERT_EQ(reply.at("actors").size(), 2u) << whole.out;
  const std::uint64_t reserved = reply.at("memory").at("reserved");
  EXPECT_EQ(reserved,
            reply.at("actors")[0].at("memory").at("reserved").at("total").get<std::uint64_t>() +
                reply.at("actors")[1].at("memory").at("reserved").at("total").get<std::uint64_t>());
  EXPECT_GE(reply.at("memory").at("budget").get<std::uint64_t>(), reserved);
  const CliResult table = cli({"status"});
  ASSERT_TRUE(Succeeds(table)) << ::testing::PrintToString(table);
  EXPECT_NE(table.out.find("MEMORY"), std::string::npos) << table.out;
  char totals[64];
  std::snprintf(totals, sizeof totals, "memory: %.1f MiB reserved of the ",
                static_cast<double>(reserved) / (1u << 20));
  EXPECT_NE(table.out.find(totals), std::string::npos) << table.out;
  const CliResult detail = cli({"status", "j"});
  EXPECT_NE(detail.out.find(" MiB used of "), std::string::npos) << detail.out;
  const CliResult usage = cli({"status", "--engine"});
  EXPECT_EQ(usage.exit_code(), 2) << ::testing::PrintToString(usage);
  EXPECT_NE(usage.err.find("--engine needs --json"), std::string::npos) << usage.err;
}

TEST_F(CliStatus, JsonListsEachAttachmentWithItsRoleSizeAndAge) {
  spawn("a", print_then_wait("abc"));
  engine_.wait_output("a", "abc");
  PtyCli controller({"attach", "a"}, runtime_dir(), 100, 30);
  controller.wait_for_screen("abc");
  PtyCli viewer({"attach", "a", "-r"}, runtime_dir(), 70, 20);
  viewer.wait_for_screen("abc");

  const CliResult r = cli({"status", "a", "--json"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  const Json attachments = Json::parse(r.out).at(0).at("attachments");
  ASSERT_EQ(attachments.size(), 2u) << r.out;
  const Json& c = attachments[0];  // in the order they attached
  EXPECT_EQ(c["role"], "controller");
  EXPECT_EQ(c["owner"], true);
  EXPECT_EQ(c["cols"], 100);
  EXPECT_EQ(c["rows"], 30);
  const Json& v = attachments[1];
  EXPECT_EQ(v["role"], "viewer");
  EXPECT_EQ(v["owner"], false);
  EXPECT_TRUE(v["cols"].is_null() && v["rows"].is_null()) << r.out;  // viewers have no say
  for (const Json& one : attachments) {
    EXPECT_TRUE(one["attachment"].is_number_unsigned()) << r.out;
    EXPECT_GT(one["attached_ms"].get<std::int64_t>(), 1'700'000'000'000) << r.out;  // wall clock
    EXPECT_GE(one["age_ms"].get<std::int64_t>(), 0) << r.out;
  }
  EXPECT_LT(c["attachment"].get<std::uint64_t>(), v["attachment"].get<std::uint64_t>());
}

// ---- --json on the commands that print one result (docs/cli.md, "JSON output") --------------

class CliJson : public CliCommandTest {
 protected:
  // Runs `args` and parses its stdout, which must be exactly one line of JSON.
  Json json(const std::vector<std::string>& args) {
    const CliResult r = cli(args);
    EXPECT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    return Json::parse(r.out);
  }
};

TEST_F(CliJson, SpawnRestartStopAndDeleteReportTheirResult) {
  const Json spawned =
      json({"spawn", "w", "--json", "--", "sh", "-c", "printf abc; exec sleep 1000"});
  EXPECT_EQ(spawned["name"], "w");
  EXPECT_EQ(spawned["session"], 1);
  EXPECT_EQ(spawned["pid"], engine_.status("w").at("pid"));
  EXPECT_EQ(spawned["cursor"], 0);
  EXPECT_EQ(spawned["epoch"], engine_.status("w").at("epoch"));
  engine_.wait_output("w", "abc");

  const Json stopped = json({"stop", "w", "--json"});
  EXPECT_EQ(stopped, Json({{"name", "w"},
                           {"session", 1},
                           {"end", 3},
                           {"exit_code", nullptr},
                           {"term_signal", SIGHUP},
                           {"already_stopped", false}}));
  Json again = stopped;
  again["already_stopped"] = true;
  EXPECT_EQ(json({"stop", "w", "--json"}), again);

  const Json restarted = json({"restart", "w", "--json"});
  EXPECT_EQ(restarted["name"], "w");
  EXPECT_EQ(restarted["session"], 2);
  EXPECT_EQ(restarted["cursor"], 3);  // where session 1 ended
  EXPECT_TRUE(restarted["pid"].is_number_integer());

  EXPECT_EQ(json({"resize", "w", "100", "40", "--json"}),
            Json({{"name", "w"}, {"cols", 100}, {"rows", 40}}));
  EXPECT_EQ(json({"clear", "w", "--json"})["name"], "w");

  const Json list = json({"list", "--json"});
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["name"], "w");
  EXPECT_EQ(list[0]["state"], "running");
  EXPECT_EQ(list[0]["pid"], restarted["pid"]);

  const Json deleted = json({"delete", "w", "--json"});
  EXPECT_EQ(deleted["name"], "w");
  EXPECT_EQ(deleted["deleted"], true);
  EXPECT_TRUE(deleted["snapshot"].is_string()) << deleted;
  EXPECT_TRUE(deleted["snapshot_error"].is_null()) << deleted;
  EXPECT_EQ(json({"list", "--json"}), Json::array());
}

TEST_F(CliJson, ListSaysHowEachFinishedProgramEnded) {
  spawn("seven", {"sh", "-c", "exit 7"});
  spawn("killed", {"sh", "-c", "kill -KILL $$"});
  engine_.wait_sealed("seven");
  engine_.wait_sealed("killed");
  const Json list = json({"list", "--json"});
  ASSERT_EQ(list.size(), 2u) << list;
  for (const Json& a : list) {
    EXPECT_EQ(a["state"], "idle");
    EXPECT_TRUE(a["pid"].is_null()) << a;
    if (a["name"] == "seven") {
      EXPECT_EQ(a["exit_code"], 7);
      EXPECT_TRUE(a["term_signal"].is_null()) << a;
    } else {
      EXPECT_TRUE(a["exit_code"].is_null()) << a;
      EXPECT_EQ(a["term_signal"], SIGKILL);
    }
  }
  // People read the same words `list` shows.
  const auto rows = lines(cli({"list"}).out);
  ASSERT_EQ(rows.size(), 3u);
  std::map<std::string, std::string> state;
  for (std::size_t i = 1; i < rows.size(); ++i) state[words(rows[i]).at(0)] = words(rows[i]).at(1);
  EXPECT_EQ(state["seven"], "exited(7)");
  EXPECT_EQ(state["killed"], "killed(SIGKILL)");
}

TEST_F(CliJson, VerifyReportsItsVerdict) {
  spawn("v", {"sh", "-c", "printf 'line one\\nline two\\n'; exec sleep 1000"});
  engine_.wait_output("v", "line two");
  const Json verdict = json({"verify", "v", "--json", "--cuts", "4", "--seed", "7"});
  EXPECT_EQ(verdict["name"], "v");
  EXPECT_EQ(verdict["ok"], true);
  EXPECT_EQ(verdict["seed"], 7);
  EXPECT_EQ(verdict["from"], 0);
  EXPECT_EQ(verdict["to"], committed("v"));
  EXPECT_TRUE(verdict["failure"].is_null()) << verdict;
  EXPECT_GE(verdict["snapshots"].get<int>(), 1) << verdict;
}

TEST_F(CliStatus, DetailShowsTheFieldsAndTheSessionsTable) {
  const std::int64_t pid = spawn("d", print_then_wait("abc"), {"--cols", "90", "--rows", "30"});
  engine_.wait_output("d", "abc");
  const CliResult r = cli({"status", "d"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  const std::string p = std::to_string(pid);
  for (const std::string& line : std::vector<std::string>{
           "name      d", "state     running", "pid       " + p, "session   1", "size      90x30",
           "cursors   oldest 0, ring floor 0, committed 3",
           "command   sh -c 'printf '\\''abc'\\''; exec sleep 1000'", "input     0 bytes queued"}) {
    EXPECT_NE(("\n" + r.out).find("\n" + line + "\n"), std::string::npos) << line << " in\n"
                                                                          << r.out;
  }
  EXPECT_NE(r.out.find("\nmemory    "), std::string::npos) << r.out;  // used of reserved, in MiB
  const auto rows = lines(r.out);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(words(rows[rows.size() - 2]),
            (std::vector<std::string>{"SESSION", "START", "END", "PID", "EXIT", "SEALED"}));
  EXPECT_EQ(words(rows.back()), (std::vector<std::string>{"1", "0", "3", p, "-", "no"}));

  const CliResult all = cli({"status"});
  ASSERT_TRUE(Succeeds(all)) << ::testing::PrintToString(all);
  const auto table = lines(all.out);
  ASSERT_EQ(table.size(), 4u) << all.out;  // the table, a blank line, the memory totals
  EXPECT_EQ(words(table[0]), (std::vector<std::string>{"NAME", "STATE", "SESSION", "PID", "SIZE",
                                                       "FLOOR", "COMMITTED", "MEMORY", "COMMAND"}));
  EXPECT_EQ(words(table[1]).at(0), "d");
  EXPECT_EQ(words(table[1]).at(8), "MiB");  // what d reserves, e.g. "37.4 MiB"
  EXPECT_EQ(table[3].rfind("memory: ", 0), 0u) << all.out;
}

// ---- top -----------------------------------------------------------------------------------

class CliTop : public CliCommandTest {};

TEST_F(CliTop, FramesShowEachActorsRateLagsMemoryAndReaders) {
  spawn("t", {"cat"});
  const auto tail = start({"tail", "t", "-f"});
  wait_until([&] { return !engine_.status("t").at("readers").empty(); }, "tail to announce");

  const auto sender = std::async(std::launch::async, [&] {
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      (void)cli({"send", "t", "line " + std::to_string(i)});
    }
  });
  const CliResult frames = cli({"top", "-n", "2", "-d", "0.4"});
  sender.wait();
  ASSERT_TRUE(Succeeds(frames)) << ::testing::PrintToString(frames);
  std::vector<std::string> rows;
  for (const std::string& row : lines(frames.out)) {
    if (row.rfind("t ", 0) == 0) rows.push_back(row);
  }
  ASSERT_EQ(rows.size(), 2u) << frames.out;  // one row per frame
  EXPECT_EQ(words(rows[0]).at(2), "-") << "no rate before a second frame";
  EXPECT_EQ(words(rows[1]).at(3).substr(words(rows[1]).at(3).size() - 2), "/s") << frames.out;
  EXPECT_NE(frames.out.find("\ntail "), std::string::npos) << frames.out;  // the readers table
  EXPECT_NE(frames.out.find("MIRROR LAG"), std::string::npos);

  const CliResult json = cli({"top", "-n", "1", "--json"});
  ASSERT_TRUE(Succeeds(json)) << ::testing::PrintToString(json);
  const Json frame = Json::parse(json.out);
  EXPECT_GT(frame.at("memory").at("budget").get<std::uint64_t>(), 0u);
  const Json& t = frame.at("actors").at(0);
  EXPECT_EQ(t.at("name"), "t");
  EXPECT_EQ(t.at("committed"), committed("t"));
  EXPECT_GT(t.at("memory").at("reserved").get<std::uint64_t>(), 0u);
  EXPECT_EQ(t.at("readers").at(0).at("name"), "tail");

  EXPECT_EQ(cli({"top", "-d", "0.01"}).exit_code(), 2);
  EXPECT_EQ(cli({"top", "-n", "0"}).exit_code(), 2);
  ASSERT_TRUE(Succeeds(cli({"delete", "t"})));
  EXPECT_TRUE(Succeeds(tail->finish()));
}

TEST_F(CliTop, OnATerminalItRedrawsInPlaceUntilQ) {
  spawn("t", {"cat"});
  PtyCli top({"top", "-d", "0.2"}, runtime_dir(), 100, 30);
  top.wait_for_screen("MIRROR LAG");
  top.wait_for("backscroll top", 2);  // redrawn
  top.type("q");
  top.wait_for("\x1b[?25h\x1b[?1049l");  // the cursor and the user's screen back
  const int status = top.wait_exit();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(top.mode().c_lflag & ICANON, top.original_mode().c_lflag & ICANON);
}

// ---- tail ----------------------------------------------------------------------------------

class CliTail : public CliCommandTest {};

TEST_F(CliTail, UntilExitPrintsExactlyTheSessionOutputAndExitsWithTheProgramsStatus) {
  spawn("t", {"sh", "-c", R"(printf "a\nb\n"; exit 3)"});
  const CliResult r = cli({"tail", "t", "--until-exit"});
  EXPECT_EQ(r.exit_code(), 3) << ::testing::PrintToString(r);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "a\r\nb\r\n");  // the PTY's ONLCR, byte for byte
  // A signal: 128 + N, as a shell says.
  spawn("k", {"sh", "-c", "printf x; kill -TERM $$"});
  EXPECT_EQ(cli({"tail", "k", "--until-exit"}).exit_code(), 128 + SIGTERM);
}

TEST_F(CliTail, UntilExitFollowsARunningProgramToItsEnd) {
  spawn("u", {"sh", "-c", R"(read line; printf "got %s\n" "$line")"});
  const auto tail = start({"tail", "u", "--until-exit"});
  ASSERT_TRUE(Succeeds(cli({"send", "u", "go"})));
  const CliResult r = tail->finish();
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "go\r\ngot go\r\n");  // the terminal's echo, then the program's line
}

TEST_F(CliTail, FromStartsAtThatCursorInDecimal) {
  spawn("f", {"sh", "-c", "printf 0123456789abcdef"});
  engine_.wait_sealed("f");
  EXPECT_EQ(cli({"tail", "f"}).out, "0123456789abcdef");
  EXPECT_EQ(cli({"tail", "f", "--from", "0"}).out, "0123456789abcdef");
  EXPECT_EQ(cli({"tail", "f", "--from", "4"}).out, "456789abcdef");
  EXPECT_EQ(cli({"tail", "f", "--from", "010"}).out, "abcdef");  // ten, not octal eight
  const CliResult end = cli({"tail", "f", "--from", "16"});
  EXPECT_TRUE(Succeeds(end)) << ::testing::PrintToString(end);
  EXPECT_EQ(end.out, "");
  EXPECT_TRUE(
      FailsWithOneLine(cli({"tail", "f", "--from", "17"}), 1, "backscroll: cursor_in_future: "));
}

TEST_F(CliTail, FollowWritesNewOutputAndEndsWithExitZeroWhenTheActorIsDeleted) {
  spawn("g", {"cat"});
  const auto tail = start({"tail", "g", "-f"});
  ASSERT_TRUE(Succeeds(cli({"send", "g", "first"})));
  tail->wait_stdout("first\r\nfirst\r\n");
  ASSERT_TRUE(Succeeds(cli({"send", "g", "second"})));
  tail->wait_stdout("second\r\nsecond\r\n");
  const CliResult del = cli({"delete", "g"});
  ASSERT_TRUE(Succeeds(del)) << ::testing::PrintToString(del);
  const CliResult r = tail->finish();
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "first\r\nfirst\r\nsecond\r\nsecond\r\n");
}

// tail -f announces itself as a reader (at most once a second), so status and top show it.
TEST_F(CliTail, FollowAnnouncesItselfAsAReaderWithItsPid) {
  spawn("a", {"cat"});
  const auto tail = start({"tail", "a", "-f"});
  ASSERT_TRUE(Succeeds(cli({"send", "a", "hello"})));
  tail->wait_stdout("hello\r\nhello\r\n");
  wait_until([&] { return !engine_.status("a").at("readers").empty(); }, "tail to announce");
  const Json reader = engine_.status("a").at("readers")[0];
  EXPECT_EQ(reader.at("name"), "tail");
  EXPECT_EQ(reader.at("pid"), tail->pid());
  wait_until([&] { return engine_.status("a").at("readers")[0].at("lag_bytes") == 0; },
             "tail's report to reach the committed cursor");
  ASSERT_TRUE(Succeeds(cli({"delete", "a"})));
  EXPECT_TRUE(Succeeds(tail->finish()));
}

TEST_F(CliTail, FollowGetsWhatTheProgramPrintsWhileADeleteStopsIt) {
  spawn("h",
        {"sh", "-c", "trap 'echo goodbye; exit 0' HUP; echo ready; while :; do sleep 1; done"});
  const auto tail = start({"tail", "h", "-f"});
  tail->wait_stdout("ready\r\n");
  ASSERT_TRUE(Succeeds(cli({"delete", "h"})));
  const CliResult r = tail->finish();
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  // (sh may report its sleep's "Hangup" in between.)
  EXPECT_EQ(r.out.rfind("ready\r\n", 0), 0u) << r.out;
  EXPECT_TRUE(r.out.ends_with("goodbye\r\n"))
      << "the output after SIGHUP is part of the stream: " << r.out;
}

// ---- send ----------------------------------------------------------------------------------

class CliSend : public CliCommandTest {};

TEST_F(CliSend, TextAndEnterReachTheProgram) {
  spawn("c", {"cat"});
  const CliResult r = cli({"send", "c", "hello-send"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "");
  // Cooked mode: the terminal echoes the line, then cat prints it.
  engine_.wait_output("c", "hello-send\r\nhello-send\r\n");
  ASSERT_TRUE(Succeeds(cli({"send", "c", "two", "words"})));
  engine_.wait_output("c", "hello-send\r\nhello-send\r\ntwo words\r\ntwo words\r\n");
}

// --when-idle types once the program is quiet (cat waits for a line), and with --timeout on a
// program that never stops printing fails with timed_out, having typed nothing.
TEST_F(CliSend, WhenIdleWaitsForAQuietProgramAndATimeoutTypesNothing) {
  spawn("c", {"cat"});
  ASSERT_TRUE(Succeeds(cli({"send", "c", "typed-when-idle", "--when-idle"})));
  engine_.wait_output("c", "typed-when-idle\r\ntyped-when-idle\r\n");
  spawn("chatty", {"sh", "-c", "while :; do echo chat; sleep 0.05; done"});
  engine_.wait_output("chatty", "chat");
  const CliResult r = cli({"send", "chatty", "never-typed", "--when-idle", "--timeout", "1"});
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_NE(r.err.find("timed_out"), std::string::npos) << r.err;
  EXPECT_EQ(engine_.history("chatty").find("never-typed"), std::string::npos);
  EXPECT_EQ(cli({"send", "chatty", "x", "--timeout", "1"}).exit_code(), 2);  // needs --when-idle
}

TEST_F(CliSend, DashSendsStdinVerbatimAndOptionsShapeTheText) {
  // A raw, silent terminal: the program sees exactly the bytes that were sent, in order.
  const std::string stdin_bytes = "line one\nline\ttwo\r\n\x01 $HOME 'q' \\ end";
  const std::string bracketed = "\x1b[200~P\x1b[201~";  // send --bracketed -n P
  const std::string entered = "Z\r";                    // send Z
  const std::string expected = stdin_bytes + bracketed + entered;
  const fs::path file = scratch_.path() / "got";
  spawn("v", {"sh", "-c",
              "stty raw -echo; printf ready; head -c " + std::to_string(expected.size()) + " > " +
                  file.string() + "; printf done"});
  engine_.wait_output("v", "ready");

  const CliResult r = cli({"send", "v", "-"}, stdin_bytes);
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  ASSERT_TRUE(Succeeds(cli({"send", "v", "--bracketed", "-n", "P"})));
  ASSERT_TRUE(Succeeds(cli({"send", "v", "Z"})));
  engine_.wait_output("v", "done");
  EXPECT_EQ(read_text(file), expected);
}

// ---- history -------------------------------------------------------------------------------

class CliHistory : public CliCommandTest {};

TEST_F(CliHistory, WritesExactlyTheBytesToStdoutOrToAPrivateFile) {
  spawn("h", {"sh", "-c", R"(printf "one\ntwo\n\033[1mbold\033[0m\n")"});
  engine_.wait_sealed("h");
  const CliResult tail = cli({"tail", "h"});
  ASSERT_TRUE(Succeeds(tail));
  ASSERT_EQ(tail.out, "one\r\ntwo\r\n\x1b[1mbold\x1b[0m\r\n");

  const CliResult out = cli({"history", "h", "--from", "0"});
  ASSERT_TRUE(Succeeds(out)) << ::testing::PrintToString(out);
  EXPECT_EQ(out.out, tail.out);
  EXPECT_EQ(cli({"history", "h", "--from", "0", "-o", "-"}).out, tail.out);
  EXPECT_EQ(cli({"history", "h", "--from", "5", "--to", "8"}).out, tail.out.substr(5, 3));

  const fs::path file = scratch_.path() / "h.log";
  const CliResult to_file = cli({"history", "h", "--from", "0", "-o", file.string()});
  ASSERT_TRUE(Succeeds(to_file)) << ::testing::PrintToString(to_file);
  EXPECT_EQ(to_file.out, "");
  EXPECT_EQ(read_text(file), tail.out);
  EXPECT_EQ(mode_of(file), 0600u);

  // An existing file is truncated.
  write_text(file, std::string(1000, '#'));
  ASSERT_TRUE(Succeeds(cli({"history", "h", "--from", "3", "--output", file.string()})));
  EXPECT_EQ(read_text(file), tail.out.substr(3));

  // An error leaves no file behind.
  const fs::path none = scratch_.path() / "none.log";
  EXPECT_TRUE(FailsWithOneLine(cli({"history", "nope", "--from", "0", "-o", none.string()}), 1,
                               "backscroll: no_such_actor: "));
  EXPECT_TRUE(FailsWithOneLine(cli({"history", "h", "--from", "99", "-o", none.string()}), 1,
                               "backscroll: cursor_in_future: "));
  EXPECT_FALSE(fs::exists(none));
}

TEST_F(CliHistory, WithoutFromWritesEverythingRetained) {
  spawn("all", {"sh", "-c", R"(printf "one\ntwo\n")"});
  engine_.wait_sealed("all");
  const CliResult r = cli({"history", "all"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "one\r\ntwo\r\n");
  // After a clear the floor moved: the whole range starts there, no cursor_expired.
  ASSERT_TRUE(Succeeds(cli({"clear", "all"})));
  ASSERT_TRUE(Succeeds(cli({"restart", "all"})));
  engine_.wait_sealed("all");
  const CliResult after = cli({"history", "all"});
  ASSERT_TRUE(Succeeds(after)) << ::testing::PrintToString(after);
  EXPECT_EQ(after.out, "one\r\ntwo\r\n");  // the second session's bytes only
}

TEST_F(CliHistory, LinesSelectsARangeOfLines) {
  spawn("l", {"sh", "-c", "for i in 1 2 3 4 5 6; do echo line$i; done; printf tail"});
  engine_.wait_sealed("l");
  EXPECT_EQ(cli({"history", "l", "--lines", "2..3"}).out, "line2\r\nline3\r\n");
  EXPECT_EQ(cli({"history", "l", "--lines", "-2.."}).out, "line6\r\ntail");
  EXPECT_EQ(cli({"history", "l", "--lines", "..-6"}).out, "line1\r\nline2\r\n");
  EXPECT_EQ(cli({"history", "l", "--lines", "7"}).out, "tail");
  EXPECT_EQ(cli({"history", "l", "--lines", "40..50"}).out, "");
  // Counted within the cursor range asked for.
  EXPECT_EQ(cli({"history", "l", "--from", "7", "--lines", "1"}).out, "line2\r\n");
}

TEST_F(CliHistory, JsonPrintsTheRangeOnStderrOrOnStdoutWithAFile) {
  spawn("m", {"sh", "-c", R"(printf "abc\n")"});
  engine_.wait_sealed("m");
  const CliResult r = cli({"history", "m", "--json"});
  ASSERT_EQ(r.exit_code(), 0) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "abc\r\n");
  const Json meta = Json::parse(r.err);
  EXPECT_EQ(meta["name"], "m");
  EXPECT_EQ(meta["from"], 0);
  EXPECT_EQ(meta["to"], 5);
  EXPECT_EQ(meta["bytes"], 5);
  EXPECT_EQ(meta["epoch"], engine_.status("m").at("epoch"));
  EXPECT_EQ(meta["gaps"], Json::array());
  const fs::path file = scratch_.path() / "m.log";
  const CliResult to_file = cli({"history", "m", "--json", "--from", "2", "-o", file.string()});
  ASSERT_TRUE(Succeeds(to_file)) << ::testing::PrintToString(to_file);
  EXPECT_EQ(Json::parse(to_file.out)["from"], 2);
  EXPECT_EQ(to_file.err, "");
  EXPECT_EQ(read_text(file), "c\r\n");
}

// ---- reload ----------------------------------------------------------------------------------

TEST_F(CliCommandTest, ReloadListsWhatChangedAndWhatWaitsForARestart) {
  EXPECT_EQ(cli({"reload"}).out,
            "reloaded " + engine_.places().settings_path().string() + "\n  nothing changed\n");
  fs::create_directories(engine_.places().settings_path().parent_path());
  write_text(engine_.places().settings_path(),
             "snapshot:\n  scrollback_lines: 9\nterminal_transcript:\n  persist: true\n");
  const CliResult r = cli({"reload"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_NE(r.out.find("  snapshot.scrollback_lines: 512 -> 9\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  terminal_transcript.persist: false -> true (at the next engine start"),
            std::string::npos)
      << r.out;
  const Json json = Json::parse(cli({"reload", "--json"}).out);
  EXPECT_TRUE(json["applied"].empty()) << json;  // applied already
  EXPECT_EQ(json["needs_restart"].size(), 1u) << json;
  write_text(engine_.places().settings_path(), "retention_days: soon\n");
  EXPECT_TRUE(
      FailsWithOneLine(cli({"reload"}), 1,
                       "backscroll: bad_request: " + engine_.places().settings_path().string() +
                           " line 1: retention_days: expected a whole number"));
}

// ---- wait ------------------------------------------------------------------------------------

class CliWait : public CliCommandTest {};

TEST_F(CliWait, ExitWaitsForTheProgramAndExitsWithItsStatus) {
  spawn("r", {"sh", "-c", "read x; exit 7"});
  const auto wait = start({"wait", "r", "--exit"});
  ASSERT_TRUE(Succeeds(cli({"send", "r", "go"})));
  const CliResult r = wait->finish();
  EXPECT_EQ(r.exit_code(), 7) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out + r.err, "");
  // Already over: at once, with the status it ended with.
  spawn("k", {"sh", "-c", "kill -KILL $$"});
  engine_.wait_sealed("k");
  EXPECT_EQ(cli({"wait", "k", "--exit"}).exit_code(), 128 + SIGKILL);
}

TEST_F(CliWait, MatchLooksOnlyAtOutputAfterNowAndPrintsTheLine) {
  // "ready" is already on the screen; the wait is for the next one, which has no newline.
  spawn("m", {"sh", "-c", R"(echo old ready; read x; printf "\033[1mnew ready\033[0m> "; read y)"});
  engine_.wait_output("m", "old ready");
  // The cursor before acting: whatever the program prints after it counts, even if it comes
  // before `wait` has started.
  const std::string before = std::to_string(committed("m"));
  ASSERT_TRUE(Succeeds(cli({"send", "m", "go"})));
  const auto wait =
      start({"wait", "m", "--match", "READY>", "-i", "--timeout", "20", "--from", before});
  const CliResult r = wait->finish();
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "new ready> \n");  // plain text, as search prints it
}

TEST_F(CliWait, IdleWithoutAnAgentIsNoOutputForTheQuietTime) {
  spawn("q", {"sh", "-c", "printf x; exec sleep 1000"});
  engine_.wait_output("q", "x");
  const CliResult r = cli({"wait", "q", "--idle", "--quiet", "0.2", "--timeout", "20"});
  EXPECT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
}

TEST_F(CliWait, IdleWithAnAgentFollowsItsStatusNotTheQuiet) {
  // An agent that keeps printing while idle, and one that is silent while working.
  const std::string busy_idle =
      R"(printf '\033]0;✳ Claude Code\007'; while :; do printf .; sleep 0.05; done)";
  const std::string quiet_working = R"(printf '\033]0;⠂ Fix the tests\007'; exec sleep 1000)";
  spawn("idle", {"sh", "-c", busy_idle});
  spawn("working", {"sh", "-c", quiet_working});
  const CliResult idle = cli({"wait", "idle", "--idle", "--quiet", "60", "--timeout", "20"});
  EXPECT_TRUE(Succeeds(idle)) << ::testing::PrintToString(idle);
  wait_until([&] { return engine_.status("working").at("agent_status") == "working"; },
             "the working title to be read");
  const CliResult working =
      cli({"wait", "working", "--idle", "--quiet", "0.1", "--timeout", "0.6"});
  EXPECT_TRUE(
      FailsWithOneLine(working, 124, "backscroll: timed_out: working: not over after 0.6 s"));
}

TEST_F(CliWait, AProgramThatEndsFirstFailsWithoutExit) {
  spawn("e", {"sh", "-c", "read x; exit 0"});
  const std::string before = std::to_string(committed("e"));
  ASSERT_TRUE(Succeeds(cli({"send", "e", "go"})));
  const auto wait = start({"wait", "e", "--match", "never printed", "--from", before});
  EXPECT_TRUE(FailsWithOneLine(wait->finish(), 1, "backscroll: not_running: e's program ended"));
}

TEST_F(CliWait, UsageErrors) {
  spawn("u", {"sh", "-c", "exec sleep 1000"});
  EXPECT_TRUE(
      FailsWithOneLine(cli({"wait", "u"}), 2, "backscroll: usage: wait: say what to wait for"));
  EXPECT_TRUE(FailsWithOneLine(cli({"wait", "u", "--match", "("}), 2,
                               "backscroll: usage: wait: --match: bad pattern"));
  EXPECT_TRUE(FailsWithOneLine(cli({"wait", "u", "--idle", "--timeout", "0"}), 2,
                               "backscroll: usage: --timeout: expected seconds"));
  EXPECT_TRUE(FailsWithOneLine(cli({"wait", "nobody", "--exit"}), 1, "backscroll: no_such_actor"));
  EXPECT_TRUE(FailsWithOneLine(cli({"wait", "u", "--exit", "--from", "0"}), 2,
                               "backscroll: usage: wait: --from goes with --match"));
  EXPECT_TRUE(FailsWithOneLine(cli({"wait", "u", "--match", "x", "--from", "999999"}), 1,
                               "backscroll: cursor_in_future"));
}

class CliSnapshot : public CliCommandTest {};

TEST_F(CliSnapshot, WritesTheScreenBytesAndJsonMetadata) {
  spawn("s", {"sh", "-c", R"(printf "\033]2;my title\007first\nsecond\n"; exec sleep 60)"});
  engine_.wait_output("s", "second");
  // The mirror may still be behind the committed cursor: ask until it shows the second line.
  CliResult bytes;
  for (int i = 0; i < 100; ++i) {
    bytes = cli({"snapshot", "s"});
    if (bytes.out.find("second") != std::string::npos) break;
  }
  ASSERT_TRUE(Succeeds(bytes)) << ::testing::PrintToString(bytes);
  EXPECT_NE(bytes.out.find("\x1b]2;my title\x1b\\"), std::string::npos);
  EXPECT_NE(bytes.out.find("first"), std::string::npos);

  const fs::path file = scratch_.path() / "s.ans";
  const CliResult meta = cli({"snapshot", "s", "--scrollback", "0", "--json", "-o", file.string()});
  ASSERT_TRUE(Succeeds(meta)) << ::testing::PrintToString(meta);
  const Json j = Json::parse(meta.out);
  EXPECT_EQ(j.at("format"), "snapshot_v1");
  EXPECT_EQ(j.at("cols"), 80);
  EXPECT_EQ(j.at("rows"), 24);
  EXPECT_EQ(j.at("epoch"), engine_.status("s").at("epoch"));
  EXPECT_LE(j.at("cursor").get<std::uint64_t>(), committed("s"));
  EXPECT_EQ(j.at("bytes").get<std::size_t>(), read_text(file).size());
  EXPECT_EQ(mode_of(file), 0600u);

  // --json without -o: only the metadata on stdout.
  const CliResult only = cli({"snapshot", "s", "--json"});
  EXPECT_EQ(only.out.find("second"), std::string::npos);
  EXPECT_TRUE(Json::accept(only.out)) << only.out;

  EXPECT_TRUE(FailsWithOneLine(cli({"snapshot", "nope"}), 1, "backscroll: no_such_actor: "));
  EXPECT_EQ(cli({"snapshot", "s", "--scrollback", "10001"}).exit_code(), 2);
}

TEST_F(CliSnapshot, AtAPastCursorEventOrTimeItShowsTheScreenAsItWasThen) {
  spawn("p", {"sh", "-c",
              R"(printf "before
]133;A$ "; read x; printf "[2Jafter
"; exec sleep 60)"});
  engine_.wait_output("p", "$ ");
  ASSERT_TRUE(Succeeds(cli({"send", "p", "go"})));
  engine_.wait_output("p", "after");
  wait_until(
      [&] {
        return engine_.call("events", {{"actor", "p"}, {"kinds", {"prompt"}}})
                   .header.at("events")
                   .size() == 1;
      },
      "the prompt event");
  // At the prompt the screen still showed "before"; now it shows "after" only.
  const CliResult then = cli({"snapshot", "p", "--at", "prompt:-1"});
  ASSERT_TRUE(Succeeds(then)) << ::testing::PrintToString(then);
  EXPECT_NE(then.out.find("before"), std::string::npos);
  EXPECT_EQ(then.out.find("after"), std::string::npos);
  const CliResult json = cli({"snapshot", "p", "--at", "3", "--json"});
  ASSERT_TRUE(Succeeds(json)) << ::testing::PrintToString(json);
  const Json j = Json::parse(json.out);
  EXPECT_EQ(j.at("cursor"), 3);
  EXPECT_EQ(j.at("keyframe"), 0);
  EXPECT_EQ(j.at("replayed_bytes"), 3);
  const CliResult now = cli({"snapshot", "p", "--at-time", "2099-01-01T00:00:00Z"});
  ASSERT_TRUE(Succeeds(now)) << ::testing::PrintToString(now);
  EXPECT_NE(now.out.find("after"), std::string::npos);

  EXPECT_EQ(cli({"snapshot", "p", "--at", "yesterday"}).exit_code(), 2);
  EXPECT_EQ(cli({"snapshot", "p", "--at-time", "yesterday"}).exit_code(), 2);
  EXPECT_EQ(cli({"snapshot", "p", "--at", "3", "--at-time", "1m"}).exit_code(), 2);
  EXPECT_TRUE(FailsWithOneLine(cli({"snapshot", "p", "--at", "99999999"}), 1,
                               "backscroll: cursor_in_future: "));
  EXPECT_TRUE(
      FailsWithOneLine(cli({"snapshot", "p", "--at", "title:-1"}), 1, "backscroll: bad_request: "));
}

TEST_F(CliSnapshot, VerifyChecksTheContractOnTheActorsOutput) {
  spawn(
      "v",
      {"sh", "-c",
       R"(i=0; while [ $i -lt 300 ]; do printf "\033[3%dmline %d\033[m\t\xe4\xb8\xad\n" $((i % 8)) $i; i=$((i+1)); done; printf "\033[2;10r\033[?1h"; exec sleep 60)"});
  engine_.wait_output("v", "line 299");
  const CliResult ok = cli({"verify", "v", "--cuts", "8", "--seed", "7"});
  EXPECT_TRUE(Succeeds(ok)) << ::testing::PrintToString(ok);
  EXPECT_EQ(ok.out.rfind("verify v: OK, 8 snapshots over ", 0), 0u) << ok.out;
  EXPECT_NE(ok.out.find("seed 7"), std::string::npos);

  spawn("img", {"sh", "-c", R"(printf "\033Pq#0~~\033\\done\n"; exec sleep 60)"});
  engine_.wait_output("img", "done");
  const CliResult img = cli({"verify", "img", "--cuts", "4", "--seed", "1"});
  EXPECT_TRUE(Succeeds(img)) << ::testing::PrintToString(img);
  EXPECT_NE(img.out.find("raw_replay (dcs_sixel)"), std::string::npos) << img.out;

  EXPECT_TRUE(FailsWithOneLine(cli({"verify", "nope"}), 1, "backscroll: no_such_actor: "));
  EXPECT_EQ(cli({"verify", "v", "--cuts", "0"}).exit_code(), 2);
}

// An engine whose rings are as small as they get (64 KiB), to lap them.
class CliSmallRing : public CliCommandTest {
 protected:
  EngineConfig engine_config() override {
    return EngineConfig::with({"--ring-bytes", "65536", "--grace-ms", "500", "--drain-ms", "300"});
  }
  // Prints 300000 'x' and then "end", more than the ring holds; waits until it is sealed.
  void lap(const std::string& actor) {
    spawn(actor, {"sh", "-c", R"(head -c 300000 /dev/zero | tr '\0' x; printf end)"});
    engine_.wait_sealed(actor);
    ASSERT_EQ(committed(actor), 300003u);
    ASSERT_GT(engine_.status(actor).at("floor").get<std::uint64_t>(), 0u);
  }
};

TEST_F(CliSmallRing, HistoryOfOverwrittenBytesIsCursorExpiredWithTheOldestCursor) {
  ASSERT_NO_FATAL_FAILURE(lap("big"));
  const CliResult r = cli({"history", "big", "--from", "0"});
  ASSERT_TRUE(FailsWithOneLine(r, 1, "backscroll: cursor_expired: "));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("oldest retained cursor ([0-9]+)"))) << r.err;
  const std::uint64_t oldest = std::stoull(m[1].str());
  EXPECT_GT(oldest, 0u);
  EXPECT_LE(oldest, 300003u - 3);

  const CliResult rest = cli({"history", "big", "--from", m[1].str()});
  ASSERT_TRUE(Succeeds(rest)) << ::testing::PrintToString(rest);
  EXPECT_EQ(rest.out, std::string(300000 - oldest, 'x') + "end");
  // One byte before it is gone too.
  EXPECT_TRUE(FailsWithOneLine(cli({"history", "big", "--from", std::to_string(oldest - 1)}), 1,
                               "backscroll: cursor_expired: "));
}

TEST_F(CliSmallRing, TailFromAnOverwrittenCursorWarnsOnceAndGoesOnAtTheOldest) {
  ASSERT_NO_FATAL_FAILURE(lap("big"));
  const CliResult r = cli({"tail", "big", "--from", "0"});
  EXPECT_EQ(r.exit_code(), 0) << ::testing::PrintToString(r);
  std::smatch m;
  ASSERT_TRUE(
      std::regex_match(r.err, m, std::regex("backscroll: tail: lapped, skipped ([0-9]+) bytes\n")))
      << r.err;
  const std::uint64_t skipped = std::stoull(m[1].str());
  EXPECT_EQ(r.out, std::string(300000 - skipped, 'x') + "end");
  // Without --from: the oldest retained cursor, no warning.
  const CliResult plain = cli({"tail", "big"});
  ASSERT_TRUE(Succeeds(plain)) << ::testing::PrintToString(plain);
  EXPECT_EQ(plain.out, r.out);
}

// Persistence on and a small ring, so history of an ended actor comes from its transcript.
class CliDamagedTranscript : public CliCommandTest {
 protected:
  EngineConfig engine_config() override {
    EngineConfig config =
        EngineConfig::with({"--ring-bytes", "65536", "--grace-ms", "500", "--drain-ms", "300"});
    config.settings_yaml = "terminal_transcript:\n  persist: true\n";
    return config;
  }
  static std::string pattern(std::uint64_t from, std::uint64_t to) {
    std::string out(to - from, '\0');
    Pattern(7, /*crlf=*/false).fill(from, out);
    return out;
  }
};

// A segment damaged while the engine runs (a disk error, a tampered file): history writes what
// precedes the gap and exits 1 with data_lost and the gap's range; --skip-damaged writes all the
// rest and lists the gap; status and the log know it from then on.
TEST_F(CliDamagedTranscript, HistoryStopsAtAGapOrSkipsItAndStatusListsIt) {
  constexpr std::uint64_t kTotal = 6'000'000;  // two segments (4 MiB each), under retention
  spawn("log", {child_binary(), "pattern", "7", std::to_string(kTotal), "raw"});
  engine_.wait_sealed("log");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(engine_.places().transcripts_dir() / "log")) {
    if (e.path().extension() == ".seg") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 2u);
  {
    std::fstream f(files[1], std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(500'000);
    f.write("\xde\xad\xbe\xef", 4);
  }
  EventStream events(engine_.places());

  const CliResult stopped = cli({"history", "log", "--from", "0"});
  EXPECT_EQ(stopped.exit_code(), 1) << ::testing::PrintToString(stopped);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      stopped.err, m,
      std::regex(
          "backscroll: data_lost: cursors ([0-9]+)\\.\\.([0-9]+) are lost \\(damaged record\\)\n")))
      << stopped.err;
  const std::uint64_t from = std::stoull(m[1].str()), to = std::stoull(m[2].str());
  EXPECT_LT(from, to);
  EXPECT_EQ(stopped.out, pattern(0, from));

  const CliResult skipped = cli({"history", "log", "--from", "0", "--skip-damaged"});
  EXPECT_EQ(skipped.exit_code(), 0) << ::testing::PrintToString(skipped);
  EXPECT_EQ(skipped.err, "backscroll: history: skipped cursors " + m[1].str() + ".." + m[2].str() +
                             " are lost (damaged record)\n");
  EXPECT_EQ(skipped.out.size(), kTotal - (to - from));
  EXPECT_TRUE(skipped.out == pattern(0, from) + pattern(to, kTotal)) << "the bytes around the gap";

  const Json damaged = engine_.status("log").at("transcript").at("damaged");
  EXPECT_EQ(damaged, Json::parse("[{\"from\": " + m[1].str() + ", \"to\": " + m[2].str() +
                                 ", \"reason\": \"damaged record\"}]"));
  EXPECT_NE(engine_.log().find("transcript lost cursors " + m[1].str()), std::string::npos);
  // Reported once, when the first read found it.
  const Json event = events.wait_for("damaged", "log");
  EXPECT_EQ(event.at("from"), from);
  EXPECT_EQ(event.at("to"), to);
  EXPECT_EQ(event.at("reason"), "damaged record");
}

// An engine that releases a stopped actor's ring at once (its tail stays in the cache).
class CliReleasedRing : public CliCommandTest {
 protected:
  EngineConfig engine_config() override {
    return EngineConfig::with({"--release-ms", "1", "--grace-ms", "500", "--drain-ms", "300"});
  }
};

TEST_F(CliReleasedRing, TailAndHistoryOfAStoppedActorComeFromTheCache) {
  spawn("done", {"sh", "-c", "printf 'all of it'"});
  engine_.wait_sealed("done");
  wait_until([&] { return engine_.status("done").at("floor") == committed("done"); },
             "the ring to be released");
  EXPECT_EQ(cli({"tail", "done"}).out, "all of it");
  EXPECT_EQ(cli({"tail", "done", "--from", "4"}).out, "of it");
  EXPECT_EQ(cli({"history", "done", "--from", "0"}).out, "all of it");
}

TEST_F(CliCommandTest, HistoryWithAnotherEpochIsRefused) {
  spawn("e", {"sh", "-c", "printf epoch-check"});
  engine_.wait_sealed("e");
  const std::string epoch = engine_.status("e").at("epoch");
  EXPECT_EQ(cli({"history", "e", "--from", "0", "--epoch", epoch}).out, "epoch-check");
  EXPECT_TRUE(FailsWithOneLine(cli({"history", "e", "--from", "0", "--epoch", "00000000000000aa"}),
                               1, "backscroll: wrong_epoch: "));
}

// ---- capture, tail -n ----------------------------------------------------------------------

class CliCapture : public CliCommandTest {
 protected:
  // 40 numbered lines (line 3 in red) on a 30x10 screen: history holds lines 1-31, the screen
  // lines 32-40 and the empty line the cursor is on.
  void SetUp() override {
    CliCommandTest::SetUp();
    spawn("c",
          {"sh", "-c",
           R"(i=1; while [ $i -le 40 ]; do if [ $i = 3 ]; then printf '\033[31mline 3\033[m\n'; )"
           R"(else printf 'line %d\n' $i; fi; i=$((i+1)); done; exec sleep 60)"},
          {"--cols", "30", "--rows", "10"});
    engine_.wait_output("c", "line 40\r\n");
    wait_until(
        [&] {
          return cli({"capture", "c"}).out.find("line 40") != std::string::npos;
        },
        "the mirror to show line 40");
  }
  static std::string numbered(int from, int to) {
    std::string out;
    for (int i = from; i <= to; ++i) out += "line " + std::to_string(i) + "\n";
    return out;
  }
};

TEST_F(CliCapture, NumbersLinesAsTmuxDoes) {
  const CliResult screen = cli({"capture", "c", "-p"});
  ASSERT_TRUE(Succeeds(screen)) << ::testing::PrintToString(screen);
  EXPECT_EQ(screen.out, numbered(32, 40) + "\n");  // the 10 rows; the last one empty
  EXPECT_EQ(cli({"capture", "c", "-S", "-5", "-E", "-1"}).out, numbered(27, 31));
  EXPECT_EQ(cli({"capture", "c", "-S", "-", "-E", "2"}).out, numbered(1, 34));
  EXPECT_EQ(cli({"capture", "c", "-S", "-100", "-E", "-30"}).out, numbered(1, 2));  // clamped
  EXPECT_EQ(cli({"capture", "c", "-S", "8"}).out, "line 40\n\n");
  // Colours only with -e, reset at the end of the line.
  EXPECT_EQ(cli({"capture", "c", "-S", "-29", "-E", "-29"}).out, "line 3\n");
  EXPECT_EQ(cli({"capture", "c", "-S", "-29", "-E", "-29", "-e"}).out, "\x1b[0;31mline 3\x1b[0m\n");
  // At a past cursor: before any output, ten empty rows.
  EXPECT_EQ(cli({"capture", "c", "--at", "0"}).out, std::string(10, '\n'));

  EXPECT_EQ(cli({"capture", "c", "-S", "x"}).exit_code(), 2);
  EXPECT_EQ(cli({"capture", "c", "-E", "--5"}).exit_code(), 2);
  EXPECT_TRUE(FailsWithOneLine(cli({"capture", "nobody"}), 1, "backscroll: no_such_actor: "));
}

TEST_F(CliCapture, TailLinesPrintsTheLastLinesThenFollowsTheRawOutput) {
  const CliResult last = cli({"tail", "c", "-n", "3"});
  ASSERT_TRUE(Succeeds(last)) << ::testing::PrintToString(last);
  EXPECT_EQ(last.out, numbered(38, 40));
  EXPECT_EQ(cli({"tail", "c", "-n", "200"}).out, numbered(1, 40));
  EXPECT_EQ(cli({"tail", "c", "-n", "3", "--from", "0"}).exit_code(), 2);
}

TEST_F(CliCapture, SearchPrintsEachMatchingLineWithItsCursor) {
  // Each line is "line N\r\n" (N < 10: 8 bytes, else 9); line 3 is coloured (+8 bytes).
  const auto cursor_of = [](int n) {
    std::uint64_t c = 0;
    for (int i = 1; i < n; ++i) c += (i < 10 ? 8 : 9) + (i == 3 ? 8 : 0);
    return std::to_string(c);
  };
  const CliResult found = cli({"search", "c", "line 3$"});
  ASSERT_TRUE(Succeeds(found)) << ::testing::PrintToString(found);
  EXPECT_EQ(found.out, cursor_of(3) + ":line 3\n");  // the colour is not in the text
  EXPECT_EQ(
      cli({"search", "c", "^line 1[0-2]$"}).out,
      cursor_of(10) + ":line 10\n" + cursor_of(11) + ":line 11\n" + cursor_of(12) + ":line 12\n");
  // Context, grep style; a range; a count; case.
  EXPECT_EQ(
      cli({"search", "c", "line 20$", "-C", "1"}).out,
      cursor_of(19) + "-line 19\n" + cursor_of(20) + ":line 20\n" + cursor_of(21) + "-line 21\n");
  EXPECT_EQ(cli({"search", "c", "line", "--from", cursor_of(39), "--to", cursor_of(40)}).out,
            cursor_of(39) + ":line 39\n");
  EXPECT_EQ(cli({"search", "c", "line", "-m", "1"}).out, "0:line 1\n");
  EXPECT_EQ(cli({"search", "c", "LINE 40", "-i"}).out, cursor_of(40) + ":line 40\n");
  const CliResult json = cli({"search", "c", "line 4$", "--json"});
  ASSERT_TRUE(Succeeds(json));
  const Json match = Json::parse(json.out);
  EXPECT_EQ(match.at("cursor"), std::stoull(cursor_of(4)));
  EXPECT_EQ(match.at("end"), std::stoull(cursor_of(5)));
  EXPECT_EQ(match.at("line"), "line 4");
  EXPECT_EQ(match.at("match"), (Json{{"start", 0}, {"end", 6}}));
  // Nothing: exit 1 and no output; a bad pattern or actor: exit 2 with one line.
  const CliResult none = cli({"search", "c", "no such text"});
  EXPECT_EQ(none.exit_code(), 1);
  EXPECT_EQ(none.out, "");
  EXPECT_TRUE(
      FailsWithOneLine(cli({"search", "c", "("}), 2, "backscroll: usage: search: bad pattern"));
  EXPECT_TRUE(FailsWithOneLine(cli({"search", "nobody", "x"}), 2, "backscroll: no_such_actor: "));
}

TEST_F(CliCommandTest, TailLinesWithFollowGoesOnWithTheOutputAfterThem) {
  spawn("t", {"cat"});
  ASSERT_TRUE(Succeeds(cli({"send", "t", "one"})));
  engine_.wait_output("t", "one\r\none\r\n");
  wait_until([&] { return cli({"tail", "t", "-n", "1"}).out == "one\n"; }, "the mirror");
  const auto follow = start({"tail", "t", "-n", "1", "-f"});
  follow->wait_stdout("one\n");
  ASSERT_TRUE(Succeeds(cli({"send", "t", "two"})));
  follow->wait_stdout("two\r\ntwo\r\n");
  ASSERT_TRUE(Succeeds(cli({"delete", "t"})));
  const CliResult r = follow->finish();
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "one\ntwo\r\ntwo\r\n");
}

// ---- events --------------------------------------------------------------------------------

class CliEvents : public CliCommandTest {};

TEST_F(CliEvents, PrintsTheTrackAsLinesOrJsonFilteredByKindCursorAndTime) {
  spawn("ev", {"sh", "-c", "printf 'abc\\033]2;my title\\007'; exec sleep 1000"},
        {"--cols", "90", "--rows", "30"});
  engine_.wait_output("ev", "my title");
  ASSERT_TRUE(Succeeds(cli({"resize", "ev", "100", "40"})));
  wait_until(
      [&] {
        return engine_.call("events", {{"actor", "ev"}, {"kinds", {"title"}}})
                   .header.at("events")
                   .size() == 1;
      },
      "the title event");

  const std::vector<std::string> acts{"--kind", "spawn", "--kind", "title", "--kind", "resize"};
  const auto events = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"events", "ev"});
    args.insert(args.end(), acts.begin(), acts.end());
    return cli(args);
  };
  const CliResult text = events({});
  ASSERT_TRUE(Succeeds(text)) << ::testing::PrintToString(text);
  const std::vector<std::string> out = lines(text.out);
  ASSERT_EQ(out.size(), 3u) << text.out;
  // TIME  CURSOR  KIND  details
  const std::regex time(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$)");
  const std::vector<std::string> spawn_line = words(out[0]);
  ASSERT_GE(spawn_line.size(), 3u) << out[0];
  EXPECT_TRUE(std::regex_match(spawn_line[0], time)) << out[0];
  EXPECT_EQ(spawn_line[1], "0");
  EXPECT_EQ(spawn_line[2], "spawn");
  EXPECT_NE(out[0].find("90x30"), std::string::npos) << out[0];
  EXPECT_NE(out[1].find("  16  title  'my title'"), std::string::npos) << out[1];
  EXPECT_NE(out[2].find("  16  resize  100x40"), std::string::npos) << out[2];

  const CliResult json = cli({"events", "ev", "--json", "--kind", "title", "--kind", "resize"});
  ASSERT_TRUE(Succeeds(json)) << ::testing::PrintToString(json);
  const std::vector<std::string> objects = lines(json.out);
  ASSERT_EQ(objects.size(), 2u) << json.out;
  const Json title = Json::parse(objects[0]);
  EXPECT_EQ(title.at("kind"), "title");
  EXPECT_EQ(title.at("title"), "my title");
  EXPECT_EQ(title.at("cursor"), 16);
  EXPECT_EQ(title.at("actor"), "ev");

  EXPECT_EQ(lines(events({"--from", "1"}).out).size(), 2u);
  EXPECT_EQ(lines(events({"--since", "1h"}).out).size(), 3u);
  EXPECT_EQ(events({"--since", "2999-01-01T00:00:00Z"}).out, "");
  EXPECT_EQ(lines(events({"--since", "2000-01-01"}).out).size(), 3u);
  engine_.call("stop", {{"actor", "ev"}});
}

TEST_F(CliEvents, FollowPrintsNewEventsOnceAndEndsWhenTheActorIsDeleted) {
  spawn("fe", {"cat"});
  const auto follow = start({"events", "fe", "-f", "--kind", "resize", "--kind", "spawn"});
  follow->wait_stdout("spawn");
  ASSERT_TRUE(Succeeds(cli({"resize", "fe", "70", "20"})));
  follow->wait_stdout("70x20");
  ASSERT_TRUE(Succeeds(cli({"delete", "fe"})));
  const CliResult r = follow->finish();
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  const std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 2u) << r.out;  // the spawn once (listed, not again live), the resize
  EXPECT_NE(out[0].find("spawn"), std::string::npos);
  EXPECT_NE(out[1].find("resize  70x20"), std::string::npos);
}

TEST_F(CliEvents, BadValuesAreUsageErrorsAndUnknownKindsAndActorsAreRefused) {
  spawn("bv", {"cat"});
  EXPECT_EQ(cli({"events", "bv", "--since", "yesterday"}).exit_code(), 2);
  EXPECT_EQ(cli({"events", "bv", "--since", "2026-13-01"}).exit_code(), 2);
  EXPECT_EQ(cli({"events", "bv", "--from", "-1"}).exit_code(), 2);
  const CliResult kind = cli({"events", "bv", "--kind", "titel"});
  EXPECT_TRUE(FailsWithOneLine(kind, 1, "backscroll: bad_request"))
      << ::testing::PrintToString(kind);
  EXPECT_NE(kind.err.find("titel"), std::string::npos) << kind.err;
  EXPECT_TRUE(FailsWithOneLine(cli({"events", "nobody"}), 1, "backscroll: no_such_actor"));
  engine_.call("stop", {{"actor", "bv"}});
}

// ---- stop, restart, delete, clear, resize ----------------------------------------------------

class CliLifecycle : public CliCommandTest {};

TEST_F(CliLifecycle, StopReportsTheSignalAndTheEndCursor) {
  spawn("s", print_then_wait("abc"));
  engine_.wait_output("s", "abc");
  const CliResult r = cli({"stop", "s"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "s session 1 stopped: killed(SIGHUP), end cursor 3\n");
  // Sealed when stop returns.
  const Json status = engine_.status("s");
  EXPECT_EQ(status.at("state"), "idle");
  EXPECT_EQ(status.at("sessions").back().at("sealed"), true);
  // On an idle actor: nothing to do, exit 0, and the last session again.
  const CliResult again = cli({"stop", "s"});
  ASSERT_TRUE(Succeeds(again)) << ::testing::PrintToString(again);
  EXPECT_EQ(again.out, "s already stopped: session 1 killed(SIGHUP), end cursor 3\n");
}

TEST_F(CliLifecycle, StopKillsAProgramThatIgnoresHangupAfterTheGracePeriod) {
  spawn("stubborn", {"sh", "-c", "trap '' HUP; printf abc; exec sleep 1000"});
  engine_.wait_output("stubborn", "abc");
  const CliResult r = cli({"stop", "stubborn", "--grace-ms", "100"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "stubborn session 1 stopped: killed(SIGKILL), end cursor 3\n");
}

TEST_F(CliLifecycle, StopRestartAndDeleteSendTheSignalNamedFirst) {
  // `read`, a builtin: no child to die of the signal too and have the shell report it.
  spawn("term", {"sh", "-c", "trap 'exit 3' TERM; printf abc; while :; do read x; done"});
  engine_.wait_output("term", "abc");
  const CliResult r = cli({"stop", "term", "--signal", "TERM"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "term session 1 stopped: exited(3), end cursor 3\n") << "its TERM trap ran";
  const CliResult restarted = cli({"restart", "term", "--signal", "sigint"});
  ASSERT_TRUE(Succeeds(restarted)) << ::testing::PrintToString(restarted);
  engine_.wait_output("term", "abcabc");
  ASSERT_TRUE(Succeeds(cli({"restart", "term", "--signal", "2"})));
  EXPECT_EQ(engine_.status("term").at("sessions").at(1).at("term_signal"), SIGINT);
  // Refused before anything is sent: a name no signal has, and what the grace period does.
  for (const char* bad : {"TREM", "KILL", "SIGSTOP", "0", "99"}) {
    EXPECT_TRUE(
        FailsWithOneLine(cli({"stop", "term", "--signal", bad}), 1, "backscroll: bad_request"))
        << bad;
  }
  EXPECT_EQ(engine_.status("term").at("state"), "running");
  ASSERT_TRUE(Succeeds(cli({"delete", "term", "--signal", "TERM"})));
}

TEST_F(CliLifecycle, StopOfAnExitedProgramReportsItsExitStatus) {
  spawn("x", {"sh", "-c", R"(printf "a\nb\n"; exit 3)"});
  engine_.wait_sealed("x");
  const CliResult r = cli({"stop", "x"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "x already stopped: session 1 exited(3), end cursor 6\n");
}

TEST_F(CliLifecycle, RestartStartsSessionTwoWhereTheOldOneEnded) {
  const std::int64_t first = spawn("r", print_then_wait("abc"));
  engine_.wait_output("r", "abc");
  const CliResult r = cli({"restart", "r"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(r.out, m, std::regex("r session 2 pid ([0-9]+) cursor ([0-9]+)\n")))
      << r.out;
  const Json status = engine_.status("r");
  const Json& sessions = status.at("sessions");
  ASSERT_EQ(sessions.size(), 2u) << status.dump();
  EXPECT_EQ(m[2].str(), std::to_string(sessions[0].at("end").get<std::uint64_t>()));
  EXPECT_EQ(m[2].str(), "3");
  EXPECT_EQ(m[1].str(), std::to_string(status.at("pid").get<std::int64_t>()));
  EXPECT_NE(m[1].str(), std::to_string(first));
  EXPECT_EQ(sessions[1].at("start"), sessions[0].at("end"));
  EXPECT_EQ(status.at("argv"), Json(print_then_wait("abc")));  // the same command again
  engine_.wait_output("r", "abcabc");
}

TEST_F(CliLifecycle, DeleteRemovesTheActorAndItsRing) {
  spawn("d", {"sleep", "1000"});
  spawn("keep", {"sleep", "1000"});
  const CliResult r = cli({"delete", "d"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "d deleted\n");
  const auto rows = lines(cli({"list"}).out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(words(rows[1]).at(0), "keep");
  EXPECT_EQ(engine_.rings(), std::vector<std::string>{"keep"});
  EXPECT_TRUE(FailsWithOneLine(cli({"status", "d"}), 1, "backscroll: no_such_actor: "));
}

TEST_F(CliLifecycle, RestoreOpensAShellWhereTheDeletedActorWorkedShowingItsScrollback) {
  const fs::path cwd = scratch_.path() / "project";
  fs::create_directories(cwd);
  spawn("gone", {"sh", "-c", "printf 'built 42 targets\\n'"}, {"--cwd", cwd.string()});
  engine_.wait_sealed("gone");
  ASSERT_TRUE(Succeeds(cli({"delete", "gone"})));
  const CliResult r = cli({"restore", "gone"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out.rfind("gone session 1 pid ", 0), 0u) << r.out;
  engine_.wait_output("gone", "built 42 targets\r\n");
  const Json status = engine_.status("gone");
  EXPECT_EQ(status.at("cwd"), cwd.string());
  EXPECT_EQ(status.at("state"), "running") << "a shell waits after the scrollback";
  // Under another name, and a name without a deletion snapshot.
  ASSERT_TRUE(Succeeds(cli({"restore", "gone", "--as", "again"})));
  engine_.wait_output("again", "built 42 targets");
  EXPECT_TRUE(FailsWithOneLine(cli({"restore", "never"}), 1, "backscroll: no_such_actor: "));
  EXPECT_TRUE(FailsWithOneLine(cli({"restore", "../gone"}), 1, "backscroll: bad_actor_name: "));
}

// restore starts where the program last was, not where it was spawned; the scrollback is the
// first session's alone (a restart runs the shell only); --list shows what can be restored.
TEST_F(CliLifecycle, RestoreStartsWhereTheProgramWasAndARestartDoesNotReplay) {
  // The shell restore opens is $SHELL: /bin/sh, so no rc file of the machine's user runs (an
  // interactive bash whose .bashrc ran `pyenv init` took more than the 30 s this test waits).
  ::setenv("SHELL", "/bin/sh", 1);
  const fs::path moved = scratch_.path() / "moved";
  fs::create_directories(moved);
  spawn("w", {"sh", "-c", "cd '" + moved.string() + "'; echo saved-line; exec sleep 1000"},
        {"--cwd", scratch_.path().string()});
  engine_.wait_output("w", "saved-line");
  ASSERT_TRUE(Succeeds(cli({"delete", "w"})));

  const CliResult listed = cli({"restore", "--list", "--json"});
  ASSERT_TRUE(Succeeds(listed)) << ::testing::PrintToString(listed);
  const Json list = Json::parse(listed.out);
  ASSERT_EQ(list.size(), 1u) << listed.out;
  EXPECT_EQ(list[0]["name"], "w");
  EXPECT_EQ(list[0]["cwd"], moved.string());
  EXPECT_GT(list[0]["scrollback_bytes"].get<std::int64_t>(), 0);
  EXPECT_GT(list[0]["deleted_ms"].get<std::int64_t>(), 0);
  const auto table = lines(cli({"restore", "--list"}).out);
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(words(table[0]),
            (std::vector<std::string>{"NAME", "DELETED", "SCROLLBACK", "CWD", "COMMAND"}));
  EXPECT_EQ(words(table[1]).at(0), "w");

  ASSERT_TRUE(Succeeds(cli({"restore", "w"})));
  engine_.wait_output("w", "saved-line");
  Json status = engine_.status("w");
  EXPECT_EQ(status.at("cwd"), moved.string());
  ASSERT_EQ(status.at("argv").size(), 1u) << status.dump();  // the shell, not the replay
  ASSERT_TRUE(Succeeds(cli({"restart", "w"})));
  // The shell's answer, not the typed line's echo: after the whole start of session 2.
  ASSERT_TRUE(Succeeds(cli({"send", "w", "echo second-$((1+1))"})));
  engine_.wait_output("w", "second-2\r\n");
  const std::string all = engine_.history("w");
  EXPECT_EQ(all.find("saved-line"), all.rfind("saved-line")) << "printed again by the restart";
}

TEST_F(CliLifecycle, ClearPrintsTheNewFloorAndDropsTheOutput) {
  spawn("c", print_then_wait("abc"));
  engine_.wait_output("c", "abc");
  const CliResult r = cli({"clear", "c"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "c cleared, floor 3, screen kept\n");
  EXPECT_EQ(engine_.status("c").at("floor"), 3);
  const CliResult screen = cli({"capture", "c"});
  ASSERT_TRUE(Succeeds(screen)) << ::testing::PrintToString(screen);
  EXPECT_EQ(screen.out.substr(0, 4), "abc\n") << "the screen stays";
  const CliResult tail = cli({"tail", "c"});
  ASSERT_TRUE(Succeeds(tail)) << ::testing::PrintToString(tail);
  EXPECT_EQ(tail.out, "");
  const CliResult history = cli({"history", "c", "--from", "3"});
  ASSERT_TRUE(Succeeds(history)) << ::testing::PrintToString(history);
  EXPECT_EQ(history.out, "");
}

TEST_F(CliLifecycle, ClearScreenStartsOverBlankAndSaysSoInJson) {
  spawn("c", print_then_wait("abc"));
  engine_.wait_output("c", "abc");
  const CliResult r = cli({"clear", "c", "--screen", "--json"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(Json::parse(r.out), (Json{{"name", "c"}, {"floor", 3}, {"screen_kept", false}}));
  const CliResult screen = cli({"capture", "c"});
  ASSERT_TRUE(Succeeds(screen)) << ::testing::PrintToString(screen);
  EXPECT_EQ(screen.out.find("abc"), std::string::npos) << screen.out;
}

TEST_F(CliLifecycle, ResizeReportsTheNewSize) {
  spawn("z", {"sleep", "1000"});
  const CliResult r = cli({"resize", "z", "120", "40"});
  ASSERT_TRUE(Succeeds(r)) << ::testing::PrintToString(r);
  EXPECT_EQ(r.out, "z resized to 120x40\n");
  const Json status = engine_.status("z");
  EXPECT_EQ(status.at("cols"), 120);
  EXPECT_EQ(status.at("rows"), 40);
  ASSERT_TRUE(Succeeds(cli({"resize", "z", "1", "1000"})));
  EXPECT_EQ(engine_.status("z").at("rows"), 1000);
}

// ---- errors from the engine: exit 1, one line "backscroll: CODE: message" ------------------

class CliErrors : public CliCommandTest {};

TEST_F(CliErrors, StopOfAnUnknownActorIsNoSuchActor) {
  const CliResult r = cli({"stop", "nope"});
  EXPECT_TRUE(FailsWithOneLine(r, 1, "backscroll: no_such_actor: "));
  EXPECT_NE(r.err.find("'nope'"), std::string::npos) << r.err;
}

TEST_F(CliErrors, EveryActorCommandOnAnUnknownActorIsNoSuchActor) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"status", "nope"},
                                             {"tail", "nope"},
                                             {"tail", "nope", "-f"},
                                             {"send", "nope", "x"},
                                             {"resize", "nope", "10", "10"},
                                             {"clear", "nope"},
                                             {"stop", "nope"},
                                             {"restart", "nope"},
                                             {"delete", "nope"},
                                             {"history", "nope", "--from", "0"}}) {
    SCOPED_TRACE(args.front());
    EXPECT_TRUE(FailsWithOneLine(cli(args), 1, "backscroll: no_such_actor: "));
  }
}

// A valid ring of an actor `evil`, made by a live process, its bytes a title change and a
// clipboard write: every command that reads rings asks the engine, which has no `evil`, and
// prints nothing of it. As root the planter is another user (docs/security.md's attack);
// otherwise it is this user.
TEST_F(CliErrors, ARingPlantedForAnActorTheEngineDoesNotHaveIsNeverPrinted) {
  auto plant = []() -> std::string {
    auto ring = shm::RingWriter::create({"evil", 1, shm::kMinCapacity, Cursor{0}});
    if (!ring) return "plant: " + ring.error().describe();
    const std::string payload = "\x1b]0;PWNED\x07\x1b]52;c;cm0gLXJmIH4K\x07";
    ring->append(std::as_bytes(std::span(payload)));
    static std::vector<shm::RingWriter> keep;  // mapped while the planter lives
    keep.push_back(std::move(*ring));
    return "";
  };
  std::optional<OtherUserProcess> other;
  if (can_act_as_another_user()) {
    other.emplace(plant);
    ASSERT_EQ(other->report(), "");
  } else {
    ASSERT_EQ(plant(), "");
  }
  for (const auto& args : std::vector<std::vector<std::string>>{{"tail", "evil"},
                                                                {"tail", "evil", "-f"},
                                                                {"status", "evil", "-f"},
                                                                {"verify", "evil"}}) {
    SCOPED_TRACE(args.front() + (args.size() > 2 ? " " + args.back() : ""));
    const CliResult r = cli(args);
    EXPECT_TRUE(FailsWithOneLine(r, 1, "backscroll: no_such_actor: "));
    EXPECT_EQ(r.err.find("PWNED"), std::string::npos) << r.err;
  }
}

TEST_F(CliErrors, SpawnOfATakenNameIsActorExists) {
  spawn("taken", {"sleep", "1000"});
  const CliResult r = cli({"spawn", "taken", "--", "true"});
  EXPECT_TRUE(FailsWithOneLine(r, 1, "backscroll: actor_exists: "));
  EXPECT_EQ(engine_.status("taken").at("argv"), Json({"sleep", "1000"}));
}

TEST_F(CliErrors, ActorNamesAreCheckedByTheEngine) {
  for (const char* name : {"bad name", ".dot", "a/b", "x:y"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(
        FailsWithOneLine(cli({"spawn", name, "--", "true"}), 1, "backscroll: bad_actor_name: "));
  }
}

TEST_F(CliErrors, SpawnOfAMissingProgramIsSpawnFailed) {
  const CliResult r = cli({"spawn", "m", "--", "/nonexistent/program"});
  EXPECT_TRUE(FailsWithOneLine(r, 1, "backscroll: spawn_failed: "));
}

TEST_F(CliErrors, SendAndResizeOfAnExitedProgramAreNotRunning) {
  spawn("gone", {"true"});
  engine_.wait_sealed("gone");
  EXPECT_TRUE(FailsWithOneLine(cli({"send", "gone", "hello"}), 1, "backscroll: not_running: "));
  EXPECT_TRUE(FailsWithOneLine(cli({"send", "gone", "-"}, std::string("data")), 1,
                               "backscroll: not_running: "));
  EXPECT_TRUE(
      FailsWithOneLine(cli({"resize", "gone", "10", "10"}), 1, "backscroll: not_running: "));
}

TEST_F(CliErrors, HistoryPastTheCommittedCursorIsCursorInFuture) {
  spawn("h", {"sh", "-c", R"(printf "a\nb\n")"});
  engine_.wait_sealed("h");
  const CliResult from = cli({"history", "h", "--from", "100"});
  EXPECT_TRUE(FailsWithOneLine(from, 1, "backscroll: cursor_in_future: "));
  EXPECT_NE(from.err.find("6"), std::string::npos) << from.err;  // the committed cursor
  // Regression: `--to` past the committed cursor printed the bytes up to committed and exited 0
  // (the engine's history op stops at committed). Expected (docs/cli.md): cursor_in_future,
  // before any file is created; the committed cursor itself is a fine end.
  const fs::path file = scratch_.path() / "future.log";
  EXPECT_TRUE(
      FailsWithOneLine(cli({"history", "h", "--from", "0", "--to", "7", "-o", file.string()}), 1,
                       "backscroll: cursor_in_future: "));
  EXPECT_FALSE(fs::exists(file));
  const CliResult whole = cli({"history", "h", "--from", "0", "--to", "6"});
  ASSERT_TRUE(Succeeds(whole)) << ::testing::PrintToString(whole);
  EXPECT_EQ(whole.out, "a\r\nb\r\n");
}

TEST_F(CliErrors, HistoryFromBeforeTheFloorAfterClearIsCursorExpired) {
  spawn("c", print_then_wait("abc"));
  engine_.wait_output("c", "abc");
  ASSERT_TRUE(Succeeds(cli({"clear", "c"})));
  const CliResult r = cli({"history", "c", "--from", "0"});
  EXPECT_TRUE(FailsWithOneLine(r, 1, "backscroll: cursor_expired: "));
  EXPECT_NE(r.err.find("oldest retained cursor 3"), std::string::npos) << r.err;
}

TEST_F(CliErrors, NoAutostartWithTheEngineGoneIsEngineUnavailable) {
  engine_.stop();
  EXPECT_TRUE(FailsWithOneLine(cli({"list"}), 1, "backscroll: engine_unavailable: "));
}

}  // namespace
}  // namespace backscroll::testing
