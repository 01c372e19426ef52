// ReferenceTerminal: a fresh libvterm 0.1.4 terminal, set up like the mirror's (UTF-8, alternate
// screen, screen reset), used as the second emulator of the snapshot contract (docs/design.md,
// "Snapshots"). It extracts a comparable model of everything a user or a program can observe: every
// cell (characters, width, attributes, colours), the cursor (position, visibility, blink,
// shape), the alternate-screen and reverse-video flags, the title, the mouse mode, the lines
// scrolled into its history, and the replies and key encodings that depend on its modes.
// Test code only; the only test file that includes <vterm.h> is vterm_reference.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/screen_cell.hpp"

namespace backscroll::testing {

struct ScreenModel {
  int rows = 0;
  int cols = 0;
  std::vector<term::Cell> cells;  // rows x cols
  int cursor_row = 0;
  int cursor_col = 0;
  bool cursor_visible = true;
  bool cursor_blink = true;
  int cursor_shape = 1;
  bool alt_screen = false;
  bool reverse_video = false;
  int mouse = 0;      // VTERM_PROP_MOUSE
  std::string title;  // sanitized as snapshots carry it
  // Oldest first. Shared with the terminal: a line pushed into the history never changes, and a
  // model taken at every cut of a stream copies none of its cells.
  std::vector<std::shared_ptr<const std::vector<term::Cell>>> scrollback;

  const term::Cell& at(int r, int c) const {
    return cells[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) +
                 static_cast<std::size_t>(c)];
  }
};

// First difference between two models ("" when equal). The scrollbacks are compared over the
// last min(a, b, max_history) lines.
std::string first_difference(const ScreenModel& a, const ScreenModel& b,
                             std::size_t max_history = 512);

// A readable dump of the screen, for failure messages.
std::string render(const ScreenModel& m);

class ReferenceTerminal {
 public:
  ReferenceTerminal(int cols, int rows);
  ~ReferenceTerminal();
  ReferenceTerminal(const ReferenceTerminal&) = delete;
  ReferenceTerminal& operator=(const ReferenceTerminal&) = delete;

  // One vterm_input_write per call (the caller keeps calls <= 64 KiB and at clean boundaries),
  // split only before an ASCII byte after a non-ASCII character (vterm_reference.cpp).
  void feed(std::string_view bytes);

  // The screen, and the newest `history_lines` lines of the scrollback (all by default).
  ScreenModel model(std::size_t history_lines = SIZE_MAX) const;

  // DECRQM replies for the DEC modes libvterm reports (cursor keys, origin, autowrap, cursor
  // blink/visibility, mouse modes and encodings, focus, alternate screen, bracketed paste).
  std::string mode_report();
  // What the terminal sends for keys, paste, focus and mouse events: depends on DECCKM,
  // DECKPAM, bracketed paste, focus reporting and the mouse modes.
  std::string input_report();

  std::string output() const { return output_; }
  void clear_output() { output_.clear(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string output_;
  // Where libvterm's parser is, for feed()'s splits.
  enum class Parser : std::uint8_t {
    ground,
    escape,
    designate_g0,
    designate_g1,
    csi,
    string,
    string_escape
  };
  Parser parser_ = Parser::ground;
  unsigned char previous_ = 0;  // the last byte, when it was read in ground state
  int utf8_remaining_ = 0;
  // The character sets in G0 and G1 and whether SO shifted G1 into GL: only a GL other than
  // ASCII decodes an ASCII byte differently from UTF-8.
  char g0_ = 'B';
  char g1_ = 'B';
  bool shift_out_ = false;
  friend struct ReferenceCallbacks;
};

// ScreenLayerTap: libvterm 0.1.4 with its own screen layer (alternate screen enabled, history
// through sb_pushline / sb_popline), fed exactly the calls a MirrorScreen makes to its state
// layer (MirrorScreen::set_tap). The mirror's ScreenGrid must hold what this screen layer holds:
// the same cells, the same lines pushed, popped and kept.
class ScreenLayerTap final : public term::VtermTap {
 public:
  // History beyond max_lines is dropped oldest first, as the mirror's (give the mirror a byte
  // limit it never reaches).
  explicit ScreenLayerTap(std::size_t max_lines = 10'000);
  ~ScreenLayerTap() override;
  ScreenLayerTap(const ScreenLayerTap&) = delete;
  ScreenLayerTap& operator=(const ScreenLayerTap&) = delete;

  void created(int cols, int rows) override;
  void wrote(std::string_view bytes) override;
  void resized(int cols, int rows) override;
  void history_cleared() override;
  void departed() override;

  // The first difference between the mirror's cells, flags and history and this screen layer's
  // ("" when they agree). The main screen is compared while it is shown (libvterm keeps the
  // hidden one to itself). Nothing is compared after the mirror departed from libvterm on
  // purpose (VtermTap::departed), until the next created().
  std::string difference(const term::MirrorScreen& mirror) const;
  std::uint64_t pushed() const;
  std::uint64_t popped() const;
  std::uint64_t departures() const;  // feeds (since construction) where the mirror departed

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend struct ScreenLayerCallbacks;
};

}  // namespace backscroll::testing
