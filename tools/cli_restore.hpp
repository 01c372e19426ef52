// `backscroll restore NAME`: opens a new shell actor where a deleted actor worked, which first
// prints the scrollback the deletion saved (docs/cli.md, engine/deletion_archive.hpp).
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

}  // namespace backscroll::cli
