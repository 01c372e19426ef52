// build_snapshot emits snapshot_v1 in the section order of docs/snapshot.md:
//   title; history and main screen (scrolled through the fresh terminal, so the history lands
//   in its scrollback); saved cursor (DECSC); alternate screen; scroll region; origin mode;
//   cursor (re-entering the pending wrap if set); pen; modes; charsets.
// It keeps a model of the fresh terminal (pen, cursor column, last glyph printed:
// SnapshotTerminal) to emit only what changes, and gives up (a fallback reason) rather than
// emit something inexact. The cells are drawn in snapshot_screens.cpp, the cursor placed in
// snapshot_cursor.cpp, libvterm's last glyph and the text run in snapshot_last_glyph.cpp.
#include "engine/term/snapshot_writer.hpp"

#include <cstdint>

#include "engine/term/mirror_input.hpp"
#include "engine/term/snapshot_cursor.hpp"
#include "engine/term/snapshot_last_glyph.hpp"
#include "engine/term/snapshot_screens.hpp"
#include "engine/term/snapshot_terminal.hpp"

namespace backscroll::term {
namespace {

void write_title(SnapshotTerminal& t, std::string_view title) {
  const std::string clean = MirrorScreen::sanitize_title(title);
  if (clean.empty()) return;
  std::string& out = t.out();
  out += "\x1b]2;";
  out += clean;
  out += "\x1b\\";
}

// `origin_tail`: the snapshot ends with one, whose DECRC restores the cursor style.
void write_modes(SnapshotTerminal& t, const MirrorScreen& m, const TerminalModes& modes,
                 bool origin_tail) {
  if (modes.cursor_keys_application) t.csi("?1h");
  if (modes.keypad_application) t.out() += "\x1b=";
  if (modes.insert) t.csi("4h");
  if (!m.autowrap()) t.csi("?7l");
  if (modes.bracketed_paste) t.csi("?2004h");
  if (modes.focus_reporting) t.csi("?1004h");
  switch (modes.mouse_tracking) {
    case MouseTracking::off: break;
    case MouseTracking::x10: t.csi("?9h"); break;
    case MouseTracking::normal: t.csi("?1000h"); break;
    case MouseTracking::button: t.csi("?1002h"); break;
    case MouseTracking::any: t.csi("?1003h"); break;
  }
  switch (modes.mouse_encoding) {
    case MouseEncoding::x10: break;
    case MouseEncoding::utf8: t.csi("?1005h"); break;
    case MouseEncoding::sgr: t.csi("?1006h"); break;
    case MouseEncoding::urxvt: t.csi("?1015h"); break;
  }
  if (m.reverse_video()) t.csi("?5h");
  const CursorState cur = m.cursor();
  if (!origin_tail) t.cursor_style(cur.visible, cur.blink, cur.shape, modes.cursor_style_source);
}

// From the mirror's own tracking rather than TerminalModes: it tells a designated US-ASCII
// set from libvterm's initial UTF-8 decoder, which split text runs differently (a combining
// mark after ASCII joins it only in the latter). `run`: the snapshot ends inside a text run
// (LastGlyphPlan::run).
void write_charsets(SnapshotTerminal& t, const MirrorScreen& m, bool run) {
  std::string& out = t.out();
  auto designate = [&](char which, char f) {
    if (f == 'u') return;
    out += '\x1b';
    out += which;
    out += f;
  };
  designate('(', m.g0());
  designate(')', m.g1());
  if (m.shift_out()) out += '\x0e';
  // Invariant: the snapshot ends inside a run of text exactly when the stream does at its
  // cursor. A combining mark joins the glyph before it, and a REP repeats it, only right
  // after it (xterm, xterm.js; libvterm within one write): the raw bytes after the cursor
  // continue a run only where they did in the stream. SI ends a run; GL is G0 already here.
  if (!run && t.ends_in_text()) out += '\x0f';
}

const char* unmodelled_reason(std::uint32_t flags) {
  if (flags & MirrorInput::kGraphics) return "graphics";
  if (flags & MirrorInput::kHiddenString) return "unmodelled_string";
  return "unmodelled_state";
}

}  // namespace

Snapshot build_snapshot(const MirrorScreen& m, const TerminalModes& modes, std::string_view title,
                        const std::optional<SavedCursor>& saved, const SnapshotOptions& options) {
  Snapshot snap;
  snap.cols = m.cols();
  snap.rows = m.rows();
  auto fallback = [&](const char* reason) {
    snap.bytes.clear();
    snap.scrollback_lines = 0;
    snap.fallback_reason = reason;
    return snap;
  };
  if (m.size_clamped()) return fallback("unsafe_size");
  if (!m.clean()) return fallback("incomplete_sequence");
  if (const std::uint32_t f = m.unmodelled(); f != 0) return fallback(unmodelled_reason(f));

  const bool canvas = options.canvas == SnapshotCanvas::alternate;
  SnapshotTerminal t(m.cols(), m.rows(), /*spare_alternate=*/!canvas);
  const LastGlyphPlan plan = plan_last_glyph(m, modes);
  write_title(t, title);
  if (m.cursor().shape == 0 || (saved && saved->shape == 0)) t.zeroed_restore();
  if (canvas) {
    // One screen, the one the actor shows, and one saved-cursor slot: the canvas's.
    if (m.alt_screen()) {
      write_alternate_screen(t, m, /*enter=*/false);
    } else {
      write_history_and_main(t, m, 0);
    }
    if (saved) write_saved_cursor(t, m, *saved);
  } else {
    snap.scrollback_lines = write_history_and_main(t, m, options.scrollback_lines);
    if (saved) write_saved_cursor(t, m, *saved);
    if (m.alt_screen()) {
      write_alternate_screen(t, m, /*enter=*/true);
      // The saved cursor again when it was saved there (xterm.js keeps a slot per screen;
      // libvterm's one slot gets the same values twice).
      if (saved && saved->on_alt) write_saved_cursor(t, m, *saved);
    }
  }
  write_last_glyph(t, m, plan);
  const ScrollRegion region = write_scroll_region(t, m, modes);
  if (modes.origin) t.csi("?6h");
  const std::optional<OriginTail> tail = place_cursor(t, m, modes, plan, region, saved);
  if (!tail) t.pen(m.pen());
  write_modes(t, m, modes, tail.has_value());
  write_origin_tail(t, m, plan, tail);
  write_charsets(t, m, plan.run);
  end_text_run(t, m, modes, plan, tail.has_value());
  check_last_glyph(t, plan);
  if (t.failure()) {
    snap.fallback_detail = t.detail();
    return fallback(t.failure());
  }
  if (t.out().size() > options.max_bytes) return fallback("too_large");
  snap.bytes = std::move(t.out());
  return snap;
}

}  // namespace backscroll::term
