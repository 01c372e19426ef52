// DetachModes: which input- and screen-changing modes an actor's output left switched on in
// the user's terminal during `attach`, so detaching can switch them off again (alternate screen,
// hidden cursor, mouse and focus reporting, bracketed paste, application cursor keys and keypad).
// The engine's VtScanner reads the bytes written to the terminal (the snapshot and the raw
// stream after it), so sequences split across writes, RIS and DECSTR count as they do there.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "engine/term/vt_scanner.hpp"

namespace backscroll::cli {

class DetachModes {
 public:
  void observe(std::span<const std::byte> bytes);
  // Bytes that switch every mode left on back off (leaving the alternate screen first, so the
  // cursor a CSI ? 1049 h saved comes back), then reset the pen. Always safe to write; modes
  // at their defaults are left alone (the user's own terminal settings stay).
  std::string reset_sequence() const;
  bool alternate_screen() const { return scanner_.modes().alternate_screen; }

 private:
  term::VtScanner scanner_{Cursor{0}, 80, 24};  // the size matters only to scroll regions
  bool alternate_via_1049_ = false;             // entered with CSI ? 1049 h
};

}  // namespace backscroll::cli
