// DetachModes: which input- and screen-changing modes an actor's output left switched on in
// the user's terminal during `attach`, so detaching can switch them off again (alternate screen,
// hidden cursor, mouse and focus reporting, bracketed paste, application cursor keys and keypad),
// and where the output first switches screens (attach on the alternate canvas must not pass a
// switch through: it starts again from a snapshot there).
// The engine's VtScanner reads the bytes written to the terminal (the snapshot and the raw
// stream after it), so sequences split across writes, RIS and DECSTR count as they do there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "engine/term/vt_scanner.hpp"

namespace backscroll::cli {

class DetachModes final : private term::VtEvents {
 public:
  void observe(std::span<const std::byte> bytes);
  // Bytes that switch every mode left on back off (leaving the alternate screen first, so the
  // cursor a CSI ? 1049 h saved comes back, unless `leave_alternate` is false: the terminal
  // stays on the screen it shows), then reset the pen. Always safe to write; modes at their
  // defaults are left alone (the user's own terminal settings stay).
  std::string reset_sequence(bool leave_alternate = true) const;
  bool alternate_screen() const { return scanner_.modes().alternate_screen; }
  // How many bytes observe() has seen.
  std::uint64_t observed() const { return value(scanner_.position()); }
  // Where the first screen switch seen (DECSET/DECRST 47, 1047, 1049; RIS) begins, as a count of
  // the bytes observed before it.
  std::optional<std::uint64_t> first_switch() const { return first_switch_; }

 private:
  void on_title(std::string_view, Cursor) noexcept override {}
  void on_bell(Cursor) noexcept override {}
  void on_screen_switch(Cursor begin, Cursor) noexcept override {
    if (!first_switch_) first_switch_ = value(begin);
  }

  term::VtScanner scanner_{Cursor{0}, 80, 24};  // the size matters only to scroll regions
  bool alternate_via_1049_ = false;             // entered with CSI ? 1049 h
  std::optional<std::uint64_t> first_switch_;
};

}  // namespace backscroll::cli
