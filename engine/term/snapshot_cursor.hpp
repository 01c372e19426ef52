// The cursor in a snapshot_v1 (docs/snapshot.md, "snapshot_v1 byte layout", sections 4, 7, 9
// and 12): the saved cursor, the scroll region, the cursor with its pending wrap, and the origin
// tail for a cursor outside the region in origin mode. Internal to the snapshot writer.
#pragma once

#include <optional>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/snapshot_last_glyph.hpp"
#include "engine/term/snapshot_terminal.hpp"
#include "engine/term/terminal_modes.hpp"

namespace backscroll::term {

// CUP to the saved cursor, its pen and cursor style, DECSC.
void write_saved_cursor(SnapshotTerminal& t, const MirrorScreen& m, const SavedCursor& s);

// Rows [top, bottom) of the scroll region the snapshot set; the whole screen when it set none.
struct ScrollRegion {
  int top = 0;
  int bottom = 0;
};

ScrollRegion write_scroll_region(SnapshotTerminal& t, const MirrorScreen& m,
                                 const TerminalModes& modes);

// Where the origin tail's DECRC goes: the saved slot (or the zeroed one).
struct OriginTail {
  int row = 0;
  int col = 0;
};

// Places the cursor; origin mode is already set, so rows are relative to the region. Returns
// the origin tail the snapshot ends with, for a cursor outside the region in origin mode.
std::optional<OriginTail> place_cursor(SnapshotTerminal& t, const MirrorScreen& m,
                                       const TerminalModes& modes, const LastGlyphPlan& plan,
                                       const ScrollRegion& region,
                                       const std::optional<SavedCursor>& saved);

// After every CSI: DECRC and moves that do not clamp, to a cursor outside the scroll region
// in origin mode (see place_cursor).
void write_origin_tail(SnapshotTerminal& t, const MirrorScreen& m, const LastGlyphPlan& plan,
                       const std::optional<OriginTail>& tail);

}  // namespace backscroll::term
