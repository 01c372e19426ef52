#include "tools/cli_ops.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

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

std::int64_t integer(const Json& object, const char* key, std::int64_t fallback = 0) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return fallback;
  return it->get<std::int64_t>();
}

std::string pid_text(const Json& object) {
  const std::int64_t pid = integer(object, "pid");
  return pid > 0 ? std::to_string(pid) : "-";
}

// How a session ended: "status N", "signal N", or "-" while it runs.
std::string exit_text(const Json& object) {
  const std::int64_t signal = integer(object, "term_signal");
  if (signal > 0) return "signal " + std::to_string(signal);
  const std::int64_t status = integer(object, "exit_code", -1);
  if (status >= 0) return "status " + std::to_string(status);
  return "-";
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

int print(const std::string& line) {
  if (auto w = write_all(STDOUT_FILENO, line + "\n"); !w) return report(w.error());
  return kExitOk;
}

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

std::string status_detail(const Json& actor) {
  std::string out;
  auto line = [&out](std::string_view key, const std::string& value) {
    out += key;
    out.append(key.size() < 10 ? 10 - key.size() : 1, ' ');
    out += value;
    out += '\n';
  };
  line("name", text(actor, "name"));
  line("state", text(actor, "state"));
  line("pid", pid_text(actor));
  line("session", text(actor, "session"));
  line("epoch", text(actor, "epoch"));
  line("size", text(actor, "cols") + "x" + text(actor, "rows"));
  line("cursors", "floor " + text(actor, "floor") + ", committed " + text(actor, "committed"));
  line("capacity", text(actor, "capacity") + " bytes");
  line("command", shell_join(strings(actor, "argv")));
  line("cwd", text(actor, "cwd"));
  line("input", text(actor, "input_queued") + " bytes queued" +
                    (text(actor, "paused") == "yes" ? ", output paused" : ""));
  const auto sessions = actor.find("sessions");
  if (sessions != actor.end() && sessions->is_array() && !sessions->empty()) {
    Table table({"SESSION", "START", "END", "PID", "EXIT", "SEALED"});
    for (const auto& s : *sessions) {
      table.add({text(s, "id"), text(s, "start"), text(s, "end"), pid_text(s), exit_text(s),
                 text(s, "sealed")});
    }
    out += '\n';
    out += table.render();
  }
  return out;
}

}  // namespace

