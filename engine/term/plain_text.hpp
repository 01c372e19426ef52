// The plain text of a mirror's terminal: every history line, then the main screen's rows, as
// UTF-8 lines ending in "\n", without attributes, trailing blanks or trailing empty rows. What a
// deleted actor leaves in <actor>.scrollback (docs/transcripts.md) and `restore` shows again.
// With the alternate screen active (a full-screen program), the main screen underneath is the
// one written: it holds the shell's history, the alternate screen only the program's frame.
#pragma once

#include <cstdint>
#include <string>

#include "engine/term/mirror_screen.hpp"

namespace backscroll::term {

// `history_lines`: at most the newest this many history lines (Mirror::exact_history_lines).
std::string plain_text(const MirrorScreen& screen, std::size_t history_lines = SIZE_MAX);

}  // namespace backscroll::term
