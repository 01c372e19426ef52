// backscroll: the user CLI (docs/cli.md). This file declares the commands and their options
// with CLI11, one add_* function per command, and hands the parsed command to its runner:
// cli_ops (one control request), cli_tail (reads the ring in shared memory), cli_attach
// (interactive), cli_status_follow (status -f: agent status from the rings). Usage errors exit
// 2, engine, protocol and OS errors exit 1, each as one line on stderr.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shm/places.hpp"
#include "tools/cli_args.hpp"
#include "tools/cli_attach.hpp"
#include "tools/cli_capture.hpp"
#include "tools/cli_engine.hpp"
#include "tools/cli_events.hpp"
#include "tools/cli_ops.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_restore.hpp"
#include "tools/cli_search.hpp"
#include "tools/cli_status_follow.hpp"
#include "tools/cli_tail.hpp"
#include "tools/cli_time.hpp"
#include "tools/cli_top.hpp"
#include "tools/cli_usage.hpp"
#include "tools/cli_verify.hpp"
#include "tools/cli_wait.hpp"

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
  command->add_flag("--env-clear", spawn.env_clear,
                    "start from an empty environment, not this one (then --env, TERM and "
                    "BACKSCROLL_ACTOR)");
  command
      ->add_option("--env", spawn.env,
                   "K=V set in the program's environment (repeatable); the rest is this "
                   "shell's environment")
      ->type_name("K=V")
      ->check(env_entry())
      ->allow_extra_args(false)  // one K=V per --env, so a following `--` still ends options
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command
      ->add_option("CMD", spawn.argv,
                   "the program and its arguments, after -- "
                   "(default: the login shell, $SHELL -l)")
      ->type_name("");
}

// --json on a command that prints one result: the result as one JSON object (docs/cli.md).
std::shared_ptr<bool> add_json(CLI::App* command, const std::string& what) {
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "print " + what + " as JSON (fields: docs/cli.md)");
  return json;
}

// --at CURSOR|KIND:N and --at-time TIME (snapshot, capture): the returned function reads what
// was given once parsing is done, or says why it cannot be used.
std::function<tl::expected<PastPoint, std::string>()> add_past_point(CLI::App* command) {
  auto at = std::make_shared<std::string>();
  auto at_time = std::make_shared<std::string>();
  command
      ->add_option("--at", *at,
                   "the screen as it was at CURSOR, or at an event: KIND:N, N from 0 (the "
                   "oldest) or back from -1 (the newest), e.g. prompt:-3 (docs/recorder.md)")
      ->type_name("CURSOR|KIND:N")
      ->check(at_value());
  command
      ->add_option("--at-time", *at_time,
                   "the screen as it was at TIME: ISO 8601 or a duration back from now (15m)")
      ->type_name("TIME")
      ->check(time_value());
  return [at, at_time]() -> tl::expected<PastPoint, std::string> {
    if (!at->empty() && !at_time->empty()) {
      return tl::unexpected(std::string("--at and --at-time exclude each other"));
    }
    PastPoint point;
    if (!at->empty()) {
      if (const auto cursor = parse_u64(*at)) point.at = Cursor{*cursor};
      else point.at_event = *at;
    }
    if (!at_time->empty()) point.at_time_ms = parse_time(*at_time, now_ms());
    return point;
  };
}

// One entry of the command table: main calls `run` when CLI11 marks `subcommand` as parsed. The
// values the options parse into are owned by `run`'s captures, so they outlive parsing.
struct Command {
  const CLI::App* subcommand;
  std::function<int(const EngineTarget&)> run;
};

