// The cells of a snapshot_v1 (docs/snapshot.md, "snapshot_v1 byte layout", sections 3 and 5):
// the history lines and the main screen scrolled through the fresh terminal, and the alternate
// screen's rows. Internal to the snapshot writer.
#pragma once

#include <cstddef>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/snapshot_terminal.hpp"

namespace backscroll::term {

// The newest `want` history lines (at most), then the main screen's rows, from the top of the
// fresh terminal: the history lines scroll off into its own history, in order. Returns how
// many history lines it drew. `read`: simple lines in place (the default), or every line as
// Cells.
std::size_t write_history_and_main(SnapshotTerminal& t, const MirrorScreen& m, std::size_t want,
                                   LineReading read = LineReading::in_place);

// After the main screen (and the saved cursor): the alternate screen's cells, entered first
// with `enter` (else the terminal is on it already: SnapshotCanvas::alternate). Rows of
// pristine cells are left out; `read` as for write_history_and_main.
void write_alternate_screen(SnapshotTerminal& t, const MirrorScreen& m, bool enter,
                            LineReading read = LineReading::in_place);

}  // namespace backscroll::term
