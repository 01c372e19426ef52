#include "tools/cli_ops.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "tools/cli_output.hpp"

namespace backscroll::cli {
namespace {

using control::Json;

constexpr std::size_t kInputChunkBytes = 64 * 1024;  // well under the 1 MiB input queue
constexpr std::chrono::milliseconds kInputRetryFor{10000};
constexpr std::chrono::milliseconds kShutdownWait{20000};
constexpr std::string_view kPasteStart = "\x1b[200~";
constexpr std::string_view kPasteEnd = "\x1b[201~";

// A field as text for tables: strings as they are, numbers in decimal, "-" when absent.
std::string text(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_boolean()) return it->get<bool>() ? "yes" : "no";
  return it->dump();
}

// A byte count in MiB, "27.8 MiB"; "-" when absent (an engine that does not report it).
std::string mib_text(const Json& object, const Json::json_pointer& at) {
  if (!object.contains(at) || !object.at(at).is_number()) return "-";
  return fmt::format("{:.1f} MiB", object.at(at).get<double>() / (1u << 20));
}

std::int64_t integer(const Json& object, const char* key, std::int64_t fallback = 0) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return fallback;
  return it->get<std::int64_t>();
}

std::string pid_text(const Json& object) {
  const std::int64_t pid = integer(object, "pid");
  return pid > 0 ? std::to_string(pid) : "-";
}

int print(const std::string& line) {
  if (auto w = write_all(STDOUT_FILENO, line + "\n"); !w) return report(w.error());
  return kExitOk;
}

// `state`, or for an idle actor whose program ended, how it ended: "exited(7)".
std::string state_text(const Json& actor) {
  const std::string state = text(actor, "state");
  if (state != "idle") return state;
  const std::string ended = ending_text(actor);
  return ended.empty() ? state : ended;
}

// exit_code and term_signal as a script reads them: null when they do not apply.
Json ending_json(const Json& object) {
  const std::int64_t code = integer(object, "exit_code", -1);
  const std::int64_t signal = integer(object, "term_signal");
  return {{"exit_code", code >= 0 && signal <= 0 ? Json(code) : Json(nullptr)},
          {"term_signal", signal > 0 ? Json(signal) : Json(nullptr)}};
}

// spawn and restart --json.
Json spawned_json(const Json& r) {
  return {{"name", r.value("actor", "")},
          {"session", r.value("session", 0)},
          {"pid", r.contains("pid") ? r["pid"] : Json(nullptr)},
          {"cursor", r.value("cursor", 0)},
          {"epoch", r.value("epoch", "")}};
}

// Prints `object` as one line of JSON, or `human`.
int print_either(bool json, const Json& object, const std::string& human) {
  return print(json ? object.dump() : human);
}

std::vector<std::string> strings(const Json& object, const char* key) {
  std::vector<std::string> out;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return out;
  for (const auto& v : *it) out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

// One call on a fresh connection (starting the engine if needed): the usual shape of a command.
Result<control::Frame> call(const EngineTarget& engine, std::string_view op,
                            Json fields = Json::object(), std::string_view payload = {}) {
  auto client = engine.connect();
  if (!client) return tl::unexpected(client.error());
  return client->call(op, std::move(fields), payload);
}

// Where a command writes bytes: stdout ("" or "-") or a file, created only with the first
// write (no empty file when the engine refuses) and owner-only, like the engine's own files:
// terminal output can hold secrets.
class OutputFile {
 public:
  explicit OutputFile(std::string path) : path_(std::move(path)) {
    if (path_.empty() || path_ == "-") fd_ = STDOUT_FILENO;
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() {
    if (fd_ >= 0 && fd_ != STDOUT_FILENO) ::close(fd_);
  }
  Result<void> write(std::string_view bytes) {
    if (fd_ < 0) {
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd_ < 0) return fail_errno("open " + path_, errno);
    }
    return write_all(fd_, bytes);
  }

 private:
  std::string path_;
  int fd_ = -1;
};

Result<std::string> read_stdin() {
  std::string data;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0) return data;
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail_errno("read stdin", errno);
    }
    data.append(buf, static_cast<std::size_t>(n));
    if (data.size() > control::kMaxPayloadBytes) {
      return fail(Errc::too_large,
                  "stdin holds more than " + std::to_string(control::kMaxPayloadBytes) + " bytes");
    }
  }
}

