// The cells of a snapshot_v1 (docs/snapshot.md, "snapshot_v1 byte layout", sections 3 and 5):
// the history lines and the main screen scrolled through the fresh terminal, and the alternate
// screen's rows. Internal to the snapshot writer.
#pragma once

#include <cstddef>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/snapshot_terminal.hpp"

namespace backscroll::term {

// How write_history_and_main() reads its lines (history lines, main screen rows): a simple
// line where it is kept (the default), or every line as Cells (what the in-place reading is
// tested against: both write the same bytes).
enum class LineReading { in_place, as_cells };

// The newest `want` history lines (at most), then the main screen's rows, from the top of the
// fresh terminal: the history lines scroll off into its own history, in order. Returns how
// many history lines it drew.
std::size_t write_history_and_main(SnapshotTerminal& t, const MirrorScreen& m, std::size_t want,
                                   LineReading read = LineReading::in_place);

// After the main screen (and the saved cursor): the alternate screen's cells, entered first
// with `enter` (else the terminal is on it already: SnapshotCanvas::alternate).
void write_alternate_screen(SnapshotTerminal& t, const MirrorScreen& m, bool enter);

}  // namespace backscroll::term
