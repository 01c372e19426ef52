// `backscroll capture`: an actor's screen and history as text lines, rendered by a mirror of the
// CLI's own from the engine's snapshot_v1 (now, or at a past point: docs/recorder.md), numbered
// as tmux's capture-pane numbers them: 0 is the screen's first row, negative lines count back
// into the history (-1 the newest history line), "-" is the oldest line (as a start) or the
// screen's last row (as an end). Also what `tail -n` prints first.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "engine/term/plain_text.hpp"
#include "shm/cursor.hpp"
#include "shm/error.hpp"
#include "tools/cli_engine.hpp"
#include "tools/cli_ops.hpp"

namespace backscroll::cli {

struct CaptureArgs {
  std::string actor;
  std::string start;  // "" (0), "-" (the oldest history line) or a line number
  std::string end;    // "" or "-" (the screen's last row) or a line number
  bool sgr = false;   // -e: keep colours and attributes as SGR sequences
  PastPoint past;
};

// The actor's screen and its newest `history_lines` history lines (at most 10000), and the
// cursor they show the stream up to.
struct CapturedScreen {
  term::ScreenLines lines;
  Cursor cursor{0};
};
Result<CapturedScreen> capture_screen(const EngineTarget& engine, const std::string& actor,
                                      std::size_t history_lines, bool sgr,
                                      const PastPoint& past = {});

int run_capture(const EngineTarget& engine, const CaptureArgs& args);

}  // namespace backscroll::cli