// What runs in the actor: its foreground program while a session runs (the shell at its
// prompt, or what it started: `vim README.md`), else the program it was spawned with.
std::string command_text(const Json& actor) {
  if (const auto f = actor.find("foreground"); f != actor.end() && f->is_object()) {
    const std::vector<std::string> argv = strings(*f, "argv");
    if (!argv.empty()) return shell_join(argv);
    return text(*f, "command");
  }
  return shell_join(strings(actor, "argv"));
}

std::string status_detail(const Json& actor) {
  std::string out;
  auto line = [&out](std::string_view key, const std::string& value) {
    out += key;
    out.append(key.size() < 10 ? 10 - key.size() : 1, ' ');
    out += value;
    out += '\n';
  };
  line("name", text(actor, "name"));
  line("state", state_text(actor));
  line("pid", pid_text(actor));
  line("session", text(actor, "session"));
  line("epoch", text(actor, "epoch"));
  line("size", text(actor, "cols") + "x" + text(actor, "rows"));
  // A released idle ring holds nothing (floor = committed) while history still has the bytes.
  line("cursors", "oldest " + text(actor, "oldest") + ", ring floor " + text(actor, "floor") +
                      ", committed " + text(actor, "committed"));
  line("capacity", text(actor, "capacity") + " bytes");
  line("command", shell_join(strings(actor, "argv")));
  line("cwd", text(actor, "cwd"));
  if (const auto f = actor.find("foreground"); f != actor.end() && f->is_object()) {
    line("foreground", shell_join(strings(*f, "argv")) + " (pid " + text(*f, "pid") + ", in " +
                           text(*f, "cwd") + ")");
  }
  line("input", text(actor, "input_queued") + " bytes queued" +
                    (text(actor, "paused") == "yes" ? ", output paused" : ""));
  line("memory", mib_text(actor, "/memory/used/total"_json_pointer) + " used of " +
                     mib_text(actor, "/memory/reserved/total"_json_pointer) + " reserved");
  const auto sessions = actor.find("sessions");
  if (sessions != actor.end() && sessions->is_array() && !sessions->empty()) {
    Table table({"SESSION", "START", "END", "PID", "EXIT", "SEALED"});
    for (const auto& s : *sessions) {
      const std::string ended = ending_text(s);
      table.add({text(s, "id"), text(s, "start"), text(s, "end"), pid_text(s),
                 ended.empty() ? "-" : ended, text(s, "sealed")});
    }
    out += '\n';
    out += table.render();
  }
  return out;
}

}  // namespace

std::vector<std::string> login_shell() {
  std::string shell;
  if (const char* env = std::getenv("SHELL"); env && *env) shell = env;
  if (shell.empty()) {
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_shell && *pw->pw_shell)
      shell = pw->pw_shell;
  }
  if (shell.empty()) shell = "/bin/sh";
  return {shell, "-l"};
}

Result<Json> spawn_fields(const SpawnArgs& args) {
  Json fields = {{"actor", args.actor}};
  std::vector<std::string> argv = args.argv;
  if (argv.empty()) argv = login_shell();
  fields["argv"] = argv;
  if (!args.first_argv.empty()) fields["first_argv"] = args.first_argv;
  std::error_code ec;
  std::filesystem::path cwd = args.cwd.empty() ? std::filesystem::current_path(ec)
                                               : std::filesystem::absolute(args.cwd, ec);
  if (ec) return fail(Errc::io_error, "working directory: " + ec.message());
  fields["cwd"] = cwd.lexically_normal().string();
  if (args.cols) fields["cols"] = *args.cols;
  if (args.rows) fields["rows"] = *args.rows;
  if (args.rm_always) fields["remove"] = "always";
  else if (args.rm) fields["remove"] = "on_success";
  // The program's environment is the caller's (as its cwd is), with --env over it.
  Json env = Json::object();
  const auto add = [&env](std::string_view entry) {
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) return;
    env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  };
  if (!args.env_clear) {
    for (char** e = environ; *e != nullptr; ++e) add(*e);
  }
  for (const auto& entry : args.env) add(entry);
  fields["env"] = std::move(env);
  fields["env_mode"] = "replace";
  return fields;
}

std::string describe_spawned(const Json& r) {
  return text(r, "actor") + " session " + text(r, "session") + " pid " + text(r, "pid") +
         " cursor " + text(r, "cursor");
}

