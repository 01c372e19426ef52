// snapshot_v1: the ANSI bytes that bring a fresh terminal of cols x rows to the state a
// MirrorScreen has parsed (docs/design.md, "Snapshots"), so that the snapshot followed by the raw
// bytes from the mirror's cursor on shows what parsing every raw byte would have shown.
// Built on the mirror thread from a MirrorScreen (screen, history, cursor, pen, title, saved
// cursor) and the TerminalModes that libvterm does not expose. Byte layout, grammar and
// limitations: docs/snapshot.md. The output always passes is_safe_snapshot().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/terminal_modes.hpp"

namespace backscroll::term {

// The terminal a snapshot is drawn on. `fresh`: a reset terminal on its main screen, with a
// scrollback (the contract above). `alternate`: a reset terminal already on its alternate
// screen, as `attach` draws so that the user's own screen comes back at detach: no history
// (nothing scrolls into a scrollback there), only the screen the actor shows, drawn without
// switching screens and without borrowing the hidden screen for the cursor's pending wrap (a
// state that needs it falls back). Bytes after the cursor that switch screens (DECSET 47,
// 1047, 1049 either way, RIS) are not covered: the client starts again from a new snapshot.
enum class SnapshotCanvas : std::uint8_t { fresh, alternate };

struct SnapshotOptions {
  std::size_t scrollback_lines = 512;  // history lines drawn before the screen (at most)
  std::size_t max_bytes = 8u << 20;    // larger snapshots fall back with "too_large"
  SnapshotCanvas canvas = SnapshotCanvas::fresh;
  bool operator==(const SnapshotOptions&) const = default;
};

struct Snapshot {
  std::string bytes;  // empty when fallback_reason is set
  int cols = 0;
  int rows = 0;
  std::size_t scrollback_lines = 0;  // history lines the bytes scroll into the terminal
  // Set when the mirror's state cannot be reproduced: the client replays raw bytes instead
  // (raw_replay). Reasons: docs/snapshot.md, "Fallbacks".
  std::optional<std::string> fallback_reason;
  std::string fallback_detail;  // for logs: where the writer gave up
};

// `title` and `saved` normally come from the mirror (the overload below); they are
// parameters so a caller with better knowledge can supply them.
Snapshot build_snapshot(const MirrorScreen& screen, const TerminalModes& modes,
                        std::string_view title, const std::optional<SavedCursor>& saved,
                        const SnapshotOptions& options = {});

inline Snapshot build_snapshot(const MirrorScreen& screen, const TerminalModes& modes,
                               const SnapshotOptions& options = {}) {
  return build_snapshot(screen, modes, screen.title(), screen.saved_cursor(), options);
}

}  // namespace backscroll::term
