#include "tools/cli_detach_modes.hpp"

#include <string_view>

namespace backscroll::cli {

void DetachModes::observe(std::span<const std::byte> bytes) {
  scanner_.set_events(this);  // this object may have moved since the last call
  scanner_.scan(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  for (const term::Mark& mark : scanner_.marks()) {
    if (mark.kind == term::MarkKind::enter_alt_1049) alternate_via_1049_ = true;
    if (mark.kind == term::MarkKind::leave_alt_1049) alternate_via_1049_ = false;
  }
}

std::string DetachModes::reset_sequence(bool leave_alternate) const {
  const term::TerminalModes& m = scanner_.modes();
  std::string out;
  auto reset = [&out](unsigned mode, bool set_by_default = false) {
    out += "\x1b[?" + std::to_string(mode) + (set_by_default ? "h" : "l");
  };
  if (m.alternate_screen && leave_alternate) reset(alternate_via_1049_ ? 1049 : 1047);
  if (m.cursor_keys_application) reset(1);
  if (!m.cursor_visible) reset(25, true);
  if (m.mouse_tracking != term::MouseTracking::off) reset(static_cast<unsigned>(m.mouse_tracking));
  if (m.mouse_encoding != term::MouseEncoding::x10) reset(static_cast<unsigned>(m.mouse_encoding));
  if (m.focus_reporting) reset(1004);
  if (m.bracketed_paste) reset(2004);
  if (m.keypad_application) out += "\x1b>";
  out += "\x1b[0m";
  return out;
}

}  // namespace backscroll::cli
