// TerminalModes: the terminal state a snapshot must restore that libvterm 0.1.4 does not expose
// through its API (docs/design.md, "Snapshots"). VtScanner tracks it from the raw byte stream of an
// actor; the snapshot writer emits it. Coordinates: 0-based rows; `scroll_bottom` is exclusive.
// Shared by the mirror thread's parts; plain data.
#pragma once

#include <cstdint>
#include <string>

namespace backscroll::term {

enum class CursorStyleSource : std::uint8_t {
  none,        // never set, or libvterm's reading (see TerminalModes::cursor_style_source)
  blink_mode,  // CSI ? 12 h/l, no DECSCUSR style in effect
  decscusr,    // DECSCUSR 1-6 (CSI n SP q)
};

enum class MouseTracking : std::uint16_t {
  off = 0,
  x10 = 9,        // ?9
  normal = 1000,  // ?1000 press and release
  button = 1002,  // ?1002 plus motion while pressed
  any = 1003,     // ?1003 all motion
};

enum class MouseEncoding : std::uint16_t {
  x10 = 0,       // default byte encoding
  utf8 = 1005,   // ?1005
  sgr = 1006,    // ?1006
  urxvt = 1015,  // ?1015
};

struct TerminalModes {
  bool cursor_keys_application = false;  // DECCKM  CSI ? 1 h/l
  bool keypad_application = false;       // DECKPAM ESC =  / DECKPNM ESC >
  bool origin = false;                   // DECOM   CSI ? 6 h/l
  bool autowrap = true;                  // DECAWM  CSI ? 7 h/l
  bool insert = false;                   // IRM     CSI 4 h/l
  bool cursor_visible = true;            // DECTCEM CSI ? 25 h/l
  // How the stream last set the cursor's style, which a snapshot then sets the same way: the
  // emulators' defaults differ (libvterm starts blinking, xterm.js steady) and xterm.js ignores
  // CSI ? 12 while a DECSCUSR style (n >= 1) is in effect. A cursor restore (libvterm brings
  // back the saved style, xterm.js does not) or DECSCUSR 0 (each its own default) make it
  // `none`: libvterm's reading, written only where it is not libvterm's default.
  CursorStyleSource cursor_style_source = CursorStyleSource::none;
  bool bracketed_paste = false;   // CSI ? 2004 h/l
  bool focus_reporting = false;   // CSI ? 1004 h/l
  bool alternate_screen = false;  // CSI ? 47 / 1047 / 1049 h/l
  MouseTracking mouse_tracking = MouseTracking::off;
  MouseEncoding mouse_encoding = MouseEncoding::x10;
  std::uint16_t scroll_top = 0;     // DECSTBM, 0-based, inclusive
  std::uint16_t scroll_bottom = 0;  // exclusive; 0 means "the last row" (full screen)
  // Character sets: the final byte of each designation (ESC ( F for G0, ESC ) F for G1; 'B' is
  // US-ASCII, '0' DEC special graphics) and whether SO (G1 into GL) is in effect.
  char g0 = 'B';
  char g1 = 'B';
  bool shift_out = false;
  // Added for VtScanner (docs/vt-scanner.md): state libvterm 0.1.4 draws with that the fields
  // above do not cover.
  bool linefeed_newline = false;        // LNM     CSI 20 h/l (LF also returns the carriage)
  bool reverse_video = false;           // DECSCNM CSI ? 5 h/l (whole screen reversed)
  bool left_right_margin_mode = false;  // DECLRMM CSI ? 69 h/l
  // DECSLRM CSI Pl ; Pr s: 0-based columns, `scroll_right` exclusive, 0 means "the last column".
  // libvterm stores them even while DECLRMM is off and uses them once it is set.
  std::uint16_t scroll_left = 0;
  std::uint16_t scroll_right = 0;

  bool operator==(const TerminalModes&) const = default;
};

}  // namespace backscroll::term
