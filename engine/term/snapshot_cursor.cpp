#include "engine/term/snapshot_cursor.hpp"

#include <algorithm>
#include <string>

namespace backscroll::term {
namespace {

// A glyph of `width` printed at the cursor only to set the pending wrap (the cell is then
// erased or shifted): libvterm's last glyph when it was printed there, so REP and combining
// marks after the cut see the same one; else a space or the wide stand-in. (A REP could set
// the wrap without changing libvterm's last glyph, but xterm.js and xterm repeat only a glyph
// printed just before it: not after the CUP that gets there.)
void print_wrap_glyph(SnapshotTerminal& t, const std::optional<LastGlyph>& g, int width) {
  if (g && g->row == t.row() && g->col == t.col() && g->width == width && g->nchars > 0) {
    t.print(g->chars.data(), g->nchars, width, t.cols());
  } else if (width == 1) {
    const char32_t space = U' ';
    t.print(&space, 1, 1, t.cols());
  } else {
    t.print_stand_in(t.cols());
  }
}

// The cursor with a pending wrap at (cur.row, cur.col), CUP at `rel_row` (region-relative in
// origin mode): the glyph that sets it printed again, or printed and its cells restored.
void place_pending_wrap(SnapshotTerminal& t, const MirrorScreen& m, const LastGlyphPlan& plan,
                        const CursorState& cur, int rel_row) {
  const int W = m.cols();
  const Cell cell = m.cell(cur.row, cur.col);
  const int c = cur.col;
  t.cup(rel_row, c);
  t.moved_to(cur.row, c);
  if (cell.kind == Cell::Kind::glyph) {
    const int w0 = m.glyph_width(cell.chars[0]);
    if (w0 > 0 && w0 == cell.width && c + w0 >= W) {
      t.pen(cell.pen);
      t.print(cell.chars.data(), cell.nchars, w0, W);  // same glyph: only the wrap state
      return;
    }
  } else if (cell.kind == Cell::Kind::continuation && c == W - 2) {
    // A DCH after the wrap pulled the right half here: the same DCH does it again.
    const Cell next = m.cell(cur.row, c + 1);
    if (next.kind == Cell::Kind::erased) {
      print_wrap_glyph(t, plan.glyph, 2);
      t.pen(next.pen);
      t.csi("P");
      return;
    }
  } else if (cell.kind == Cell::Kind::erased && !t.may_borrow_alternate(m)) {
    // Where the hidden alternate screen is free it serves (below): ECH after the glyph ends
    // the wrap in xterm.js.
    if (c == W - 1) {
      print_wrap_glyph(t, plan.glyph, 1);
      t.pen(cell.pen);
      t.erase_chars(1);
      return;
    }
    if (c == W - 2) {
      // A wide character printed here set the wrap; ECH, which does not move the cursor,
      // gives both cells back their erased state.
      const Cell next = m.cell(cur.row, c + 1);
      if (next.kind == Cell::Kind::continuation) {
        print_wrap_glyph(t, plan.glyph, 2);
        t.pen(cell.pen);
        t.erase_chars(1);
        return;
      }
      if (next.kind == Cell::Kind::erased) {
        print_wrap_glyph(t, plan.glyph, 2);
        t.pen(next.pen);
        t.erase_chars(2);
        if (!(cell.pen == next.pen)) {
          t.pen(cell.pen);
          t.erase_chars(1);
        }
        return;
      }
    }
  }
  if (t.may_borrow_alternate(m) && (c == W - 1 || c == W - 2)) {
    // The wrap state is the cursor's, not the screen's: set it on the (hidden, erased on
    // every entry) alternate screen and come back.
    t.csi("?1047h");
    print_wrap_glyph(t, plan.glyph, c == W - 1 ? 1 : 2);
    t.csi("?1047l");
    return;
  }
  t.fail("unreproducible_cursor", "pending wrap over these cells");
}

}  // namespace

void write_saved_cursor(SnapshotTerminal& t, const MirrorScreen& m, const SavedCursor& s) {
  t.section("saved cursor");
  if (s.row >= m.rows() || s.col >= m.cols()) {
    // A shrinking resize left libvterm's saved slot off the screen (it never moves it); a
    // fresh terminal cannot save a position off its screen, and a later grow brings the
    // slot back into view where the terminal fed everything restores it exactly.
    t.fail("unreproducible_cursor", "saved cursor off the screen");
    return;
  }
  t.cup(s.row, s.col);
  t.pen(s.pen);
  t.cursor_style(s.visible, s.blink, s.shape);
  // GL as it was, for xterm.js's DECRC; G0 back to ASCII for what is drawn next (the
  // charsets are designated at the end).
  std::string& out = t.out();
  const bool charset = s.gl_charset != 'B';
  if (charset) (out += "\x1b(") += s.gl_charset;
  out +=
      "\x1b"
      "7";
  if (charset) out += "\x1b(B";
}

ScrollRegion write_scroll_region(SnapshotTerminal& t, const MirrorScreen& m,
                                 const TerminalModes& modes) {
  const int rows = m.rows();
  const ScrollRegion none{0, rows};
  const int top = modes.scroll_top;
  const int bottom = modes.scroll_bottom == 0 ? rows : modes.scroll_bottom;
  // libvterm stores exactly "1;rows" as the full screen (no explicit bottom) but keeps a
  // bottom clamped to rows explicit, and an explicit bottom stays put when the screen grows:
  // "1;rows+1" sets it.
  const bool explicit_full = top == 0 && bottom == rows && modes.scroll_bottom != 0;
  if (top == 0 && bottom == rows && !explicit_full) return none;
  if (top >= bottom || bottom > rows) {
    // A shrinking resize clamps the bottom and not the top (libvterm, docs/vt-scanner.md):
    // DECSTBM cannot set such a region in a fresh terminal.
    t.fail("unreproducible_region", "degenerate scroll region");
    return none;
  }
  // Without a bottom (the last row, whatever the size later) when the stream gave none.
  std::string s;
  append_num(s, static_cast<unsigned>(top + 1));
  if (modes.scroll_bottom != 0) {
    s += ';';
    append_num(s, static_cast<unsigned>(explicit_full ? bottom + 1 : bottom));
  }
  s += 'r';
  t.csi(s);
  return ScrollRegion{top, bottom};
}

std::optional<OriginTail> place_cursor(SnapshotTerminal& t, const MirrorScreen& m,
                                       const TerminalModes& modes, const LastGlyphPlan& plan,
                                       const ScrollRegion& region,
                                       const std::optional<SavedCursor>& saved) {
  const CursorState cur = m.cursor();
  const int W = m.cols();
  const bool origin = modes.origin;
  const bool inside = cur.row >= region.top && cur.row < region.bottom;
  if (origin && !inside) {
    // CUP cannot leave the region, and every CSI after it clamps the cursor back into it.
    // libvterm's DECRC can leave it, and LF, RI, CR, HT and BS move without clamping: the
    // snapshot ends with ESC 8 and those, when the saved slot (or the zeroed slot, without
    // DECSC) holds this pen and cursor style, on the same side of the region.
    const Pen p = m.pen();
    Pen zero;
    zero.fg = zero.bg = Color::rgb(0, 0, 0);
    const int srow = saved ? saved->row : 0;
    const int scol = saved ? saved->col : 0;
    const bool style = saved ? (saved->pen == p && saved->visible == cur.visible &&
                                saved->blink == cur.blink && saved->shape == cur.shape)
                             : (p == zero && !cur.visible && !cur.blink && cur.shape == 0);
    const bool above = cur.row < region.top && srow < region.top;
    const bool below = cur.row >= region.bottom && srow >= region.bottom;
    const bool cols_ok = scol < W;
    if (style && (above || below) && cols_ok) return OriginTail{srow, scol};
    t.fail("unreproducible_cursor");
    return std::nullopt;
  }
  const int rel_row = origin ? cur.row - region.top : cur.row;
  if (plan.run) {
    t.cup(rel_row, plan.glyph->col);  // end_text_run() prints the glyph from here
    t.moved_to(cur.row, plan.glyph->col);
    return std::nullopt;
  }
  if (cur.pending_wrap) {
    place_pending_wrap(t, m, plan, cur, rel_row);
    return std::nullopt;
  }
  t.cup(rel_row, cur.col);
  return std::nullopt;
}

void write_origin_tail(SnapshotTerminal& t, const MirrorScreen& m, const LastGlyphPlan& plan,
                       const std::optional<OriginTail>& tail) {
  if (!tail) return;
  const CursorState cur = m.cursor();
  const int W = m.cols();
  std::string& out = t.out();
  out +=
      "\x1b"
      "8";
  for (int r = tail->row; r < cur.row; ++r) out += '\n';
  for (int r = tail->row; r > cur.row; --r)
    out +=
        "\x1b"
        "M";
  int col = tail->col;
  const int target = plan.run ? plan.glyph->col : cur.col;  // end_text_run() prints from the glyph
  if (col != target) {
    out += '\r';
    col = 0;
    while (col < target) {  // default tab stops (changed ones are unmodelled state)
      out += '\t';
      col = std::min((col / 8 + 1) * 8, W - 1);
    }
    for (; col > target; --col) out += '\b';
  }
  if (cur.pending_wrap && !plan.run) {
    const Cell cell = m.cell(cur.row, cur.col);
    const int w0 = cell.kind == Cell::Kind::glyph ? m.glyph_width(cell.chars[0]) : 0;
    if (w0 > 0 && w0 == cell.width && cur.col + w0 >= W && cell.pen == m.pen() && m.autowrap()) {
      t.print_unfollowed(LastGlyph{cur.row, cur.col, w0, cell.nchars, cell.chars});
    } else {
      t.fail("unreproducible_cursor");
    }
  }
}

}  // namespace backscroll::term