std::string ending_text(const Json& object) {
  const Json ended = ending_json(object);
  if (!ended["term_signal"].is_null()) {
    const int signal = ended["term_signal"].get<int>();
    const char* name = ::sigabbrev_np(signal);
    return "killed(" + (name ? "SIG" + std::string(name) : std::to_string(signal)) + ")";
  }
  if (!ended["exit_code"].is_null()) return "exited(" + ended["exit_code"].dump() + ")";
  return "";
}

int run_spawn(const EngineTarget& engine, const SpawnArgs& given, bool json) {
  SpawnArgs args = given;
  if (!args.cwd_of.empty()) {
    auto r = call(engine, "status", Json{{"actor", args.cwd_of}});
    if (!r) return report(r.error());
    const Json actors = r->header.value("actors", Json::array());
    if (actors.empty())
      return report(fail(Errc::no_such_actor, "no actor '" + args.cwd_of + "'").value());
    const Json& other = actors.front();
    const Json foreground = other.value("foreground", Json());
    args.cwd = foreground.is_object() && !text(foreground, "cwd").empty() ? text(foreground, "cwd")
                                                                          : text(other, "cwd");
  }
  auto fields = spawn_fields(args);
  if (!fields) return report(fields.error());
  auto r = call(engine, "spawn", std::move(*fields));
  if (!r) return report(r.error());
  return print_either(json, spawned_json(r->header), describe_spawned(r->header));
}

int run_list(const EngineTarget& engine, bool json) {
  auto r = call(engine, "list");
  if (!r) return report(r.error());
  const Json actors = r->header.value("actors", Json::array());
  if (json) return print(actors.dump());
  Table table({"NAME", "STATE", "SESSION", "PID", "COMMAND"});
  for (const auto& a : actors) {
    table.add({text(a, "name"), state_text(a), text(a, "session"), pid_text(a), command_text(a)});
  }
  if (auto w = write_all(STDOUT_FILENO, table.render()); !w) return report(w.error());
  return kExitOk;
}

int run_status(const EngineTarget& engine, const std::optional<std::string>& actor, bool json,
               bool whole) {
  Json fields = Json::object();
  if (actor) fields["actor"] = *actor;
  auto r = call(engine, "status", std::move(fields));
  if (!r) return report(r.error());
  const Json actors = r->header.value("actors", Json::array());
  std::string out;
  if (json && whole) {
    Json reply = r->header;
    reply.erase("id");
    out = reply.dump(2) + "\n";
  } else if (json) {
    out = actors.dump(2) + "\n";
  } else if (actor && actors.size() == 1) {
    out = status_detail(actors.front());
  } else {
    // list's columns first, in list's order.
    Table table(
        {"NAME", "STATE", "SESSION", "PID", "SIZE", "FLOOR", "COMMITTED", "MEMORY", "COMMAND"});
    for (const auto& a : actors) {
      table.add({text(a, "name"), state_text(a), text(a, "session"), pid_text(a),
                 text(a, "cols") + "x" + text(a, "rows"), text(a, "floor"), text(a, "committed"),
                 mib_text(a, "/memory/reserved/total"_json_pointer), command_text(a)});
    }
    out = table.render();
    // The engine's total against memory_budget (docs/settings.md).
    const Json& header = r->header;
    if (header.contains("memory")) {
      out += "\nmemory: " + mib_text(header, "/memory/reserved"_json_pointer) +
             " reserved of the " + mib_text(header, "/memory/budget"_json_pointer) +
             " memory_budget, " + mib_text(header, "/memory/used"_json_pointer) + " used\n";
    }
  }
  if (auto w = write_all(STDOUT_FILENO, out); !w) return report(w.error());
  return kExitOk;
}