Command add_spawn(CLI::App& app) {
  struct Values {
    SpawnArgs spawn;
    std::string cols, rows;
    bool json = false;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand("spawn", "Start a program on a new PTY as actor NAME");
  add_actor(command, values->spawn.actor);
  add_spawn_options(command, values->cols, values->rows, values->spawn, "80", "24");
  command->add_flag("--rm", values->spawn.rm,
                    "delete the actor once its program exits with status 0 (the deletion "
                    "snapshot is kept)");
  command->add_flag("--rm-always", values->spawn.rm_always,
                    "delete the actor once its program ends, however it ends");
  command
      ->add_option("--cwd-of", values->spawn.cwd_of,
                   "start in the directory of OTHER's foreground program")
      ->type_name("OTHER")
      ->excludes(command->get_option("--cwd"));
  command->add_flag("--json", values->json,
                    "print {name, session, pid, cursor, epoch} as JSON (docs/cli.md)");
  command->footer(
      "Prints: NAME session S pid P cursor C. Example: backscroll spawn build -- make -j8");
  const auto run = [values](const EngineTarget& engine) {
    values->spawn.cols = size_value(values->cols);
    values->spawn.rows = size_value(values->rows);
    return run_spawn(engine, values->spawn, values->json);
  };
  return {command, run};
}

Command add_list(CLI::App& app) {
  auto* command = app.add_subcommand(
      "list", "List actors: NAME STATE SESSION PID COMMAND (what runs in it now)");
  const auto json = add_json(command, "the actors");
  return {command, [json](const EngineTarget& engine) { return run_list(engine, *json); }};
}

Command add_status(CLI::App& app) {
  struct Values {
    std::vector<std::string> actors;
    bool json = false;
    bool engine = false;
    StatusFollowArgs follow;
    bool follow_on = false;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand(
      "status", "Show actors in detail (or one actor); with -f, follow their agent status");
  command->add_option("NAME", values->actors, "only this actor (with -f: these actors)")
      ->type_name("");
  command->add_flag("--json", values->json,
                    "print the engine's `actors` array as JSON (fields: docs/protocol.md); "
                    "with -f, one JSON object per line");
  command->add_flag("--engine", values->engine,
                    "with --json: the engine's whole reply, an object: `actors`, `memory` (the "
                    "memory_budget, what the actors reserve and use in all) and `mirror`");
  command->add_flag("-f,--follow", values->follow_on,
                    "follow the agent status (title, bells, working/idle/permission) of every "
                    "actor, or of NAME...: one line per change (docs/status-detector.md)");
  command
      ->add_option("--rules", values->follow.rules_path,
                   "with -f: a JSON rules file, tried before the built-in rules")
      ->type_name("FILE");
  const auto run = [values](const EngineTarget& engine) {
    if (values->follow_on) {
      values->follow.actors = values->actors;
      values->follow.json = values->json;
      return run_status_follow(engine, values->follow);
    }
    if (!values->follow.rules_path.empty()) return report_usage("status: --rules needs -f");
    if (values->actors.size() > 1) return report_usage("status: one NAME at most without -f");
    if (values->engine && !values->json) return report_usage("status: --engine needs --json");
    return run_status(engine,
                      values->actors.empty() ? std::nullopt : std::optional(values->actors.front()),
                      values->json, values->engine);
  };
  return {command, run};
}

Command add_top(CLI::App& app) {
  auto values = std::make_shared<TopArgs>();
  auto* command = app.add_subcommand(
      "top", "A live view: output rates, the mirror's, the writer's and each reader's lag, memory");
  command
      ->add_option("-d,--delay", values->delay_seconds,
                   "seconds between frames (at least 0.1; default 1)")
      ->type_name("SECS");
  command->add_option("-n,--frames", values->frames, "stop after this many frames")->type_name("N");
  command->add_flag("--json", values->json,
                    "one JSON object per frame and line: time_ms, memory, actors (each with "
                    "bytes_per_s, mirror_lag, transcript_lag, memory, readers)");
  return {command, [values](const EngineTarget& engine) { return run_top(engine, *values); }};
}

Command add_tail(CLI::App& app) {
  struct Values {
    TailArgs tail;
    std::string from, lines;
  };
  auto values = std::make_shared<Values>();
  auto* command =
      app.add_subcommand("tail", "Write an actor's raw output to stdout, read from shared memory");
  add_actor(command, values->tail.actor);
  command->add_option("--from", values->from, "start at this cursor (default: the oldest retained)")
      ->type_name("CURSOR")
      ->check(u64_value());
  command
      ->add_option("-n,--lines", values->lines,
                   "first the last N lines of the screen and history as text (capture), then "
                   "(with -f) the raw output after them")
      ->type_name("N")
      ->check(u64_value());
  command->add_flag("-f,--follow", values->tail.follow, "keep writing new output as it arrives");
  command->add_flag("--until-exit", values->tail.until_exit,
                    "follow until the current session ends and all its bytes are written");
  const auto run = [values](const EngineTarget& engine) {
    values->tail.from = cursor_value(values->from);
    if (!values->lines.empty()) {
      if (values->tail.from) return report_usage("tail: --from and -n exclude each other");
      values->tail.lines = static_cast<std::size_t>(*parse_u64(values->lines));
    }
    return run_tail(engine, values->tail);
  };
  return {command, run};
}

Command add_send(CLI::App& app) {
  auto send = std::make_shared<SendArgs>();
  auto* command = app.add_subcommand("send", "Type TEXT into an actor, then Enter (\\r)");
  add_actor(command, send->actor);
  command->add_option("TEXT", send->text, "words joined by spaces; '-' alone sends stdin verbatim")
      ->type_name("");
  command->add_flag("-n,--no-newline", send->no_newline, "do not press Enter (no trailing \\r)");
  command->add_flag("--paste", send->paste,
                    "a paste: the engine writes the final Enter on its own, 100 ms later");
  command->add_flag("--bracketed", send->bracketed,
                    "wrap the text in bracketed-paste markers (ESC[200~ ... ESC[201~)");
  command->add_flag("--when-idle", send->when_idle,
                    "hold the text in the engine until the actor waits for input (an idle or "
                    "permission agent status, a shell prompt mark, or its program quiet for 1 s), "
                    "then send it; waits for that");
  command
      ->add_option("--timeout", send->timeout_s,
                   "with --when-idle: give up after SECS, sending nothing (exit code 1, "
                   "timed_out)")
      ->type_name("SECS")
      ->check(u64_in(1, 86400));
  command
      ->add_option("--cancel", send->cancel,
                   "drop the waiting send ID (status lists them: pending_sends)")
      ->type_name("ID");
  const auto run = [send](const EngineTarget& engine) {
    if (send->cancel && !send->text.empty()) {
      return report_usage("send: --cancel takes no TEXT");
    }
    if (send->timeout_s && !send->when_idle)
      return report_usage("send: --timeout needs --when-idle");
    if (send->text.size() > 1 &&
        std::find(send->text.begin(), send->text.end(), "-") != send->text.end()) {
      return report_usage("send: '-' (stdin) must be the only TEXT");
    }
    return run_send(engine, *send);
  };
  return {command, run};
}

Command add_resize(CLI::App& app) {
  struct Values {
    std::string actor, cols, rows;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand("resize", "Set an actor's PTY size");
  add_actor(command, values->actor);
  command->add_option("COLS", values->cols, "columns, 1..1000")
      ->type_name("")
      ->required()
      ->check(terminal_size());
  command->add_option("ROWS", values->rows, "rows, 1..1000")
      ->type_name("")
      ->required()
      ->check(terminal_size());
  const auto json = add_json(command, "{name, cols, rows}");
  const auto run = [values, json](const EngineTarget& engine) {
    return run_resize(engine, values->actor, *size_value(values->cols), *size_value(values->rows),
                      *json);
  };
  return {command, run};
}

Command add_clear(CLI::App& app) {
  auto actor = std::make_shared<std::string>();
  auto screen = std::make_shared<bool>(false);
  auto* command = app.add_subcommand(
      "clear",
      "Drop an actor's history, keeping its screen (cursors keep counting; nothing is restorable)");
  add_actor(command, *actor);
  command->add_flag("--screen", *screen, "clear the screen as well: a blank terminal from here");
  const auto json = add_json(command, "{name, floor, screen_kept}");
  return {command, [actor, screen, json](const EngineTarget& engine) {
            return run_clear(engine, *actor, *screen, *json);
          }};
}

// --signal SIG: what stop, restart and delete send first (the engine checks the name).
void add_signal(CLI::App* command, std::string& into) {
  command
      ->add_option("--signal", into,
                   "send this first instead of SIGHUP (TERM, INT, ...; SIGKILL still follows "
                   "the grace period)")
      ->type_name("SIG");
}

Command add_stop(CLI::App& app) {
  struct Values {
    std::string actor, grace, signal;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand(
      "stop", "End an actor's program: SIGHUP, SIGKILL after the grace period; waits for the seal");
  add_actor(command, values->actor);
  command
      ->add_option("--grace-ms", values->grace, "milliseconds before SIGKILL (engine default 3000)")
      ->type_name("MS")
      ->check(u64_value());
  add_signal(command, values->signal);
  const auto json =
      add_json(command, "{name, session, end, exit_code, term_signal, already_stopped}");
  const auto run = [values, json](const EngineTarget& engine) {
    return run_stop(engine, values->actor,
                    values->grace.empty() ? std::nullopt : parse_u64(values->grace), values->signal,
                    *json);
  };
  return {command, run};
}

Command add_restart(CLI::App& app) {
  struct Values {
    std::string actor, signal;
  };
  auto values = std::make_shared<Values>();
  auto* command =
      app.add_subcommand("restart", "Stop an actor's program and start it again as a new session");
  add_actor(command, values->actor);
  add_signal(command, values->signal);
  const auto json = add_json(command, "{name, session, pid, cursor, epoch}");
  return {command, [values, json](const EngineTarget& engine) {
            return run_restart(engine, values->actor, values->signal, *json);
          }};
}

Command add_delete(CLI::App& app) {
  struct Values {
    std::string actor, signal;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand("delete", "Stop an actor and remove it with its ring");
  add_actor(command, values->actor);
  add_signal(command, values->signal);
  const auto json = add_json(command, "{name, deleted, snapshot, snapshot_error}");
  return {command, [values, json](const EngineTarget& engine) {
            return run_delete(engine, values->actor, values->signal, *json);
          }};
}

Command add_restore(CLI::App& app) {
  struct Values {
    RestoreArgs restore;
    std::string as;
    bool list = false;
    bool json = false;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand(
      "restore", "Open a shell actor where a deleted actor worked, showing its saved scrollback");
  command->add_option("NAME", values->restore.actor, "the deleted actor")->type_name("");
  command->add_option("--as", values->as, "name of the new actor (default: NAME)")
      ->type_name("NAME");
  command->add_flag("--list", values->list,
                    "list the deleted actors that can be restored, newest first");
  command->add_flag("--json", values->json, "with --list: one JSON array (fields: docs/cli.md)");
  const auto run = [values](const EngineTarget& engine) {
    if (values->list) {
      if (!values->restore.actor.empty() || !values->as.empty()) {
        return report_usage("restore: --list takes no NAME and no --as");
      }
      return run_restore_list(engine.places, values->json);
    }
    if (values->json) return report_usage("restore: --json goes with --list");
    if (values->restore.actor.empty()) return report_usage("restore: NAME is required (or --list)");
    if (!values->as.empty()) values->restore.as = values->as;
    return run_restore(engine, values->restore);
  };
  return {command, run};
}

Command add_history(CLI::App& app) {
  struct Values {
    HistoryArgs history;
    std::string from, to, lines;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand(
      "history", "Write the bytes of a cursor range [FROM, TO) to stdout or a file");
  add_actor(command, values->history.actor);
  command
      ->add_option("--from", values->from,
                   "first cursor (default: the oldest retained, in the transcript too)")
      ->type_name("CURSOR")
      ->check(u64_value());
  command->add_option("--to", values->to, "end cursor, exclusive (default: committed)")
      ->type_name("CURSOR")
      ->check(u64_value());
  command
      ->add_option("--epoch", values->history.epoch,
                   "the epoch the cursors belong to (16 hex digits, from status or snapshot): "
                   "refused with wrong_epoch when the actor's cursor space is another")
      ->type_name("EPOCH")
      ->check(epoch_value());
  command
      ->add_option("-o,--output", values->history.output,
                   "write to FILE (created 0600, truncated) instead of stdout")
      ->type_name("FILE");
  command->add_flag("--skip-damaged", values->history.skip_damaged,
                    "write the bytes around a damaged stretch of the transcript and list each "
                    "gap on stderr (default: stop at the first gap, exit 1)");
  command
      ->add_option("--lines", values->lines,
                   "only lines A to B of those bytes, from 1; negative counts back from the "
                   "last line (-1); A.., ..B and N alone too (e.g. --lines -100..)")
      ->type_name("A..B")
      ->check(line_range_value());
  command->add_flag("--json", values->history.json,
                    "then print {name, epoch, from, to, bytes, gaps} as JSON: on stdout with -o "
                    "FILE, else on stderr (stdout is the bytes)");
  const auto run = [values](const EngineTarget& engine) {
    values->history.from = cursor_value(values->from);
    values->history.to = cursor_value(values->to);
    if (!values->lines.empty()) values->history.lines = parse_line_range(values->lines);
    return run_history(engine, values->history);
  };
  return {command, run};
}

Command add_snapshot(CLI::App& app) {
  auto snapshot = std::make_shared<SnapshotArgs>();
  auto* command = app.add_subcommand(
      "snapshot", "Write the ANSI bytes that redraw an actor's screen and recent history");
  add_actor(command, snapshot->actor);
  command
      ->add_option("--scrollback", snapshot->scrollback,
                   "history lines, 0..10000 (default: the engine's "
                   "snapshot.scrollback_lines, 512)")
      ->type_name("N")
      ->check(u64_in(0, 10000));
  command
      ->add_option("-o,--output", snapshot->output,
                   "write the bytes to FILE (created 0600, truncated) instead of stdout")
      ->type_name("FILE");
  command->add_flag("--json", snapshot->json,
                    "print {format, cursor, epoch, cols, rows, bytes, reason} as one JSON "
                    "object (the bytes then go only to --output)");
  const auto past = add_past_point(command);
  command->footer(
      "The bytes redraw the screen on a fresh terminal of COLS x ROWS; the raw output from "
      "CURSOR on continues it (`backscroll tail NAME --from CURSOR`).");
  const auto run = [snapshot, past](const EngineTarget& engine) {
    auto point = past();
    if (!point) return report_usage("snapshot: " + point.error());
    snapshot->past = *point;
    return run_snapshot(engine, *snapshot);
  };
  return {command, run};
}

Command add_capture(CLI::App& app) {
  auto capture = std::make_shared<CaptureArgs>();
  auto* command = app.add_subcommand(
      "capture", "Print an actor's screen (and history) as text lines, as tmux capture-pane -p");
  add_actor(command, capture->actor);
  command
      ->add_option("-S,--start", capture->start,
                   "first line: 0 is the screen's top row, -N the N-th newest history line, - "
                   "the oldest (default 0)")
      ->type_name("LINE")
      ->check(line_value());
  command
      ->add_option("-E,--end", capture->end,
                   "last line, numbered as --start; - the screen's last row (the default)")
      ->type_name("LINE")
      ->check(line_value());
  command->add_flag("-e,--escapes", capture->sgr, "keep colours and attributes (SGR sequences)");
  auto print = std::make_shared<bool>(false);  // outlives parsing, as every option's value
  command->add_flag("-p", *print, "print to stdout (always; accepted as tmux spells it)");
  const auto past = add_past_point(command);
  command->footer("Example: backscroll capture build -S -2000 > build.txt (docs/cli.md)");
  const auto run = [capture, past, print](const EngineTarget& engine) {
    auto point = past();
    if (!point) return report_usage("capture: " + point.error());
    capture->past = *point;
    return run_capture(engine, *capture);
  };
  return {command, run};
}

Command add_search(CLI::App& app) {
  struct Values {
    SearchArgs search;
    std::string from, to;
    std::size_t max_count = 0;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand(
      "search", "Print the lines of an actor's history that match REGEX, with their cursors");
  add_actor(command, values->search.actor);
  command->add_option("REGEX", values->search.pattern, "a PCRE2 regular expression")
      ->type_name("")
      ->required();
  command->add_option("--from", values->from, "first cursor (default: the oldest retained)")
      ->type_name("CURSOR")
      ->check(u64_value());
  command->add_option("--to", values->to, "end cursor, exclusive (default: committed)")
      ->type_name("CURSOR")
      ->check(u64_value());
  command->add_option("-C,--context", values->search.context, "lines before and after a match")
      ->type_name("N")
      ->check(u64_in(0, 1000));
  command->add_option("-m,--max-count", values->max_count, "stop after N matching lines")
      ->type_name("N")
      ->check(u64_in(1, 1'000'000'000));
  command->add_flag("-i,--ignore-case", values->search.ignore_case, "match case-insensitively");
  command->add_flag("--json", values->search.json,
                    "one JSON object per matching line (fields: docs/cli.md)");
  command->footer(
      "Prints CURSOR:LINE per matching line (context lines CURSOR-LINE), the text without escape "
      "sequences. Exit 0 when a line matched, 1 when none did, 2 on an error (docs/cli.md).");
  const auto run = [values](const EngineTarget& engine) {
    values->search.from = cursor_value(values->from);
    values->search.to = cursor_value(values->to);
    if (values->max_count > 0) values->search.max_count = values->max_count;
    return run_search(engine, values->search);
  };
  return {command, run};
}

Command add_events(CLI::App& app) {
  struct Values {
    EventsArgs events;
    std::string from, since;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand(
      "events", "Print an actor's recorded events: spawns, resizes, titles, prompts, exits, ...");
  add_actor(command, values->events.actor);
  command->add_option("--from", values->from, "only events at or after this cursor")
      ->type_name("CURSOR")
      ->check(u64_value());
  command
      ->add_option("--since", values->since,
                   "only events at or after TIME: ISO 8601 (2026-12-02T14:03:07Z, local time "
                   "without an offset) or a duration back from now (90s, 15m, 2h, 3d)")
      ->type_name("TIME")
      ->check(time_value());
  command
      ->add_option("--kind", values->events.kinds,
                   "only events of this kind (repeatable): spawn, resize, clear, title, bell, "
                   "prompt, command_start, command_end, status, exit, seal, keyframe, dropped")
      ->type_name("KIND")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command->add_flag("-f,--follow", values->events.follow,
                    "then print events as they are recorded, until the actor is deleted");
  command->add_flag("--json", values->events.json,
                    "one JSON object per line (fields: docs/recorder.md)");
  command->footer("Prints: TIME CURSOR KIND details, oldest first (docs/recorder.md).");
  const auto run = [values](const EngineTarget& engine) {
    values->events.from = cursor_value(values->from);
    if (!values->since.empty()) values->events.since_ms = parse_time(values->since, now_ms());
    return run_events(engine, values->events);
  };
  return {command, run};
}

Command add_verify(CLI::App& app) {
  auto verify = std::make_shared<VerifyArgs>();
  auto* command = app.add_subcommand(
      "verify",
      "Check that snapshots of an actor reproduce its screen exactly (on its own output)");
  add_actor(command, verify->actor);
  command->add_option("--cuts", verify->cuts, "snapshots to check, at random cursors, 1..1000")
      ->type_name("N")
      ->capture_default_str()
      ->check(u64_in(1, 1000));
  command
      ->add_option("--bytes", verify->window,
                   "check the newest BYTES of the session, 1..1073741824")
      ->type_name("BYTES")
      ->capture_default_str()
      ->check(u64_in(1, std::uint64_t{1} << 30));
  command->add_option("--seed", verify->seed, "the cursors' random seed (default: printed)")
      ->type_name("N")
      ->check(u64_value());
  command->add_flag("--json", verify->json,
                    "print the verdict as one JSON object (fields: docs/cli.md)");
  command->footer(
      "Exit 0: every snapshot plus the raw bytes after it showed what every byte shows; exit 1: "
      "the first difference is printed (please report it with the seed).");
  return {command,
          [verify](const EngineTarget& engine) { return run_verify(engine.places, *verify); }};
}

Command add_attach(CLI::App& app) {
  struct Values {
    AttachArgs attach;
    std::string detach_key = "^]";
    std::string cols, rows;
  };
  auto values = std::make_shared<Values>();
  auto* command =
      app.add_subcommand("attach", "Use the terminal as the actor's terminal (detach with Ctrl-])");
  add_actor(command, values->attach.actor);
  command
      ->add_option("--detach-key", values->detach_key,
                   "detach key: ^X, one ASCII character, or none (default ^])")
      ->type_name("KEY")
      ->check(detach_key());
  command->add_flag("-r,--read-only", values->attach.read_only,
                    "watch as a viewer: never resize the actor, never send keys");
  command->add_flag("-q,--quiet", values->attach.quiet,
                    "no \"attached to NAME\" line at the start");
  command->add_flag("--history", values->attach.history,
                    "draw on the terminal's main screen, with the last lines of history in its "
                    "scrollback (default: the alternate screen; your screen is back at detach)");
  command->add_flag("--spawn", values->attach.spawn,
                    "spawn NAME first (CMD, default $SHELL) unless it exists");
  add_spawn_options(command, values->cols, values->rows, values->attach.spawn_args,
                    "the terminal's", "the terminal's");
  command->footer("Example, the one-command workflow: backscroll attach work --spawn");
  const auto run = [values](const EngineTarget& engine) {
    AttachArgs& attach = values->attach;
    const DetachKeyChoice key = *parse_detach_key(values->detach_key);
    attach.detach_key = key.none ? std::nullopt : std::optional<unsigned char>(key.key);
    attach.spawn_args.cols = size_value(values->cols);
    attach.spawn_args.rows = size_value(values->rows);
    const SpawnArgs& s = attach.spawn_args;
    if (!attach.spawn &&
        (s.cols || s.rows || !s.cwd.empty() || !s.env.empty() || s.env_clear || !s.argv.empty())) {
      return report_usage("attach: CMD, --cols, --rows, --cwd, --env and --env-clear need --spawn");
    }
    return run_attach(engine, attach);
  };
  return {command, run};
}

Command add_wait(CLI::App& app) {
  struct Values {
    WaitArgs wait;
    std::string match, quiet, timeout, from;
  };
  auto values = std::make_shared<Values>();
  auto* command = app.add_subcommand(
      "wait", "Wait until an actor's program ends, it waits for input, or its output matches");
  add_actor(command, values->wait.actor);
  command->add_flag("--exit", values->wait.exit,
                    "until the program ends; exit with its status (128+N for signal N)");
  command->add_flag("--idle", values->wait.idle,
                    "until it waits for input: agent status idle, or (no agent recognised) no "
                    "output for --quiet seconds");
  command
      ->add_option("--match", values->match,
                   "until a line of output after now matches REGEX (PCRE2; printed)")
      ->type_name("REGEX");
  command->add_flag("-i,--ignore-case", values->wait.ignore_case, "--match ignores case");
  command
      ->add_option("--from", values->from,
                   "--match looks from this cursor on (default: now); take it before acting "
                   "(status's committed) so nothing printed before wait starts is missed")
      ->type_name("CURSOR")
      ->check(u64_value());
  command->add_option("--quiet", values->quiet, "--idle's quiet time (default 3)")
      ->type_name("SECS")
      ->check(seconds_value());
  command->add_option("--timeout", values->timeout, "give up after SECS: exit 124")
      ->type_name("SECS")
      ->check(seconds_value());
  command->footer(
      "The first condition met ends the wait. Exit: 0 (idle, match), the program's status "
      "(--exit), 124 (--timeout), 1 (the program ended first, or an error).");
  const auto run = [values](const EngineTarget& engine) {
    WaitArgs& wait = values->wait;
    if (!values->match.empty()) wait.match = values->match;
    if (!wait.exit && !wait.idle && !wait.match) {
      return report_usage("wait: say what to wait for: --exit, --idle or --match REGEX");
    }
    if (!values->quiet.empty()) wait.quiet = *parse_seconds(values->quiet);
    if (!values->timeout.empty()) wait.timeout = parse_seconds(values->timeout);
    if (!values->from.empty()) {
      if (!wait.match) return report_usage("wait: --from goes with --match");
      wait.from = cursor_value(values->from);
    }
    return run_wait(engine, wait);
  };
  return {command, run};
}

// A diagnostic: hidden from --help.
Command add_ping(CLI::App& app) {
  auto* command = app.add_subcommand("ping", "Check that the engine answers");
  command->group("");
  return {command, [](const EngineTarget& engine) { return run_ping(engine); }};
}

Command add_reload(CLI::App& app) {
  auto* command = app.add_subcommand(
      "reload", "Re-read settings.yaml: apply what can change live, list what needs a restart");
  const auto json = add_json(command, "{file, applied, needs_restart}");
  command->footer("Actors keep running. The engine also reloads on SIGHUP (docs/settings.md).");
  return {command, [json](const EngineTarget& engine) { return run_reload(engine, *json); }};
}

Command add_shutdown(CLI::App& app) {
  auto* command =
      app.add_subcommand("shutdown", "Stop every actor and the engine (does not start one)");
  return {command, [](const EngineTarget& engine) { return run_shutdown(engine); }};
}

// `help [CMD]`: the same text as `backscroll [CMD] --help`.
Command add_help(CLI::App& app) {
  auto topic = std::make_shared<std::string>();
  auto* command = app.add_subcommand("help", "Show the help of backscroll or of one command");
  command->add_option("CMD", *topic, "the command")->type_name("");
  const auto run = [&app, topic](const EngineTarget&) {
    if (topic->empty()) {
      // Not app.help(): that describes the parsed command, `help` itself.
      const std::string text =
          app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
      return write_all(STDOUT_FILENO, text) ? kExitOk : kExitError;
    }
    const auto all = app.get_subcommands({});  // hidden ones too: `help ping` works
    if (std::none_of(all.begin(), all.end(),
                     [&](const CLI::App* c) { return c->get_name() == *topic; })) {
      const auto guess = nearest(*topic, visible_commands(app));
      return report_usage("help: unknown command '" + *topic + "'" +
                          (guess ? " (did you mean '" + *guess + "'?)"
                                 : std::string(" (see 'backscroll --help')")));
    }
    const std::string text = app.get_subcommand(*topic)->help(app.get_name());
    return write_all(STDOUT_FILENO, text) ? kExitOk : kExitError;
  };
  return {command, run};
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
  app.set_version_flag("--version", std::string("backscroll ") + BACKSCROLL_VERSION,
                       "print the version and exit");

  // Registration order is the order --help lists them in.
  const std::vector<Command> commands = {
      add_spawn(app),   add_list(app),    add_status(app),   add_tail(app),    add_send(app),
      add_resize(app),  add_clear(app),   add_stop(app),     add_restart(app), add_delete(app),
      add_restore(app), add_history(app), add_snapshot(app), add_capture(app), add_search(app),
      add_events(app),  add_verify(app),  add_attach(app),   add_wait(app),    add_reload(app),
      add_top(app),     add_ping(app),    add_shutdown(app), add_help(app)};

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
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    return report_usage(usage_message(app, e, args));
  }

  const EngineTarget engine{Places::from_environment(), !no_autostart};
  for (const Command& command : commands) {
    if (*command.subcommand) return command.run(engine);
  }
  return report_usage("no command");
}