Result<Json> spawn_fields(const SpawnArgs& args) {
  Json fields = {{"actor", args.actor}};
  std::vector<std::string> argv = args.argv;
  if (argv.empty()) {
    const char* shell = std::getenv("SHELL");
    argv.emplace_back(shell && *shell ? shell : "/bin/sh");
  }
  fields["argv"] = argv;
  std::error_code ec;
  std::filesystem::path cwd = args.cwd.empty() ? std::filesystem::current_path(ec)
                                               : std::filesystem::absolute(args.cwd, ec);
  if (ec) return fail(Errc::io_error, "working directory: " + ec.message());
  fields["cwd"] = cwd.lexically_normal().string();
  if (args.cols) fields["cols"] = *args.cols;
  if (args.rows) fields["rows"] = *args.rows;
  if (!args.env.empty()) {
    Json env = Json::object();
    for (const auto& entry : args.env) {
      const auto eq = entry.find('=');
      env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    fields["env"] = std::move(env);
  }
  return fields;
}

std::string describe_spawned(const Json& r) {
  return text(r, "actor") + " session " + text(r, "session") + " pid " + text(r, "pid") +
         " cursor " + text(r, "cursor");
}

int run_spawn(const EngineTarget& engine, const SpawnArgs& args) {
  auto fields = spawn_fields(args);
  if (!fields) return report(fields.error());
  auto r = call(engine, "spawn", std::move(*fields));
  if (!r) return report(r.error());
  return print(describe_spawned(r->header));
}

int run_list(const EngineTarget& engine) {
  auto r = call(engine, "list");
  if (!r) return report(r.error());
  Table table({"NAME", "STATE", "SESSION", "PID"});
  for (const auto& a : r->header.value("actors", Json::array())) {
    table.add({text(a, "name"), text(a, "state"), text(a, "session"), pid_text(a)});
  }
  if (auto w = write_all(STDOUT_FILENO, table.render()); !w) return report(w.error());
  return kExitOk;
}

int run_status(const EngineTarget& engine, const std::optional<std::string>& actor, bool json) {
  Json fields = Json::object();
  if (actor) fields["actor"] = *actor;
  auto r = call(engine, "status", std::move(fields));
  if (!r) return report(r.error());
  const Json actors = r->header.value("actors", Json::array());
  std::string out;
  if (json) {
    out = actors.dump(2) + "\n";
  } else if (actor && actors.size() == 1) {
    out = status_detail(actors.front());
  } else {
    Table table({"NAME", "STATE", "PID", "SESSION", "SIZE", "FLOOR", "COMMITTED", "COMMAND"});
    for (const auto& a : actors) {
      table.add({text(a, "name"), text(a, "state"), pid_text(a), text(a, "session"),
                 text(a, "cols") + "x" + text(a, "rows"), text(a, "floor"), text(a, "committed"),
                 shell_join(strings(a, "argv"))});
    }
    out = table.render();
  }
  if (auto w = write_all(STDOUT_FILENO, out); !w) return report(w.error());
  return kExitOk;
}

int run_send(const EngineTarget& engine, const SendArgs& args) {
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
               std::uint32_t rows) {
  auto r = call(engine, "resize", {{"actor", actor}, {"cols", cols}, {"rows", rows}});
  if (!r) return report(r.error());
  return print(actor + " resized to " + text(r->header, "cols") + "x" + text(r->header, "rows"));
}

int run_clear(const EngineTarget& engine, const std::string& actor) {
  auto r = call(engine, "clear", {{"actor", actor}});
  if (!r) return report(r.error());
  return print(actor + " cleared, floor " + text(r->header, "floor"));
}

int run_stop(const EngineTarget& engine, const std::string& actor,
             std::optional<std::uint64_t> grace_ms) {
  Json fields = {{"actor", actor}};
  if (grace_ms) fields["grace_ms"] = *grace_ms;
  auto r = call(engine, "stop", std::move(fields));
  if (!r) return report(r.error());
  return print(actor + " session " + text(r->header, "session") +
               " stopped: " + exit_text(r->header) + ", end cursor " + text(r->header, "end"));
}

int run_restart(const EngineTarget& engine, const std::string& actor) {
  auto r = call(engine, "restart", {{"actor", actor}});
  if (!r) return report(r.error());
  return print(describe_spawned(r->header));
}

int run_delete(const EngineTarget& engine, const std::string& actor) {
  auto r = call(engine, "delete", {{"actor", actor}});
  if (!r) return report(r.error());
  if (const auto e = r->header.find("snapshot_error"); e != r->header.end() && e->is_string()) {
    warn("delete: " + actor + ": scrollback not saved: " + e->get<std::string>());
  }
  return print(actor + " deleted");
}

int run_history(const EngineTarget& engine, const HistoryArgs& args) {
  if (args.to && *args.to < args.from) {
    return report_usage("history: --to " + std::to_string(value(*args.to)) + " is before --from " +
                        std::to_string(value(args.from)));
  }
  auto client = engine.connect();
  if (!client) return report(client.error());
  if (args.to) {
    // The engine's history stops at the committed cursor; an end past it is refused here
    // (cursor_in_future), before anything is written. Committed only grows: checked once.
    auto status = client->call("status", {{"actor", args.actor}});
    if (!status) return report(status.error());
    const Json actors = status->header.value("actors", Json::array());
    const std::uint64_t committed =
        actors.empty() ? 0 : actors.front().value("committed", std::uint64_t{0});
    if (value(*args.to) > committed) {
      return report(Error{Errc::cursor_in_future,
                          "cursor " + std::to_string(value(*args.to)) +
                              " is past the committed cursor " + std::to_string(committed),
                          committed});
    }
  }
  OutputFile out(args.output);
  Cursor from = args.from;
  for (;;) {
    Json fields = {{"actor", args.actor}, {"from", value(from)}};
    if (args.to) fields["to"] = value(*args.to);
    if (!args.epoch.empty()) fields["epoch"] = args.epoch;
    auto r = client->call("history", std::move(fields));
    if (!r) {
      const Error& e = r.error();
      // A damaged stretch of the transcript: everything before it is written already.
      if (e.code == Errc::data_lost && args.skip_damaged && e.cursor && Cursor{*e.cursor} > from) {
        warn("history: skipped " + e.message);
        from = Cursor{*e.cursor};
        if (args.to && from >= *args.to) break;
        continue;
      }
      return report(e);
    }
    if (auto w = out.write(r->payload); !w) return report(w.error());
    const auto to = r->header.find("to");
    if (!r->header.value("more", false)) break;
    if (to == r->header.end() || !to->is_number_unsigned() ||
        Cursor{to->get<std::uint64_t>()} <= from) {
      return report(Error{Errc::internal, "history: the engine reported more bytes but no progress",
                          std::nullopt});
    }
    from = Cursor{to->get<std::uint64_t>()};
  }
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
