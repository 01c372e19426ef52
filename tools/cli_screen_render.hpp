// ScreenRenderer: draws an actor's screen, as a local terminal model holds it, into the user's
// terminal at the terminal's own size (`attach` when the sizes differ or the user does not own
// the actor: docs/cli.md, "Size"). The actor's top-left rectangle that fits is drawn cell by
// cell, the rest of the terminal is blank, and a status line, when there is one, takes the
// last row. A frame writes only the cells that changed since the previous one (cursor
// addressing, then SGR when the pen changes), inside synchronized-update marks (?2026), and
// leaves the cursor where the actor's is when that is inside the drawn rectangle (hidden
// otherwise). Frames never hold a query: nothing in them makes the terminal answer.
// Coordinates: 0-based (row, col) on the user's terminal.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/mirror_screen.hpp"

namespace backscroll::cli {

class ScreenRenderer {
 public:
  // The terminal's size; the next frame redraws everything.
  void set_terminal(int cols, int rows);
  // The terminal's contents are unknown (just cleared, or drawn by someone else): the next
  // frame clears it and redraws everything.
  void invalidate() noexcept { valid_ = false; }
  // The bytes that bring the terminal from what it shows to `screen` plus `status` (one line,
  // ASCII; empty: none). Empty when nothing changed.
  std::string frame(const term::MirrorScreen& screen, std::string_view status);

 private:
  // What the cell at (row, col) of the terminal should show.
  term::Cell wanted(const term::MirrorScreen& screen, std::string_view status, int row,
                    int col) const;
  void move_to(std::string& out, int row, int col);
  void set_pen(std::string& out, const term::Pen& pen);

  int cols_ = 0;
  int rows_ = 0;
  bool valid_ = false;                               // shown_ is what the terminal shows
  std::vector<term::Cell> shown_;                    // rows_ x cols_, row-major
  std::optional<term::Pen> pen_;                     // the terminal's pen, when known
  std::optional<std::pair<int, int>> at_;            // the terminal's cursor, when known
  std::optional<std::pair<int, int>> cursor_shown_;  // where the last frame left it visible
  bool cursor_hidden_ = false;
  // Per frame: the visible rectangle and the status line's row (-1: none).
  int visible_cols_ = 0;
  int visible_rows_ = 0;
  int status_row_ = -1;
  bool reverse_screen_ = false;
};

// SGR that sets exactly `pen` from any state (it starts with a reset).
std::string sgr_for(const term::Pen& pen);

}  // namespace backscroll::cli
