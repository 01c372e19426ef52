// backscroll: the user CLI (docs/cli.md). This file declares the commands and their options
// with CLI11 and hands each parsed command to its runner: cli_ops (one control request),
// cli_tail (reads the ring in shared memory), cli_attach (interactive), cli_status_follow
// (status -f: agent status from the rings). Usage errors exit 2, engine, protocol and OS errors
// exit 1, each as one line on stderr.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shm/places.hpp"
#include "tools/cli_args.hpp"
#include "tools/cli_attach.hpp"
#include "tools/cli_engine.hpp"
#include "tools/cli_ops.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_status_follow.hpp"
#include "tools/cli_restore.hpp"
#include "tools/cli_tail.hpp"
#include "tools/cli_verify.hpp"

namespace {

using namespace backscroll;
using namespace backscroll::cli;

constexpr const char* kFooter =
    "Exit status: 0 done, 1 the engine or the OS refused (one line on stderr: "
    "'backscroll: CODE: message'), 2 usage error. Commands that need the engine start "
    "backscrolld when none answers (see --no-autostart). Reference: docs/cli.md.";

// Option values are validated as text (cli_args.hpp) and converted here; empty = not given.
std::optional<std::uint32_t> size_value(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return static_cast<std::uint32_t>(*parse_u64(text));
}
std::optional<Cursor> cursor_value(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return Cursor{*parse_u64(text)};
}

CLI::Option* add_actor(CLI::App* command, std::string& actor) {
  return command->add_option("NAME", actor, "actor name ([A-Za-z0-9][A-Za-z0-9._-]{0,63})")
      ->type_name("")
      ->required();
}

// --cols/--rows/--cwd/--env, shared by spawn and attach --spawn.
void add_spawn_options(CLI::App* command, std::string& cols, std::string& rows, SpawnArgs& spawn,
                       const std::string& cols_default, const std::string& rows_default) {
  command->add_option("--cols", cols, "PTY columns, 1..1000 (default " + cols_default + ")")
      ->type_name("N")
      ->check(terminal_size());
  command->add_option("--rows", rows, "PTY rows, 1..1000 (default " + rows_default + ")")
      ->type_name("N")
      ->check(terminal_size());
  command->add_option("--cwd", spawn.cwd, "working directory (default: the current one)")
      ->type_name("DIR");
  command->add_option("--env", spawn.env, "K=V added to the program's environment (repeatable)")
      ->type_name("K=V")
      ->check(env_entry())
      ->allow_extra_args(false)  // one K=V per --env, so a following `--` still ends options
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command
      ->add_option("CMD", spawn.argv,
                   "the program and its arguments, after -- "
                   "(default: $SHELL, else /bin/sh)")
      ->type_name("");
}

int usage_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (app.get_subcommands().empty()) {
    // CLI11 says "A subcommand is required" for a misspelt one; name it instead.
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--no-autostart") continue;
      if (!arg.empty() && arg[0] == '-') {
        return report_usage("unknown option '" + std::string(arg) + "' (see 'backscroll --help')");
      }
      return report_usage("unknown command '" + std::string(arg) + "' (see 'backscroll --help')");
    }
  }
  std::string where = "backscroll";
  for (const CLI::App* sub = &app; sub != nullptr;) {
    const auto chosen = sub->get_subcommands();
    if (chosen.empty()) break;
    sub = chosen.front();
    where += " " + sub->get_name();
  }
  return report_usage(std::string(e.what()) + " (see '" + where + " --help')");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"backscroll: run programs on PTYs and keep every byte they print.", "backscroll"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the command too
  app.footer(kFooter);

  bool no_autostart = false;
  app.add_flag("--no-autostart", no_autostart,
               "never start the engine; fail with engine_unavailable when none answers");

  // spawn
  SpawnArgs spawn;
  std::string spawn_cols, spawn_rows;
  auto* spawn_cmd = app.add_subcommand("spawn", "Start a program on a new PTY as actor NAME");
  add_actor(spawn_cmd, spawn.actor);
  add_spawn_options(spawn_cmd, spawn_cols, spawn_rows, spawn, "80", "24");
  spawn_cmd->footer(
      "Prints: NAME session S pid P cursor C. Example: backscroll spawn build -- make -j8");

  // list
  auto* list_cmd = app.add_subcommand("list", "List actors: NAME STATE SESSION PID");

  // status
  std::vector<std::string> status_actors;
  bool status_json = false;
  StatusFollowArgs status_follow;
  bool status_follow_on = false;
  auto* status_cmd = app.add_subcommand(
      "status", "Show actors in detail (or one actor); with -f, follow their agent status");
  status_cmd->add_option("NAME", status_actors, "only this actor (with -f: these actors)")
      ->type_name("");
  status_cmd->add_flag("--json", status_json,
                       "print the engine's `actors` array as JSON (fields: docs/protocol.md); "
                       "with -f, one JSON object per line");
  status_cmd->add_flag("-f,--follow", status_follow_on,
                       "follow the agent status (title, bells, working/idle/permission) of every "
                       "actor, or of NAME...: one line per change (docs/status-detector.md)");
  status_cmd->add_option("--rules", status_follow.rules_path,
                         "with -f: a JSON rules file, tried before the built-in rules")
      ->type_name("FILE");

  // tail
  TailArgs tail;
  std::string tail_from;
  auto* tail_cmd =
      app.add_subcommand("tail", "Write an actor's raw output to stdout, read from shared memory");
  add_actor(tail_cmd, tail.actor);
  tail_cmd->add_option("--from", tail_from, "start at this cursor (default: the oldest retained)")
      ->type_name("CURSOR")
      ->check(u64_value());
  tail_cmd->add_flag("-f,--follow", tail.follow, "keep writing new output as it arrives");
  tail_cmd->add_flag("--until-exit", tail.until_exit,
                     "follow until the current session ends and all its bytes are written");

  // send
  SendArgs send;
  auto* send_cmd = app.add_subcommand("send", "Type TEXT into an actor, then Enter (\\r)");
  add_actor(send_cmd, send.actor);
  send_cmd->add_option("TEXT", send.text, "words joined by spaces; '-' alone sends stdin verbatim")
      ->type_name("");
  send_cmd->add_flag("-n,--no-newline", send.no_newline, "do not press Enter (no trailing \\r)");
  send_cmd->add_flag("--paste", send.paste,
                     "a paste: the engine writes the final Enter on its own, 100 ms later");
  send_cmd->add_flag("--bracketed", send.bracketed,
                     "wrap the text in bracketed-paste markers (ESC[200~ ... ESC[201~)");

  // resize
  std::string resize_actor, resize_cols, resize_rows;
  auto* resize_cmd = app.add_subcommand("resize", "Set an actor's PTY size");
  add_actor(resize_cmd, resize_actor);
  resize_cmd->add_option("COLS", resize_cols, "columns, 1..1000")
      ->type_name("")
      ->required()
      ->check(terminal_size());
  resize_cmd->add_option("ROWS", resize_rows, "rows, 1..1000")
      ->type_name("")
      ->required()
      ->check(terminal_size());

  // clear
  std::string clear_actor;
  auto* clear_cmd = app.add_subcommand(
      "clear", "Drop an actor's retained output (cursors keep counting; nothing is restorable)");
  add_actor(clear_cmd, clear_actor);

  // stop
  std::string stop_actor, stop_grace;
  auto* stop_cmd = app.add_subcommand(
      "stop", "End an actor's program: SIGHUP, SIGKILL after the grace period; waits for the seal");
  add_actor(stop_cmd, stop_actor);
  stop_cmd
      ->add_option("--grace-ms", stop_grace, "milliseconds before SIGKILL (engine default 3000)")
      ->type_name("MS")
      ->check(u64_value());

  // restart
  std::string restart_actor;
  auto* restart_cmd =
      app.add_subcommand("restart", "Stop an actor's program and start it again as a new session");
  add_actor(restart_cmd, restart_actor);

  // delete
  std::string delete_actor;
  auto* delete_cmd = app.add_subcommand("delete", "Stop an actor and remove it with its ring");
  add_actor(delete_cmd, delete_actor);

  // restore
  RestoreArgs restore;
  std::string restore_as;
  auto* restore_cmd = app.add_subcommand(
      "restore", "Open a shell actor where a deleted actor worked, showing its saved scrollback");
  add_actor(restore_cmd, restore.actor);
  restore_cmd->add_option("--as", restore_as, "name of the new actor (default: NAME)")
      ->type_name("NAME");

  // history
  HistoryArgs history;
  std::string history_from, history_to;
  auto* history_cmd = app.add_subcommand(
      "history", "Write the bytes of a cursor range [FROM, TO) to stdout or a file");
  add_actor(history_cmd, history.actor);
  history_cmd->add_option("--from", history_from, "first cursor")
      ->type_name("CURSOR")
      ->required()
      ->check(u64_value());
  history_cmd->add_option("--to", history_to, "end cursor, exclusive (default: committed)")
      ->type_name("CURSOR")
      ->check(u64_value());
  history_cmd
      ->add_option("--epoch", history.epoch,
                   "the epoch the cursors belong to (16 hex digits, from status or snapshot): "
                   "refused with wrong_epoch when the actor's cursor space is another")
      ->type_name("EPOCH");
  history_cmd
      ->add_option("-o,--output", history.output,
                   "write to FILE (created 0600, truncated) instead of stdout")
      ->type_name("FILE");
  history_cmd->add_flag("--skip-damaged", history.skip_damaged,
                        "write the bytes around a damaged stretch of the transcript and list each "
                        "gap on stderr (default: stop at the first gap, exit 1)");

  // snapshot
  SnapshotArgs snapshot;
  auto* snapshot_cmd = app.add_subcommand(
      "snapshot", "Write the ANSI bytes that redraw an actor's screen and recent history");
  add_actor(snapshot_cmd, snapshot.actor);
  snapshot_cmd->add_option("--scrollback", snapshot.scrollback,
                           "history lines, 0..10000 (default: the engine's "
                           "snapshot.scrollback_lines, 512)")
      ->check(CLI::Range(0, 10000));
  snapshot_cmd
      ->add_option("-o,--output", snapshot.output,
                   "write the bytes to FILE (created 0600, truncated) instead of stdout")
      ->type_name("FILE");
  snapshot_cmd->add_flag("--json", snapshot.json,
                         "print {format, cursor, epoch, cols, rows, bytes, reason} as one JSON "
                         "object (the bytes then go only to --output)");
  snapshot_cmd->footer(
      "The bytes redraw the screen on a fresh terminal of COLS x ROWS; the raw output from "
      "CURSOR on continues it (`backscroll tail NAME --from CURSOR`).");

  // verify
  VerifyArgs verify;
  auto* verify_cmd = app.add_subcommand(
      "verify", "Check that snapshots of an actor reproduce its screen exactly (on its own output)");
  add_actor(verify_cmd, verify.actor);
  verify_cmd->add_option("--cuts", verify.cuts, "snapshots to check, at random cursors")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  verify_cmd->add_option("--bytes", verify.window, "check the newest BYTES of the session")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30));
  verify_cmd->add_option("--seed", verify.seed, "the cursors' random seed (default: printed)");
  verify_cmd->footer(
      "Exit 0: every snapshot plus the raw bytes after it showed what every byte shows; exit 1: "
      "the first difference is printed (please report it with the seed).");

  // attach
  AttachArgs attach;
  std::string detach_key_text = "^]";
  std::string attach_cols, attach_rows;
  auto* attach_cmd =
      app.add_subcommand("attach", "Use the terminal as the actor's terminal (detach with Ctrl-])");
  add_actor(attach_cmd, attach.actor);
  attach_cmd
      ->add_option("--detach-key", detach_key_text,
                   "detach key: ^X, one ASCII character, or none (default ^])")
      ->type_name("KEY")
      ->check(detach_key());
  attach_cmd->add_flag("-r,--read-only", attach.read_only,
                       "watch as a viewer: never resize the actor, never send keys");
  attach_cmd->add_flag("--spawn", attach.spawn,
                       "spawn NAME first (CMD, default $SHELL) unless it exists");
  add_spawn_options(attach_cmd, attach_cols, attach_rows, attach.spawn_args, "the terminal's",
                    "the terminal's");
  attach_cmd->footer("Example, the one-command workflow: backscroll attach work --spawn");

  // ping (diagnostic, hidden), shutdown
  auto* ping_cmd = app.add_subcommand("ping", "Check that the engine answers");
  ping_cmd->group("");
  auto* shutdown_cmd =
      app.add_subcommand("shutdown", "Stop every actor and the engine (does not start one)");

  if (argc <= 1) {
    (void)write_all(STDOUT_FILENO, app.help());
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e, argc, argv);
  }

  const EngineTarget engine{Places::from_environment(), !no_autostart};

  if (*spawn_cmd) {
    spawn.cols = size_value(spawn_cols);
    spawn.rows = size_value(spawn_rows);
    return run_spawn(engine, spawn);
  }
  if (*list_cmd) return run_list(engine);
  if (*status_cmd) {
    if (status_follow_on) {
      status_follow.actors = status_actors;
      status_follow.json = status_json;
      return run_status_follow(engine, status_follow);
    }
    if (!status_follow.rules_path.empty()) return report_usage("status: --rules needs -f");
    if (status_actors.size() > 1) return report_usage("status: one NAME at most without -f");
    return run_status(engine,
                      status_actors.empty() ? std::nullopt : std::optional(status_actors.front()),
                      status_json);
  }
  if (*restore_cmd) {
    if (!restore_as.empty()) restore.as = restore_as;
    return run_restore(engine, restore);
  }
  if (*tail_cmd) {
    tail.from = cursor_value(tail_from);
    return run_tail(engine, tail);
  }
  if (*send_cmd) {
    if (send.text.size() > 1 &&
        std::find(send.text.begin(), send.text.end(), "-") != send.text.end()) {
      return report_usage("send: '-' (stdin) must be the only TEXT");
    }
    return run_send(engine, send);
  }
  if (*resize_cmd) {
    return run_resize(engine, resize_actor, *size_value(resize_cols), *size_value(resize_rows));
  }
  if (*clear_cmd) return run_clear(engine, clear_actor);
  if (*stop_cmd) {
    return run_stop(engine, stop_actor, stop_grace.empty() ? std::nullopt : parse_u64(stop_grace));
  }
  if (*restart_cmd) return run_restart(engine, restart_actor);
  if (*delete_cmd) return run_delete(engine, delete_actor);
  if (*history_cmd) {
    history.from = *cursor_value(history_from);
    history.to = cursor_value(history_to);
    return run_history(engine, history);
  }
  if (*snapshot_cmd) return run_snapshot(engine, snapshot);
  if (*verify_cmd) return run_verify(engine.places, verify);
  if (*attach_cmd) {
    const DetachKeyChoice key = *parse_detach_key(detach_key_text);
    attach.detach_key = key.none ? std::nullopt : std::optional<unsigned char>(key.key);
    attach.spawn_args.cols = size_value(attach_cols);
    attach.spawn_args.rows = size_value(attach_rows);
    const SpawnArgs& s = attach.spawn_args;
    if (!attach.spawn &&
        (s.cols || s.rows || !s.cwd.empty() || !s.env.empty() || !s.argv.empty())) {
      return report_usage("attach: CMD, --cols, --rows, --cwd and --env need --spawn");
    }
    return run_attach(engine, attach);
  }
  if (*ping_cmd) return run_ping(engine);
  if (*shutdown_cmd) return run_shutdown(engine);
  return report_usage("no command");
}
