// `backscroll top`: a live view of the engine, like top: per actor the output rate, how far
// behind the mirror, the transcript writer and each announced reader are, and memory against
// memory_budget (docs/cli.md, "top"). On a terminal it redraws in place on the alternate screen
// until q, Ctrl-C or -n frames; otherwise it prints each frame after the last (--json: one
// object per line).
#pragma once

#include <optional>

#include "tools/cli_engine.hpp"

namespace backscroll::cli {

struct TopArgs {
  double delay_seconds = 1.0;  // between frames, at least kMinDelay
  std::optional<int> frames;   // stop after this many
  bool json = false;
};

inline constexpr double kMinTopDelaySeconds = 0.1;

int run_top(const EngineTarget& engine, const TopArgs& args);

}  // namespace backscroll::cli
