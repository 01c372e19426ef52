// The CLI commands that are one control request (or a short loop of them): spawn, list,
// status, send, resize, clear, stop, restart, delete, history, snapshot, ping, shutdown. Each
// returns the process exit status (cli_output.hpp) and prints its one-line result or its table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shm/control_frame.hpp"
#include "shm/cursor.hpp"
#include "shm/error.hpp"
#include "tools/cli_engine.hpp"
#include "tools/cli_line_range.hpp"

namespace backscroll::cli {

struct SpawnArgs {
  std::string actor;
  std::optional<std::uint32_t> cols;  // engine default 80
  std::optional<std::uint32_t> rows;  // engine default 24
  std::string cwd;                    // empty: this process's working directory
  std::vector<std::string> env;       // K=V entries, already validated, over the caller's
  bool env_clear = false;             // the program gets only `env` (and TERM, BACKSCROLL_ACTOR)
  std::vector<std::string> argv;      // empty: login_shell()
  // The first session's program instead of `argv` (restore: print the saved scrollback, then
  // exec the shell); `argv` stays the actor's command, what restart runs. Empty: `argv`.
  std::vector<std::string> first_argv;
  // --rm: delete the actor once its program exits with status 0; --rm-always: however it ends.
  bool rm = false;
  bool rm_always = false;
  // --cwd-of OTHER: start where OTHER's foreground program is (else where OTHER was spawned).
  std::string cwd_of;
};

// What `spawn NAME` with no program starts: the user's login shell ($SHELL, else the passwd
// entry's, else /bin/sh) with -l, as tmux does.
std::vector<std::string> login_shell();
// The `spawn` request fields for `args` (relative cwd made absolute here: the engine runs
// elsewhere).
Result<control::Json> spawn_fields(const SpawnArgs& args);
// "NAME session S pid P cursor C", from a spawn or restart response.
std::string describe_spawned(const control::Json& response);
// How a program ended, as list and stop print it: "exited(7)", "killed(SIGKILL)"; "" when the
// fields say it has not (exit_code < 0 or null, term_signal 0 or null).
std::string ending_text(const control::Json& object);

struct SendArgs {
  std::string actor;
  std::vector<std::string> text;  // {"-"}: stdin, verbatim
  bool no_newline = false;
  bool paste = false;      // the request's `paste` flag: the engine writes the final Enter apart
  bool bracketed = false;  // wrap the text in bracketed-paste markers
  // --when-idle: the engine holds the text until the actor waits for input (docs/cli.md);
  // --timeout: give up after this many seconds, sending nothing.
  bool when_idle = false;
  std::optional<std::uint64_t> timeout_s;
  std::optional<std::uint64_t> cancel;  // --cancel ID: drop a send that waits
};

struct HistoryArgs {
  std::string actor;
  std::optional<Cursor> from;  // default: the oldest retained byte (ring, cache or transcript)
  std::optional<Cursor> to;    // default: the committed cursor
  std::string epoch;           // empty: not checked
  std::string output;          // empty or "-": stdout
  bool skip_damaged = false;   // go on after a data_lost gap (listed on stderr) instead of failing
  std::optional<LineRange> lines;  // only these lines of the range's bytes
  bool json = false;  // metadata {name, epoch, from, to, bytes, gaps} once the bytes are out
};

// The screen at a past point (docs/recorder.md, `snapshot` with `at`, `at_event`,
// `at_time_ms`): a cursor, or an event as KIND:N; or a time. None: now.
struct PastPoint {
  std::optional<Cursor> at;
  std::string at_event;
  std::optional<std::int64_t> at_time_ms;

  bool given() const { return at || !at_event.empty() || at_time_ms; }
  // Its fields, added to a `snapshot` request.
  void add_to(control::Json& request) const;
};

struct SnapshotArgs {
  std::string actor;
  // History lines drawn before the screen; nullopt: the engine's default (settings.yaml
  // snapshot.scrollback_lines, 512).
  std::optional<std::uint64_t> scrollback;
  std::string output;  // empty or "-": stdout
  bool json = false;   // print the metadata as JSON (bytes only with --output)
  PastPoint past;
};

// With `json`, the result is one JSON object (list: an array) on stdout, with the stable
// field names of docs/cli.md ("JSON output"), instead of the line or table people read.
int run_spawn(const EngineTarget& engine, const SpawnArgs& args, bool json = false);
int run_list(const EngineTarget& engine, bool json);
// `whole`: with json, the engine's reply whole (actors, memory, mirror) instead of the actors.
int run_status(const EngineTarget& engine, const std::optional<std::string>& actor, bool json,
               bool whole = false);
int run_send(const EngineTarget& engine, const SendArgs& args);
int run_resize(const EngineTarget& engine, const std::string& actor, std::uint32_t cols,
               std::uint32_t rows, bool json);
int run_clear(const EngineTarget& engine, const std::string& actor, bool screen, bool json);
// `signal`: what is sent first instead of SIGHUP ("" for SIGHUP).
int run_stop(const EngineTarget& engine, const std::string& actor,
             std::optional<std::uint64_t> grace_ms, const std::string& signal, bool json);
int run_restart(const EngineTarget& engine, const std::string& actor, const std::string& signal,
                bool json);
int run_delete(const EngineTarget& engine, const std::string& actor, const std::string& signal,
               bool json);
int run_history(const EngineTarget& engine, const HistoryArgs& args);
int run_snapshot(const EngineTarget& engine, const SnapshotArgs& args);
// Asks the engine to re-read settings.yaml; one line per change (or "nothing changed").
int run_reload(const EngineTarget& engine, bool json);
int run_ping(const EngineTarget& engine);
int run_shutdown(const EngineTarget& engine);

}  // namespace backscroll::cli
