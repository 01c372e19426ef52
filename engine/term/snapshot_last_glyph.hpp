// libvterm's last glyph in a snapshot_v1 (docs/snapshot.md, "snapshot_v1 byte layout", section
// 6), and the text run the snapshot ends inside when the stream does. Internal to the snapshot
// writer.
#pragma once

#include <optional>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/snapshot_terminal.hpp"
#include "engine/term/terminal_modes.hpp"

namespace backscroll::term {

struct LastGlyphPlan {
  std::optional<LastGlyph> glyph;  // as the snapshot re-creates it (reproducible_last_glyph)
  bool run = false;                // the snapshot ends inside a text run (run_continues)
};

LastGlyphPlan plan_last_glyph(const MirrorScreen& m, const TerminalModes& modes);

// libvterm's last glyph (what REP repeats and a combining mark joins, MirrorScreen::
// last_glyph) as the stream left it: printed last, where it was printed. Over the cell that
// still holds it; else printed and erased again (ECH) when its cells are erased; else on the
// hidden alternate screen (its cells are erased on every entry). Called before the scroll
// region and origin mode, which limit where CUP goes, when nothing is printed afterwards.
void write_last_glyph(SnapshotTerminal& t, const MirrorScreen& m, const LastGlyphPlan& plan);

// The stream's last bytes at the cursor are text (MirrorScreen::text_last): the snapshot ends
// with its last glyph, printed again where it is and in the pen it has (the current one: no
// sequence came after it), with the cursor already there and every mode set, so what follows
// the cursor continues the run. In insert mode, DCH first makes room for the insertion.
// `origin_tail`: the snapshot ends with one (place_cursor).
void end_text_run(SnapshotTerminal& t, const MirrorScreen& m, const TerminalModes& modes,
                  const LastGlyphPlan& plan, bool origin_tail);

// After everything printed: this terminal's last glyph is the mirror's.
void check_last_glyph(SnapshotTerminal& t, const LastGlyphPlan& plan);

}  // namespace backscroll::term
