// `backscroll restore NAME`: opens a new shell actor where a deleted actor's program last was,
// whose first session prints the scrollback the deletion saved before it runs the shell; the
// actor's command is the shell alone, so a restart does not print it again (docs/cli.md,
// engine/deletion_archive.hpp).
#pragma once

#include <optional>
#include <string>

#include "tools/cli_engine.hpp"

namespace backscroll::cli {

struct RestoreArgs {
  std::string actor;              // the deleted actor
  std::optional<std::string> as;  // the new actor's name (default: the same)
};

int run_restore(const EngineTarget& engine, const RestoreArgs& args);

// `restore --list`: the deletion snapshots that can be restored, newest first (a table, or
// with `json` one array). Reads the folder only: no engine is asked or started.
int run_restore_list(const Places& places, bool json);

}  // namespace backscroll::cli