int run_send(const EngineTarget& engine, const SendArgs& args) {
  if (args.cancel) {
    auto r = call(engine, "cancel_send", {{"actor", args.actor}, {"send", *args.cancel}});
    return r ? kExitOk : report(r.error());
  }
  std::string payload;
  const bool from_stdin = args.text.size() == 1 && args.text.front() == "-";
  if (from_stdin) {
    auto data = read_stdin();
    if (!data) return report(data.error());
    payload = std::move(*data);
  } else {
    for (const auto& word : args.text) {
      if (!payload.empty()) payload += ' ';
      payload += word;
    }
  }
  if (args.bracketed) payload = std::string(kPasteStart) + payload + std::string(kPasteEnd);
  if (!from_stdin && !args.no_newline) payload += '\r';  // what Enter sends
  if (payload.empty()) return report_usage("send: nothing to send");

  auto client = engine.connect();
  if (!client) return report(client.error());
  if (args.when_idle) {
    // One request: the text goes in whole, or not at all.
    if (payload.size() > kInputChunkBytes) {
      return report_usage("send --when-idle: at most " + std::to_string(kInputChunkBytes) +
                          " bytes");
    }
    Json fields = {{"actor", args.actor}, {"when_idle", true}};
    if (args.paste) fields["paste"] = true;
    if (args.timeout_s) fields["timeout_ms"] = *args.timeout_s * 1000;
    auto r = client->call("input", std::move(fields), payload);
    return r ? kExitOk : report(r.error());
  }
  // Pieces well under the input queue's bound; a full queue (the program is not reading yet) is
  // waited out for a while, since the engine keeps what it accepted and in order.
  std::string_view rest = payload;
  auto last_progress = std::chrono::steady_clock::now();
  std::chrono::milliseconds backoff{10};
  while (!rest.empty()) {
    const std::string_view piece = rest.substr(0, kInputChunkBytes);
    Json fields = {{"actor", args.actor}};
    if (args.paste) fields["paste"] = true;
    auto r = client->call("input", std::move(fields), piece);
    if (r) {
      rest.remove_prefix(piece.size());
      last_progress = std::chrono::steady_clock::now();
      backoff = std::chrono::milliseconds{10};
      continue;
    }
    if (r.error().code != Errc::too_large ||
        std::chrono::steady_clock::now() - last_progress > kInputRetryFor) {
      Error e = r.error();
      if (rest.size() != payload.size()) {
        e.message += " (" + std::to_string(payload.size() - rest.size()) + " of " +
                     std::to_string(payload.size()) + " bytes were sent)";
      }
      return report(e);
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds{200});
  }
  return kExitOk;
}

int run_resize(const EngineTarget& engine, const std::string& actor, std::uint32_t cols,
               std::uint32_t rows, bool json) {
  auto r = call(engine, "resize", {{"actor", actor}, {"cols", cols}, {"rows", rows}});
  if (!r) return report(r.error());
  const Json result{{"name", actor},
                    {"cols", r->header.value("cols", cols)},
                    {"rows", r->header.value("rows", rows)}};
  return print_either(json, result,
                      actor + " resized to " + text(result, "cols") + "x" + text(result, "rows"));
}

int run_clear(const EngineTarget& engine, const std::string& actor, bool screen, bool json) {
  auto r = call(engine, "clear", {{"actor", actor}, {"screen", screen}});
  if (!r) return report(r.error());
  const bool kept = r->header.value("screen_kept", false);
  const Json result{{"name", actor},
                    {"floor", r->header.value("floor", std::uint64_t{0})},
                    {"screen_kept", kept}};
  std::string line = actor + " cleared, floor " + text(result, "floor");
  if (kept) {
    line += ", screen kept";
  } else if (!screen) {
    // Asked to keep it, and the engine could not: say why.
    line += ", screen cleared too (" + r->header.value("screen_cleared", std::string("no mirror")) +
            ")";
  }
  return print_either(json, result, line);
}

namespace {

// The fields of a stop, restart or delete: the actor, and the signal when one was named.
Json lifecycle_fields(const std::string& actor, const std::string& signal) {
  Json fields = {{"actor", actor}};
  if (!signal.empty()) fields["signal"] = signal;
  return fields;
}

}  // namespace

int run_stop(const EngineTarget& engine, const std::string& actor,
             std::optional<std::uint64_t> grace_ms, const std::string& signal, bool json) {
  Json fields = lifecycle_fields(actor, signal);
  if (grace_ms) fields["grace_ms"] = *grace_ms;
  auto r = call(engine, "stop", std::move(fields));
  if (!r) return report(r.error());
  const Json& h = r->header;
  Json result{{"name", actor},
              {"session", h.value("session", 0)},
              {"end", h.value("end", std::uint64_t{0})},
              {"already_stopped", h.value("already_stopped", false)}};
  result.update(ending_json(h));
  std::string ended = ending_text(h);
  if (ended.empty()) ended = "ended";
  const std::string human = result["already_stopped"].get<bool>()
                                ? actor + " already stopped: session " + text(h, "session") + " " +
                                      ended + ", end cursor " + text(h, "end")
                                : actor + " session " + text(h, "session") + " stopped: " + ended +
                                      ", end cursor " + text(h, "end");
  return print_either(json, result, human);
}

int run_restart(const EngineTarget& engine, const std::string& actor, const std::string& signal,
                bool json) {
  auto r = call(engine, "restart", lifecycle_fields(actor, signal));
  if (!r) return report(r.error());
  return print_either(json, spawned_json(r->header), describe_spawned(r->header));
}

