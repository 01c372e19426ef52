#include "tools/cli_restore.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "shm/actor_name.hpp"
#include "shm/control_frame.hpp"
#include "tools/cli_ops.hpp"
#include "tools/cli_output.hpp"

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
    // The saved text first (the PTY turns its "\n" into "\r\n"), then the user's shell.
    spawn.argv = {"/bin/sh",           "-c",   "cat -- \"$1\"; exec \"$2\"", "backscroll-restore",
                  scrollback.string(), program};
  } else {
    warn("restore: no saved scrollback for '" + args.actor + "'; opening a shell only");
    spawn.argv = {program};
  }
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

}  // namespace backscroll::cli
