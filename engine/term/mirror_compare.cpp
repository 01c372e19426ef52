#include "engine/term/mirror_compare.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace backscroll::term {
namespace {

std::string describe(const Color& c) {
  switch (c.kind) {
    case Color::Kind::default_color: return "default";
    case Color::Kind::indexed: return std::to_string(c.index_or_red);
    case Color::Kind::rgb: {
      char buf[16];
      std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.index_or_red, c.green, c.blue);
      return buf;
    }
  }
  return "?";
}

std::string describe(const Pen& p) {
  std::string s = "fg " + describe(p.fg) + " bg " + describe(p.bg);
  if (p.bold) s += " bold";
  if (p.faint) s += " faint";
  if (p.conceal) s += " conceal";
  if (p.overline) s += " overline";
  if (p.italic) s += " italic";
  if (p.blink) s += " blink";
  if (p.reverse) s += " reverse";
  if (p.strike) s += " strike";
  if (p.underline != Underline::off)
    s += " underline " + std::to_string(static_cast<int>(p.underline));
  if (p.font != 0) s += " font " + std::to_string(p.font);
  return s;
}

std::string where(int row, int col) {
  return "(" + std::to_string(row) + "," + std::to_string(col) + ")";
}

// Collects the first difference; later checks are skipped once one is found.
class Diff {
 public:
  bool found() const { return !text_.empty(); }
  const std::string& text() const { return text_; }
  template <class T>
  void check(const char* what, const T& a, const T& b) {
    if (!found() && !(a == b)) text_ = std::string(what) + " differs";
  }
  void cells(const std::string& what, const Cell& a, const Cell& b) {
    if (!found() && !(a == b)) text_ = what + ": " + describe(a) + " vs " + describe(b);
  }
  void set(std::string text) {
    if (!found()) text_ = std::move(text);
  }

 private:
  std::string text_;
};

}  // namespace

std::string describe(const Cell& cell) {
  switch (cell.kind) {
    case Cell::Kind::continuation: return "continuation";
    case Cell::Kind::erased: return "erased " + describe(cell.pen);
    case Cell::Kind::glyph: break;
  }
  std::string text;
  char code[16];
  for (int i = 0; i < cell.nchars; ++i) {
    std::snprintf(code, sizeof code, "%sU+%04X", i ? " " : "",
                  static_cast<unsigned>(cell.chars[i]));
    text += code;
  }
  return "glyph " + text + " w" + std::to_string(cell.width) + " " + describe(cell.pen);
}

// The saved cursor as libvterm's DECRC restores it: a shrink can leave the slot off the screen,
// and the charset and screen it was saved on (kept for xterm.js) do not matter to it.
std::optional<SavedCursor> restorable(std::optional<SavedCursor> s, const MirrorScreen& m) {
  if (s) {
    s->row = std::min(s->row, m.rows() - 1);
    s->col = std::min(s->col, m.cols() - 1);
    s->gl_charset = SavedCursor{}.gl_charset;
    s->on_alt = SavedCursor{}.on_alt;
  }
  return s;
}

std::string first_difference(const Mirror& a, const Mirror& b, const CompareOptions& options) {
  const MirrorScreen& sa = a.screen();
  const MirrorScreen& sb = b.screen();
  Diff d;
  d.check("size", std::pair(sa.cols(), sa.rows()), std::pair(sb.cols(), sb.rows()));
  if (d.found()) return d.text();
  if (options.screens) d.check("alternate screen", sa.alt_screen(), sb.alt_screen());
  d.check("reverse video", sa.reverse_video(), sb.reverse_video());
  const int cols = options.columns > 0 ? std::min(options.columns, sa.cols()) : sa.cols();
  for (int r = 0; r < sa.rows() && !d.found(); ++r)
    for (int c = 0; c < cols && !d.found(); ++c)
      d.cells("cell " + where(r, c), sa.cell(r, c), sb.cell(r, c));
  if (options.screens && sa.alt_screen() && sb.alt_screen()) {
    for (int r = 0; r < sa.rows() && !d.found(); ++r)
      for (int c = 0; c < cols && !d.found(); ++c)
        d.cells("main screen cell " + where(r, c), sa.main_cell(r, c), sb.main_cell(r, c));
  }
  const CursorState ca = sa.cursor();
  const CursorState cb = sb.cursor();
  if (ca.row != cb.row || ca.col != cb.col) {
    d.set("cursor at " + where(ca.row, ca.col) + " vs " + where(cb.row, cb.col));
  }
  d.check("cursor visibility", ca.visible, cb.visible);
  d.check("cursor blink", ca.blink, cb.blink);
  d.check("cursor shape", ca.shape, cb.shape);
  d.check("pending wrap", ca.pending_wrap, cb.pending_wrap);
  if (!d.found() && !(sa.pen() == sb.pen())) {
    d.set("pen: " + describe(sa.pen()) + " vs " + describe(sb.pen()));
  }
  d.check("saved cursor", restorable(sa.saved_cursor(), sa), restorable(sb.saved_cursor(), sb));
  if (options.titles) d.check("title", a.scanner().title(), b.scanner().title());
  d.check("autowrap", sa.autowrap(), sb.autowrap());
  d.check("autowrap (scanner)", a.scanner().modes().autowrap, b.scanner().modes().autowrap);
  d.check("G0 charset", sa.g0() == 'u' ? 'B' : sa.g0(), sb.g0() == 'u' ? 'B' : sb.g0());
  d.check("G1 charset", sa.g1() == 'u' ? 'B' : sa.g1(), sb.g1() == 'u' ? 'B' : sb.g1());
  d.check("shift out", sa.shift_out(), sb.shift_out());
  const TerminalModes& ma = a.scanner().modes();
  const TerminalModes& mb = b.scanner().modes();
  d.check("application cursor keys", ma.cursor_keys_application, mb.cursor_keys_application);
  d.check("application keypad", ma.keypad_application, mb.keypad_application);
  d.check("origin mode", ma.origin, mb.origin);
  d.check("insert mode", ma.insert, mb.insert);
  d.check("bracketed paste", ma.bracketed_paste, mb.bracketed_paste);
  d.check("focus reporting", ma.focus_reporting, mb.focus_reporting);
  d.check("mouse tracking", ma.mouse_tracking, mb.mouse_tracking);
  d.check("mouse encoding", ma.mouse_encoding, mb.mouse_encoding);
  d.check("scroll region", std::pair(ma.scroll_top, ma.scroll_bottom),
          std::pair(mb.scroll_top, mb.scroll_bottom));
  if (d.found()) return d.text();

  const std::size_t la = sa.scrollback_lines();
  const std::size_t lb = sb.scrollback_lines();
  const std::size_t lines = std::min({options.history_lines, la, lb});
  for (std::size_t back = 1; back <= lines && !d.found(); ++back) {
    const int wa = sa.scrollback_cols(la - back);
    const int wb = sb.scrollback_cols(lb - back);
    const int compared = options.columns > 0 ? std::min(options.columns, wb) : wb;
    for (int c = 0; c < compared && !d.found(); ++c) {
      Cell cell = sa.scrollback_cell(la - back, c);
      if (wa > wb && c == wb - 1 && cell.width == 2) cell = Cell{};
      d.cells("history line -" + std::to_string(back) + " column " + std::to_string(c), cell,
              sb.scrollback_cell(lb - back, c));
    }
  }
  return d.text();
}

}  // namespace backscroll::term
