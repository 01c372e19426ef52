// TerminalModes: which input- and screen-changing modes an actor's output left switched on in
// the user's terminal during `attach`, so detaching can switch them off again (alternate screen,
// hidden cursor, mouse and focus reporting, bracketed paste, application cursor keys and keypad).
// It scans the raw byte stream for DECSET/DECRST (CSI ? Pm h / l), DECKPAM/DECKPNM (ESC = / >)
// and RIS (ESC c) only; every other sequence is skipped. Sequences split across writes are
// carried over. Not a terminal emulator: it never looks at text, colours or positions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace backscroll::cli {

class TerminalModes {
 public:
  void observe(std::span<const std::byte> bytes);
  // Bytes that put every tracked mode back to its default (leaving the alternate screen first,
  // so the saved cursor comes back), then reset the pen. Always safe to write.
  std::string reset_sequence() const;
  bool alternate_screen() const {
    return modes_.count(1049) + modes_.count(1047) + modes_.count(47) > 0;
  }

 private:
  enum class State : std::uint8_t { ground, escape, csi_entry, private_params, csi_ignore };
  void apply(bool set);

  State state_ = State::ground;
  std::uint32_t param_ = 0;
  std::uint32_t params_[16] = {};
  std::size_t param_count_ = 0;
  bool keypad_application_ = false;
  std::map<std::uint32_t, bool> modes_;  // DEC private mode -> set, for the tracked modes only
};

}  // namespace backscroll::cli