int run_delete(const EngineTarget& engine, const std::string& actor, const std::string& signal,
               bool json) {
  auto r = call(engine, "delete", lifecycle_fields(actor, signal));
  if (!r) return report(r.error());
  const Json& h = r->header;
  const auto error = h.find("snapshot_error");
  const bool unsaved = error != h.end() && error->is_string();
  if (unsaved && !json) {
    warn("delete: " + actor + ": scrollback not saved: " + error->get<std::string>());
  }
  const Json result{{"name", actor},
                    {"deleted", true},
                    {"snapshot", h.contains("snapshot") ? h["snapshot"] : Json(nullptr)},
                    {"snapshot_error", unsaved ? *error : Json(nullptr)}};
  return print_either(json, result, actor + " deleted");
}

int run_history(const EngineTarget& engine, const HistoryArgs& args) {
  if (args.from && args.to && *args.to < *args.from) {
    return report_usage("history: --to " + std::to_string(value(*args.to)) + " is before --from " +
                        std::to_string(value(*args.from)));
  }
  auto client = engine.connect();
  if (!client) return report(client.error());
  std::string epoch;
  if (args.to || args.json) {
    // The engine's history stops at the committed cursor; an end past it is refused here
    // (cursor_in_future), before anything is written. Committed only grows: checked once.
    auto status = client->call("status", {{"actor", args.actor}});
    if (!status) return report(status.error());
    const Json actors = status->header.value("actors", Json::array());
    const Json actor = actors.empty() ? Json::object() : actors.front();
    const std::uint64_t committed = actor.value("committed", std::uint64_t{0});
    epoch = actor.value("epoch", "");
    if (args.to && value(*args.to) > committed) {
      return report(Error{Errc::cursor_in_future,
                          "cursor " + std::to_string(value(*args.to)) +
                              " is past the committed cursor " + std::to_string(committed),
                          committed});
    }
  }
  OutputFile out(args.output);
  std::optional<LineSelector> lines;
  if (args.lines) lines.emplace(*args.lines);
  std::string selected;
  // Writes `bytes`, or what --lines keeps of them.
  const auto emit = [&](std::string_view bytes) -> Result<void> {
    if (!lines) return out.write(bytes);
    selected.clear();
    lines->feed(bytes, selected);
    return out.write(selected);
  };
  Cursor from = args.from.value_or(Cursor{0});
  const Cursor first_asked = from;
  std::optional<Cursor> started;  // the first cursor written (after skipping to the oldest)
  Json gaps = Json::array();
  std::uint64_t written = 0;
  for (;;) {
    Json fields = {{"actor", args.actor}, {"from", value(from)}};
    if (args.to) fields["to"] = value(*args.to);
    if (!args.epoch.empty()) fields["epoch"] = args.epoch;
    auto r = client->call("history", std::move(fields));
    if (!r) {
      const Error& e = r.error();
      // No --from: "the whole retained range" starts where the engine says the oldest byte is.
      if (e.code == Errc::cursor_expired && !args.from && !started && e.cursor &&
          Cursor{*e.cursor} > from) {
        from = Cursor{*e.cursor};
        continue;
      }
      // A damaged stretch of the transcript: everything before it is written already.
      if (e.code == Errc::data_lost && args.skip_damaged && e.cursor && Cursor{*e.cursor} > from) {
        warn("history: skipped " + e.message);
        gaps.push_back({{"from", value(from)}, {"to", *e.cursor}});
        from = Cursor{*e.cursor};
        if (args.to && from >= *args.to) break;
        continue;
      }
      return report(e);
    }
    if (!started) started = from;
    if (auto w = emit(r->payload); !w) return report(w.error());
    written += r->payload.size();
    const auto to = r->header.find("to");
    if (!r->header.value("more", false) || (lines && lines->done())) {
      if (to != r->header.end() && to->is_number_unsigned())
        from = Cursor{to->get<std::uint64_t>()};
      break;
    }
    if (to == r->header.end() || !to->is_number_unsigned() ||
        Cursor{to->get<std::uint64_t>()} <= from) {
      return report(Error{Errc::internal, "history: the engine reported more bytes but no progress",
                          std::nullopt});
    }
    from = Cursor{to->get<std::uint64_t>()};
  }
  if (lines) {
    selected.clear();
    lines->finish(selected);
    if (auto w = out.write(selected); !w) return report(w.error());
  }
  if (args.json) {
    const Json meta{
        {"name", args.actor}, {"epoch", epoch},   {"from", value(started.value_or(first_asked))},
        {"to", value(from)},  {"bytes", written}, {"gaps", std::move(gaps)}};
    // stdout is the bytes unless they went to a file.
    const bool to_file = !args.output.empty() && args.output != "-";
    if (auto w = write_all(to_file ? STDOUT_FILENO : STDERR_FILENO, meta.dump() + "\n"); !w) {
      return report(w.error());
    }
  }
  return kExitOk;
}

