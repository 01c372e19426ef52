// The plain text of a mirror's terminal: every history line, then the main screen's rows, as
// UTF-8 lines ending in "\n", without attributes, trailing blanks or trailing empty rows. What a
// deleted actor leaves in <actor>.scrollback (docs/transcripts.md) and `restore` shows again.
// With the alternate screen active (a full-screen program), the main screen underneath is the
// one written: it holds the shell's history, the alternate screen only the program's frame.
// Also the lines `backscroll capture` prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/term/mirror_screen.hpp"

namespace backscroll::term {

// `history_lines`: at most the newest this many history lines (Mirror::exact_history_lines).
// `read`: history lines without combining marks in place (the default), or all as Cells.
std::string plain_text(const MirrorScreen& screen, std::size_t history_lines = SIZE_MAX,
                       LineReading read = LineReading::in_place);

// What a terminal shows, line by line, as `backscroll capture` prints it (tmux capture-pane's
// habits): the newest `history_lines` history lines, oldest first, and every row of the visible
// screen (the alternate one while it is active), trailing blanks cut, no line ends. With `sgr`,
// each line carries SGR sequences for its colours and attributes, and ends with a reset when
// its last pen was not the default.
struct ScreenLines {
  std::vector<std::string> history;
  std::vector<std::string> screen;
};
ScreenLines screen_lines(const MirrorScreen& screen, std::size_t history_lines, bool sgr);

}  // namespace backscroll::term
