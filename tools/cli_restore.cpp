#include "tools/cli_restore.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <vector>

#include "shm/actor_name.hpp"
#include "shm/control_frame.hpp"
#include "tools/cli_ops.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_time.hpp"

namespace backscroll::cli {
namespace {

namespace fs = std::filesystem;
using control::Json;

constexpr std::uintmax_t kMaxSnapshotJson = 1 << 20;

Result<Json> read_snapshot(const fs::path& path, const std::string& actor) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) {
    return fail(Errc::no_such_actor, "no deletion snapshot of '" + actor + "' (" + path.string() +
                                         ": " + ec.message() + ")");
  }
  if (size > kMaxSnapshotJson) return fail(Errc::too_large, path.string() + " is too large");
  std::ifstream in(path, std::ios::binary);
  const Json json =
      Json::parse(std::string(std::istreambuf_iterator<char>(in), {}), nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return fail(Errc::bad_request, path.string() + " is not a deletion snapshot");
  }
  return json;
}

}  // namespace

int run_restore(const EngineTarget& engine, const RestoreArgs& args) {
  // A name, never a path: the files are looked up in the deleted folder only.
  if (!is_valid_actor_name(args.actor)) {
    return report(Error{Errc::bad_actor_name, "'" + args.actor + "' is not an actor name", {}});
  }
  const fs::path dir = engine.places.deleted_dir();
  auto snapshot = read_snapshot(dir / (args.actor + ".snapshot.json"), args.actor);
  if (!snapshot) return report(snapshot.error());

  SpawnArgs spawn;
  spawn.actor = args.as.value_or(args.actor);
  const char* shell = std::getenv("SHELL");
  const std::string program = shell && *shell ? shell : "/bin/sh";
  // Only the scrollback file the deletion wrote, whatever the JSON names.
  const fs::path scrollback = dir / (args.actor + ".scrollback");
  std::error_code ec;
  if ((*snapshot)["scrollback"].is_string() && fs::is_regular_file(scrollback, ec)) {
    // The saved text first (the PTY turns its "\n" into "\r\n"), then the user's shell; only
    // in the first session: the actor's command is the shell.
    spawn.first_argv = {
        "/bin/sh",           "-c",   "cat -- \"$1\"; exec \"$2\"", "backscroll-restore",
        scrollback.string(), program};
  } else {
    warn("restore: no saved scrollback for '" + args.actor + "'; opening a shell only");
  }
  spawn.argv = {program};
  const Json& cwd_field = (*snapshot)["cwd"];
  const std::string cwd = cwd_field.is_string() ? cwd_field.get<std::string>() : std::string();
  if (!cwd.empty() && fs::is_directory(cwd, ec)) {
    spawn.cwd = cwd;
  } else if (!cwd.empty()) {
    const char* home = std::getenv("HOME");
    spawn.cwd = home && *home ? home : "/";
    warn("restore: " + cwd + " is gone; opening the shell in " + spawn.cwd);
  }
  if (const auto cols = (*snapshot).find("cols");
      cols != snapshot->end() && cols->is_number_unsigned())
    spawn.cols = cols->get<std::uint32_t>();
  if (const auto rows = (*snapshot).find("rows");
      rows != snapshot->end() && rows->is_number_unsigned())
    spawn.rows = rows->get<std::uint32_t>();
  return run_spawn(engine, spawn);
}

int run_restore_list(const Places& places, bool json) {
  const fs::path dir = places.deleted_dir();
  struct Entry {
    std::string name;
    Json snapshot;
  };
  std::vector<Entry> entries;
  std::error_code ec;
  constexpr std::string_view kSuffix = ".snapshot.json";
  for (const auto& file : fs::directory_iterator(dir, ec)) {
    const std::string filename = file.path().filename().string();
    if (filename.size() <= kSuffix.size() || !filename.ends_with(kSuffix)) continue;
    const std::string name = filename.substr(0, filename.size() - kSuffix.size());
    if (!is_valid_actor_name(name)) continue;
    auto snapshot = read_snapshot(file.path(), name);
    if (!snapshot) {
      warn("restore: skipped " + file.path().string() + ": " + snapshot.error().message);
      continue;
    }
    entries.push_back({name, std::move(*snapshot)});
  }
  const auto deleted_ms = [](const Json& s) { return s.value("deleted_ms", std::int64_t{0}); };
  std::sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
    return deleted_ms(a.snapshot) > deleted_ms(b.snapshot);
  });
  Json list = Json::array();
  Table table({"NAME", "DELETED", "SCROLLBACK", "CWD", "COMMAND"});
  for (const Entry& e : entries) {
    const Json& s = e.snapshot;
    const bool saved =
        s["scrollback"].is_string() && fs::is_regular_file(dir / (e.name + ".scrollback"), ec);
    const std::uintmax_t bytes = saved ? fs::file_size(dir / (e.name + ".scrollback"), ec) : 0;
    const std::string cwd = s.value("cwd", "");
    const Json argv = s.value("argv", Json::array());
    list.push_back({{"name", e.name},
                    {"deleted_ms", deleted_ms(s)},
                    {"cwd", cwd},
                    {"argv", argv},
                    {"scrollback_bytes", saved ? Json(bytes) : Json(nullptr)}});
    std::vector<std::string> words;
    for (const auto& a : argv) words.push_back(a.is_string() ? a.get<std::string>() : a.dump());
    table.add({e.name, format_time(deleted_ms(s)), saved ? std::to_string(bytes) + " bytes" : "-",
               cwd.empty() ? "-" : cwd, shell_join(words)});
  }
  const std::string out = json ? list.dump() + "\n" : table.render();
  if (auto w = write_all(STDOUT_FILENO, out); !w) return report(w.error());
  return kExitOk;
}

}  // namespace backscroll::cli