int run_reload(const EngineTarget& engine, bool json) {
  auto r = call(engine, "reload");
  if (!r) return report(r.error());
  const Json& h = r->header;
  if (json) {
    return print(Json{{"file", h.value("file", "")},
                      {"applied", h.value("applied", Json::array())},
                      {"needs_restart", h.value("needs_restart", Json::array())}}
                     .dump());
  }
  std::string out = "reloaded " + h.value("file", std::string("settings.yaml")) + "\n";
  const auto list = [&out, &h](const char* field, const std::string& how) {
    for (const Json& c : h.value(field, Json::array())) {
      out += "  " + text(c, "key") + ": " + text(c, "from") + " -> " + text(c, "to") + how + "\n";
    }
  };
  list("applied", "");
  list("needs_restart", " (at the next engine start: backscroll shutdown, then any command)");
  if (h.value("applied", Json::array()).empty() &&
      h.value("needs_restart", Json::array()).empty()) {
    out += "  nothing changed\n";
  }
  if (auto w = write_all(STDOUT_FILENO, out); !w) return report(w.error());
  return kExitOk;
}

int run_ping(const EngineTarget& engine) {
  auto r = call(engine, "ping");
  if (!r) return report(r.error());
  return print("engine pid " + text(r->header, "pid") + ", protocol version " +
               text(r->header, "version"));
}

int run_shutdown(const EngineTarget& engine) {
  auto client = engine.connect_existing();
  if (!client) {
    if (client.error().code == Errc::engine_unavailable) return print("no engine running");
    return report(client.error());
  }
  auto ping = client->call("ping");
  if (!ping) return report(ping.error());
  const std::int64_t pid = integer(ping->header, "pid");
  auto r = client->call("shutdown");
  if (!r) return report(r.error());
  // The engine answers first, then stops every actor (each may take its grace period) and exits.
  // Wait for the process, so a following command does not race the old engine.
  const auto deadline = std::chrono::steady_clock::now() + kShutdownWait;
  while (pid > 0 && process_running(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return print("engine pid " + std::to_string(pid) + " is still stopping");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return print("engine pid " + std::to_string(pid) + " stopped");
}

void PastPoint::add_to(Json& request) const {
  if (at) request["at"] = value(*at);
  if (!at_event.empty()) request["at_event"] = at_event;
  if (at_time_ms) request["at_time_ms"] = *at_time_ms;
}

int run_snapshot(const EngineTarget& engine, const SnapshotArgs& args) {
  Json request{{"actor", args.actor}, {"formats", Json::array({"snapshot_v1"})}};
  if (args.scrollback) request["scrollback"] = *args.scrollback;
  args.past.add_to(request);
  auto r = call(engine, "snapshot", std::move(request));
  if (!r) return report(r.error());
  const Json& h = r->header;
  // With --json the metadata owns stdout: the bytes go only to --output.
  if (!args.json || (!args.output.empty() && args.output != "-")) {
    OutputFile out(args.output);
    if (auto w = out.write(r->payload); !w) return report(w.error());
  }
  if (args.json) {
    Json meta{{"actor", args.actor}};
    for (const char* key : {"format", "cursor", "epoch", "cols", "rows", "bytes",
                            "scrollback_lines", "reason", "keyframe", "replayed_bytes"}) {
      if (const auto it = h.find(key); it != h.end()) meta[key] = *it;
    }
    return print(meta.dump());
  }
  if (h.value("format", "") != "snapshot_v1") {
    // No bytes to show: say why and where a raw replay starts (stderr: stdout stays the bytes).
    (void)write_all(STDERR_FILENO,
                    "backscroll: raw_replay (" + h.value("reason", std::string("?")) + "): " +
                        (args.past.given() ? "no exact screen at cursor " + text(h, "cursor")
                                           : "replay from cursor " + text(h, "cursor")) +
                        "\n");
  }
  return kExitOk;
}

}  // namespace backscroll::cli
