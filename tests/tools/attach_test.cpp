// `backscroll attach` (docs/cli.md) on a pseudo-terminal of the test's: the terminal becomes the
// actor's (raw mode, the actor resized to it, its snapshot shown then the output followed, keys
// forwarded; megabytes of history cost a screenful, not a replay);
// the attachment ends with one line (detach key, the program's end, the actor's deletion) or by
// a signal, and on every way out the terminal gets its mode back.
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/tools/cli_process.hpp"

namespace backscroll::testing {
namespace {

constexpr const char* kPrompt = "bs-prompt> ";

// The terminal is back in the mode it had before attach.
::testing::AssertionResult ModeRestored(const PtyCli& pty) {
  const termios now = pty.mode();
  const termios& before = pty.original_mode();
  if (now.c_lflag == before.c_lflag && now.c_iflag == before.c_iflag &&
      now.c_oflag == before.c_oflag && now.c_cflag == before.c_cflag) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "terminal mode not restored: lflag " << std::hex << now.c_lflag << " (was "
         << before.c_lflag << "), iflag " << now.c_iflag << " (was " << before.c_iflag
         << "), oflag " << now.c_oflag << " (was " << before.c_oflag << ")";
}

::testing::AssertionResult ExitedZero(int wait_status) {
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "wait status " << wait_status;
}

class CliAttach : public CliTest {
 protected:
  // `backscroll --no-autostart ARGS` on a 100x30 terminal.
  std::unique_ptr<PtyCli> attach(std::vector<std::string> args) {
    args.insert(args.begin(), "--no-autostart");
    return std::make_unique<PtyCli>(args, runtime_dir(), 100, 30);
  }
  // Attaches (with `options`) to a program that leaves the alternate screen, a hidden cursor and
  // bracketed paste on, then detaches: the CLI exited 0 with the terminal's mode restored.
  std::unique_ptr<PtyCli> attach_modes_on_then_detach(const std::vector<std::string>& options) {
    std::vector<std::string> args = {"attach", "m"};
    args.insert(args.end(), options.begin(), options.end());
    for (const char* a : {"--spawn", "--", "sh", "-c",
                          R"(printf '\033[?1049h\033[?25l\033[?2004hmodes-on\n'; exec cat)"})
      args.emplace_back(a);
    auto pty = attach(args);
    pty->wait_for_screen("modes-on");
    pty->type("\x1d");
    pty->wait_for("[detached from m]\r\n");
    EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
    EXPECT_TRUE(ModeRestored(*pty));
    return pty;
  }
  // A shell with a prompt the test can wait for.
  static std::vector<std::string> shell_options() {
    return {"--env", std::string("PS1=") + kPrompt};
  }
};

TEST_F(CliAttach, SpawnTypeAndDetachLeavesTheProgramRunning) {
  std::vector<std::string> args{"attach", "work", "--spawn"};
  for (const auto& o : shell_options()) args.push_back(o);
  args.insert(args.end(), {"--", "sh"});
  const auto pty = attach(args);
  // The prompt on the terminal (drawn by the snapshot, or followed): spawned, in raw mode,
  // resized, output shown.
  pty->wait_for_screen(kPrompt);
  Json status = engine_.status("work");
  EXPECT_EQ(status.at("cols"), 100);
  EXPECT_EQ(status.at("rows"), 30);

  pty->type("echo hi-attach\r");
  pty->wait_for_screen("hi-attach", 2);  // the terminal echoes the line, then echo prints it
  pty->wait_for_screen(kPrompt, 2);
  pty->type("\x1d");  // Ctrl-]
  pty->wait_for("[detached from work]\r\n");
  EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
  EXPECT_TRUE(ModeRestored(*pty));
  // No local echo in raw mode: the line shows exactly twice.
  EXPECT_EQ(count_of(pty->screen(), "hi-attach"), 2u) << pty->screen();

  status = engine_.status("work");
  EXPECT_EQ(status.at("state"), "running");
  EXPECT_EQ(status.at("session"), 1);
  const CliResult list = cli({"list"});
  EXPECT_NE(list.out.find("work  running  1"), std::string::npos) << list.out;

  // Coming back (`attach --spawn` again) shows the screen again and reaches the same shell.
  const auto again = attach({"attach", "work", "--spawn", "--", "sh"});
  again->wait_for_screen("hi-attach", 2);
  again->wait_for_screen(kPrompt);
  again->type("echo back-again\r");
  again->wait_for("back-again", 2);
  again->type("\x1d");
  again->wait_for("[detached from work]\r\n");
  EXPECT_TRUE(ExitedZero(again->wait_exit())) << again->screen();
  EXPECT_EQ(engine_.status("work").at("session"), 1);
}

TEST_F(CliAttach, MegabytesOfHistoryShowAsOneScreenNotAReplay) {
  ASSERT_TRUE(Succeeds(cli({"spawn", "big", "--cols", "100", "--rows", "30", "--", "sh", "-c",
                            "seq 1 300000; echo last-line-shown; exec sleep 60"})));
  engine_.wait_output("big", "last-line-shown");
  const std::uint64_t committed = engine_.status("big").at("committed");
  ASSERT_GT(committed, 2'000'000u);
  // The mirror parses this scrolling output at ~1 MB/s (libvterm moves its whole cell array
  // per line; docs/performance.md): let it catch up, as it would on an actor the user left.
  for (int i = 0; i < 600; ++i) {
    const Frame snap = engine_.call("snapshot", {{"actor", "big"}, {"scrollback", 0}});
    if (snap.header.value("cursor", std::uint64_t{0}) + 1 >= committed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto pty = attach({"attach", "big"});
  pty->wait_for("last-line-shown");
  pty->type("\x1d");
  pty->wait_for("[detached from big]\r\n");
  EXPECT_TRUE(ExitedZero(pty->wait_exit()));
  // A screen plus 512 history lines of at most 7 characters, not 2.7 MB of replay.
  EXPECT_LT(pty->screen().size(), 16u * 1024) << pty->screen().size() << " bytes shown";
  EXPECT_NE(pty->screen().find("299999"), std::string::npos);
  EXPECT_EQ(pty->screen().find("\n1\r\n2\r\n"), std::string::npos);
}

TEST_F(CliAttach, ProgramThatExitsWhileAttachedEndsItWithItsStatus) {
  const auto pty = attach({"attach", "e", "--spawn", "--", "sh", "-c",
                           R"(printf "type-now\n"; read line; exit "$line")"});
  pty->wait_for_screen("type-now");
  pty->type("4\r");
  pty->wait_for("[e exited: status 4]\r\n");
  EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
  EXPECT_TRUE(ModeRestored(*pty));
  EXPECT_EQ(engine_.status("e").at("state"), "idle");
}

TEST_F(CliAttach, ProgramStoppedFromOutsideEndsItWithTheSignal) {
  const auto pty =
      attach({"attach", "k", "--spawn", "--", "sh", "-c", "echo stop-me; exec sleep 1000"});
  pty->wait_for_screen("stop-me");
  const CliResult stop = cli({"stop", "k"});
  ASSERT_TRUE(Succeeds(stop)) << ::testing::PrintToString(stop);
  pty->wait_for("[k exited: signal 1]\r\n");
  EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
  EXPECT_TRUE(ModeRestored(*pty));
}

TEST_F(CliAttach, TheActorTakesTheTerminalsSizeAndFollowsWindowChanges) {
  ASSERT_TRUE(Succeeds(cli({"spawn", "w", "--", "sh", "-c", "echo sized; exec cat"})));
  EXPECT_EQ(engine_.status("w").at("cols"), 80);  // the engine's default
  const auto pty = attach({"attach", "w"});
  pty->wait_for_screen("sized");  // output shows once the size was sent
  Json status = engine_.status("w");
  EXPECT_EQ(status.at("cols"), 100);
  EXPECT_EQ(status.at("rows"), 30);
  pty->resize(132, 43);
  wait_until(
      [&] {
        status = engine_.status("w");
        return status.at("cols") == 132 && status.at("rows") == 43;
      },
      "the actor to follow the window change");
  pty->type("\x1d");
  pty->wait_for("[detached from w]\r\n");
  EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
}

TEST_F(CliAttach, ModesTheProgramLeftOnAreSwitchedOffOnDetach) {
  // Alternate screen, hidden cursor, bracketed paste: left on by a program that is still running.
  // On the canvas (the default) the program's own switch never reaches the terminal: it ends
  // on its main screen, with the modes off.
  const auto pty = attach_modes_on_then_detach({});
  const std::string& all = pty->screen();
  const std::size_t entered = all.find("\x1b[?1049h");
  ASSERT_NE(entered, std::string::npos) << "the canvas";
  EXPECT_EQ(all.find("\x1b[?1049h", entered + 1), std::string::npos) << "the program's own switch";
  const std::string after = all.substr(all.rfind("modes-on"));
  const auto show_cursor = after.find("\x1b[?25h");
  const auto no_paste = after.find("\x1b[?2004l");
  const auto leave = after.find("\x1b[?1049l");
  ASSERT_NE(show_cursor, std::string::npos) << after;
  ASSERT_NE(no_paste, std::string::npos) << after;
  ASSERT_NE(leave, std::string::npos) << after;
  EXPECT_EQ(after.find("\x1b[?1049l", leave + 1), std::string::npos) << "left once: " << after;
  EXPECT_LT(leave, after.find("[detached from m]"));
}

TEST_F(CliAttach, WithHistoryTheProgramsModesAndScreenAreSwitchedOffOnDetach) {
  const auto pty = attach_modes_on_then_detach({"--history"});
  const std::string after = pty->screen().substr(pty->screen().rfind("modes-on"));
  // ?1049 when the program's own bytes switched; ?1047 when a snapshot drew the alternate screen.
  const auto leave_alt = std::min(after.find("\x1b[?1049l"), after.find("\x1b[?1047l"));
  const auto show_cursor = after.find("\x1b[?25h");
  ASSERT_NE(leave_alt, std::string::npos) << after;
  ASSERT_NE(show_cursor, std::string::npos) << after;
  EXPECT_LT(leave_alt, show_cursor) << "the alternate screen is left first";
  EXPECT_NE(after.find("\x1b[?2004l"), std::string::npos) << after;
  EXPECT_LT(show_cursor, after.find("[detached from m]"));
}

// Feeds `bytes` to `terminal` as xterm, VTE, kitty, alacritty, tmux and xterm.js show them: the
// cursor CSI ? 1049 h saves is the main screen's own (libvterm, the test's emulator, keeps one
// slot for it and DECSC, which a snapshot drawn on the alternate screen sets).
void feed_with_screen_slots(term::MirrorScreen& terminal, std::string_view bytes) {
  std::optional<term::CursorState> saved;
  for (;;) {
    const std::size_t enter = bytes.find("\x1b[?1049h");
    const std::size_t leave = bytes.find("\x1b[?1049l");
    const std::size_t at = std::min(enter, leave);
    if (at == std::string_view::npos) break;
    terminal.feed(bytes.substr(0, at));
    if (at == enter) {
      saved = terminal.cursor();
      terminal.feed("\x1b[?1047h");
    } else {
      terminal.feed("\x1b[?1047l");
      if (saved) {
        terminal.feed("\x1b[" + std::to_string(saved->row + 1) + ";" +
                      std::to_string(saved->col + 1) + "H");
      }
    }
    bytes.remove_prefix(at + 8);
  }
  terminal.feed(bytes);
}

// The user's screen and scrollback after three attach-detach rounds to an actor with a long
// history and a program on its alternate screen: exactly as before, plus each round's banner
// and closing line; with --quiet, only the closing line.
TEST_F(CliAttach, DetachingGivesTheUsersScreenBackAndAddsNothingToItsScrollback) {
  ASSERT_TRUE(Succeeds(cli({"spawn", "h", "--", "sh", "-c",
                            "i=0; while [ $i -lt 300 ]; do echo actor-history-$i; i=$((i+1)); "
                            "done; printf '\\033[?1049hfull-screen-program'; exec cat"})));
  engine_.wait_output("h", "full-screen-program");
  std::string users;  // the user's own screen, more than a screenful
  for (int i = 0; i < 45; ++i) users += "user-line-" + std::to_string(i) + "\r\n";
  term::MirrorScreen terminal(100, 30);
  term::MirrorScreen expected(100, 30);
  terminal.feed(users);
  expected.feed(users);
  for (int round = 0; round < 3; ++round) {
    const bool quiet = round == 2;
    std::vector<std::string> args = {"attach", "h"};
    if (quiet) args.push_back("--quiet");
    const auto pty = attach(args);
    pty->wait_for_screen("full-screen-program");
    pty->type("\x1d");
    pty->wait_for("[detached from h]\r\n");
    EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
    feed_with_screen_slots(terminal, pty->screen());
    if (!quiet) expected.feed("attached to h (100x30) \u2014 Ctrl-] detaches\r\n");
    expected.feed("[detached from h]\r\n");
    EXPECT_EQ(pty->screen().find("actor-history-"), std::string::npos) << "history drawn";
  }
  EXPECT_FALSE(terminal.alt_screen());
  EXPECT_EQ(terminal_text(terminal), terminal_text(expected));
  EXPECT_EQ(terminal.cursor().row, expected.cursor().row);
  EXPECT_EQ(terminal.cursor().col, expected.cursor().col);
}

// Programs that switch screens while attached (vim, less, a pager after a command): the
// terminal, on its alternate screen throughout, shows each screen the program shows.
TEST_F(CliAttach, AProgramSwitchingScreensShowsEachScreenWithoutLeavingTheCanvas) {
  const auto pty =
      attach({"attach", "s", "--spawn", "--", "sh", "-c",
              "echo main-before; stty -echo; while read line; do "
              "if [ \"$line\" = enter ]; then printf '\\033[?1049h\\033[Halt-content'; "
              "else printf '\\033[?1049lback-on-main'; fi; done"});
  pty->wait_for_screen("main-before");
  pty->type("enter\r");
  pty->wait_for_screen("alt-content");
  EXPECT_EQ(pty->screen_text().find("main-before"), std::string::npos) << pty->screen_text();
  pty->type("leave\r");
  pty->wait_for_screen("back-on-main");
  EXPECT_NE(pty->screen_text().find("main-before"), std::string::npos) << pty->screen_text();
  EXPECT_EQ(pty->screen_text().find("alt-content"), std::string::npos) << pty->screen_text();
  pty->type("enter\r");
  pty->wait_for_screen("alt-content");
  pty->type("\x1d");
  pty->wait_for("[detached from s]\r\n");
  EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
  // One switch onto the canvas, one off it: none of the program's reached the terminal.
  EXPECT_EQ(count_of(pty->screen(), "\x1b[?1049h"), 1u) << pty->screen();
  EXPECT_EQ(count_of(pty->screen(), "\x1b[?1049l"), 1u) << pty->screen();
  EXPECT_FALSE(pty->emulator().alt_screen());
}

TEST_F(CliAttach, DeletingTheActorEndsTheAttachment) {
  ASSERT_TRUE(Succeeds(cli({"spawn", "d", "--", "sh", "-c", "echo delete-me; exec sleep 1000"})));
  const auto pty = attach({"attach", "d"});
  pty->wait_for_screen("delete-me");
  const CliResult del = cli({"delete", "d"});
  ASSERT_TRUE(Succeeds(del)) << ::testing::PrintToString(del);
  pty->wait_for("[d was deleted]\r\n");
  EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
  EXPECT_TRUE(ModeRestored(*pty));
}

TEST_F(CliAttach, OtherDetachKeySendsTheDefaultOneAndBytesBeforeItToTheProgram) {
  ASSERT_TRUE(Succeeds(cli({"spawn", "c", "--", "sh", "-c", "echo cat-ready; exec cat"})));
  engine_.wait_output("c", "cat-ready");
  const auto pty = attach({"attach", "c", "--detach-key", "^A"});
  pty->wait_for_screen("cat-ready");
  // Ctrl-] is an ordinary key now: the program's terminal echoes it as "^]", cat prints it back.
  pty->type("\x1d\r");
  pty->wait_for("^]\r\n\x1d\r\n");
  // Bytes typed before the detach key are sent, however the reads split them.
  pty->type("before-key\r\x01");
  pty->wait_for("[detached from c]\r\n");
  EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
  EXPECT_TRUE(ModeRestored(*pty));
  engine_.wait_output("c", "before-key\r\nbefore-key\r\n");
  EXPECT_EQ(engine_.status("c").at("state"), "running");
}

TEST_F(CliAttach, IdleActorIsRestartedBySpawn) {
  ASSERT_TRUE(
      Succeeds(cli({"spawn", "r", "--", "sh", "-c", R"(printf "started\n"; read line; exit 7)"})));
  engine_.wait_output("r", "started");
  ASSERT_TRUE(Succeeds(cli({"stop", "r"})));
  const auto pty = attach({"attach", "r", "--spawn"});
  // The new session is a fresh terminal: its snapshot and output show only its own "started".
  pty->wait_for_screen("started");
  EXPECT_EQ(engine_.status("r").at("session"), 2);
  pty->type("x\r");
  pty->wait_for("[r exited: status 7]\r\n");
  EXPECT_TRUE(ExitedZero(pty->wait_exit())) << pty->screen();
}

TEST_F(CliAttach, TerminationSignalRestoresTheTerminalAndKillsTheClient) {
  std::vector<std::string> args{"attach", "t", "--spawn"};
  for (const auto& o : shell_options()) args.push_back(o);
  args.insert(args.end(), {"--", "sh"});
  const auto pty = attach(args);
  pty->wait_for_screen(kPrompt);
  ASSERT_EQ(::kill(pty->pid(), SIGTERM), 0);
  const int status = pty->wait_exit();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "wait status " << status;
  EXPECT_TRUE(ModeRestored(*pty));
  EXPECT_EQ(engine_.status("t").at("state"), "running");
}

TEST_F(CliAttach, StdinThatIsNotATerminalIsAUsageErrorAndSpawnsNothing) {
  const CliResult r = cli({"attach", "n", "--spawn", "--", "sh"}, std::string("echo hi\r"));
  EXPECT_TRUE(FailsWithOneLine(r, 2, "backscroll: usage: attach: stdin is not a terminal"));
  EXPECT_EQ(cli({"list"}).out, "NAME  STATE  SESSION  PID  COMMAND\n");
}

}  // namespace
}  // namespace backscroll::testing
