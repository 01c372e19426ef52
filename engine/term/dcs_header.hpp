// The start of a DCS string (DEC's dcs_entry / dcs_param / dcs_intermediate states: parameter
// bytes, intermediates, the final byte), read byte by byte, and what such a DCS does to a
// terminal. Shared by VtScanner (a snapshot's unmodelled reasons) and MirrorInput (libvterm's
// side), so both call the same strings harmless. docs/vt-scanner.md, "Unmodelled output".
#pragma once

#include <cstdint>

namespace backscroll::term {

enum class DcsEffect : std::uint8_t {
  none,      // changes nothing libvterm, xterm or xterm.js show or send (queries, probes, ...)
  sixel,     // sixel graphics (final q, no intermediate)
  stateful,  // ReGIS / DECRSTS (p), DECUDK (|), DECDLD ({), DECRSPS ($ t), or dcs_ignore
};

class DcsHeader {
 public:
  void reset() noexcept { *this = DcsHeader{}; }

  // A byte of the string after ESC P (C0 controls are executed, not fed here). Bytes after the
  // final one are the payload and change nothing.
  void byte(std::uint8_t b) noexcept {
    if (final_ != 0) return;
    if (b >= 0x40 && b <= 0x7e) {
      final_ = b;
    } else if (b >= 0x20 && b <= 0x2f) {
      if (intermediates_ == 0) first_intermediate_ = b;
      if (intermediates_ < 2) ++intermediates_;
    } else if (b >= 0x80 || intermediates_ > 0) {
      final_ = kIgnored;  // DEC's dcs_ignore: each parser reads the rest differently
    }
  }

  // What the DCS does, once ended by ST (a DCS ended otherwise is read differently by each
  // emulator: the caller decides). A DCS with no final byte yet (empty) does nothing.
  DcsEffect effect() const noexcept {
    if (final_ == 'q' && intermediates_ == 0) return DcsEffect::sixel;
    const bool dollar = intermediates_ == 1 && first_intermediate_ == '$';
    if (final_ == 'p' || final_ == '|' || final_ == '{' || final_ == kIgnored ||
        (final_ == 't' && dollar))
      return DcsEffect::stateful;
    return DcsEffect::none;
  }

 private:
  static constexpr std::uint8_t kIgnored = 0xff;
  std::uint8_t final_ = 0;
  std::uint8_t first_intermediate_ = 0;
  std::uint8_t intermediates_ = 0;  // saturates at 2
};

}  // namespace backscroll::term
