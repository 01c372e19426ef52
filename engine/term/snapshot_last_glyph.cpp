#include "engine/term/snapshot_last_glyph.hpp"

#include <algorithm>
#include <string>

namespace backscroll::term {
namespace {

// libvterm's last glyph as a snapshot re-creates it. A shrinking resize can leave it off the
// screen (libvterm never moves it), where a fresh terminal cannot print. What REP repeats is its
// text and width only, so it is printed at the right edge instead: a combining mark joins a
// glyph only with the cursor at its column + width, which is then past the last column, as
// unreachable at this size as the original position. (After a later grow the two positions
// differ: docs/snapshot.md, "Known limitations".) A lone combining mark (width 0) has no such
// place and stays off the screen: the writer falls back.
std::optional<LastGlyph> reproducible_last_glyph(const MirrorScreen& m) {
  std::optional<LastGlyph> g = m.last_glyph();
  if (!g || g->width == 0) return g;
  if (g->row < m.rows() && g->col + g->width <= m.cols()) return g;
  g->row = std::min(g->row, m.rows() - 1);
  g->col = m.cols() - g->width;
  return g;
}

// The stream's last bytes are text, its last glyph printable again.
bool text_run_at_cursor(const MirrorScreen& m, const std::optional<LastGlyph>& glyph) {
  return m.text_last() && glyph && glyph->width > 0 && glyph->nchars > 0;
}

// In insert mode the glyph printed again needs end_text_run's DCH first, which libvterm
// applies only inside the scroll region, and which cannot give a wide glyph's continuation
// cell its pen back.
bool insert_mode_blocks(const MirrorScreen& m, const TerminalModes& modes, const LastGlyph& g) {
  if (!modes.insert) return false;
  const int bottom =
      modes.scroll_bottom == 0 ? m.rows() : std::min<int>(modes.scroll_bottom, m.rows());
  return g.width > 1 || g.row < modes.scroll_top || g.row >= bottom;
}

// Whether the snapshot ends inside a text run (end_text_run): the stream's last bytes are
// text whose last glyph is still in its cell, in the current pen, with the cursor right
// after it (on it with a pending wrap, or in the last column with autowrap off). Otherwise
// (a resize moved things, say) the snapshot ends as after any sequence. In insert mode after
// a wide glyph or outside the scroll region (insert_mode_blocks) the run cannot go on in a
// snapshot, and end_text_run falls back: docs/snapshot.md, "Known limitations".
bool run_continues(const MirrorScreen& m, const TerminalModes& modes,
                   const std::optional<LastGlyph>& glyph) {
  if (!text_run_at_cursor(m, glyph) || insert_mode_blocks(m, modes, *glyph)) return false;
  const LastGlyph& g = *glyph;
  const CursorState cur = m.cursor();
  const bool row_end = g.col + g.width >= m.cols();
  const bool on_glyph = cur.pending_wrap || (!m.autowrap() && row_end);
  if (cur.row != g.row || cur.col != (on_glyph ? g.col : g.col + g.width)) return false;
  if (g.row >= m.rows() || g.col + g.width > m.cols()) return false;
  // A narrow glyph over the left half of a wide one keeps the right half in libvterm (the
  // cell reads two wide): printed again there, it does the same.
  const Cell c = m.cell(g.row, g.col);
  return c.kind == Cell::Kind::glyph && (c.width == g.width || (g.width == 1 && c.width == 2)) &&
         c.nchars == g.nchars &&
         std::equal(g.chars.begin(), g.chars.begin() + g.nchars, c.chars.begin()) &&
         c.pen == m.pen();
}

}  // namespace

LastGlyphPlan plan_last_glyph(const MirrorScreen& m, const TerminalModes& modes) {
  LastGlyphPlan plan;
  plan.glyph = reproducible_last_glyph(m);
  plan.run = run_continues(m, modes, plan.glyph);
  return plan;
}

void write_last_glyph(SnapshotTerminal& t, const MirrorScreen& m, const LastGlyphPlan& plan) {
  t.section("last glyph");
  const std::optional<LastGlyph>& g = plan.glyph;
  if (!g) return;  // checked by check_last_glyph(): nothing printed, or a fallback
  if (g->width == 0) {
    // libvterm's own lone zero-width glyph (marks it could not join, MirrorScreen::
    // join_marks aside): printed after a sequence, a zero-width character takes a column.
    t.fail("unreproducible_cursor", "last glyph is zero-width characters without a glyph");
    return;
  }
  // With a pending wrap, place_cursor() prints the glyph that sets it last: libvterm's last
  // glyph when it was printed there, else check_last_glyph() falls back. A run of text that
  // goes on ends the snapshot with it (end_text_run).
  if (m.cursor().pending_wrap || plan.run) return;
  if (const LastGlyph* printed = t.last_printed(); printed && *printed == *g) return;
  const int W = m.cols();
  const int span = std::max(g->width, 1);
  if (g->nchars == 0 || g->row >= m.rows() || g->col + span > W) {
    t.fail("unreproducible_cursor", "last glyph off the screen");
    return;
  }
  const Cell cell = m.cell(g->row, g->col);
  const bool same =
      cell.kind == Cell::Kind::glyph && cell.nchars == g->nchars &&
      std::equal(g->chars.begin(), g->chars.begin() + g->nchars, cell.chars.begin()) &&
      (g->width == 0 ? m.glyph_width(cell.chars[0]) == 0 : cell.width == g->width);
  bool erased = true;
  for (int k = 0; k < span; ++k) {
    const Cell e = m.cell(g->row, g->col + k);
    erased = erased && e.kind == Cell::Kind::erased && e.width == 1;
  }
  if (same || erased) {
    t.cup(g->row, g->col);
    // A lone combining mark would join the glyph this terminal printed last.
    if (t.joins_last_printed(*g)) {
      t.fail("unreproducible_cursor", "last glyph would join another");
      return;
    }
    t.pen(cell.pen);
    t.print(g->chars.data(), g->nchars, g->width, W);
    for (int k = 0; erased && k < span; ++k) {
      t.move_to(g->col + k);
      t.pen(m.cell(g->row, g->col + k).pen);
      t.erase_chars(1);
    }
    return;
  }
  if (!t.may_borrow_alternate(m)) {
    t.fail("unreproducible_cursor", "last glyph's cell changed");
    return;
  }
  t.csi("?1047h");
  t.cup(g->row, g->col);
  if (t.joins_last_printed(*g)) {
    t.fail("unreproducible_cursor", "last glyph would join another");
    return;
  }
  t.print(g->chars.data(), g->nchars, g->width, W);
  t.csi("?1047l");
}

void end_text_run(SnapshotTerminal& t, const MirrorScreen& m, const TerminalModes& modes,
                  const LastGlyphPlan& plan, bool origin_tail) {
  if (!plan.run) {
    // A run the stream goes on with (a combining mark or a REP may come next) that insert
    // mode keeps a snapshot from continuing: what comes next would differ, so fall back.
    if (text_run_at_cursor(m, plan.glyph) && insert_mode_blocks(m, modes, *plan.glyph)) {
      t.section("text run");
      t.fail("unreproducible_cursor", "a text run in insert mode a snapshot cannot continue");
    }
    return;
  }
  t.section("text run");
  const LastGlyph& g = *plan.glyph;
  if (modes.insert) {
    if (origin_tail) {  // a CSI would clamp the cursor into the scroll region
      t.fail("unreproducible_cursor", "insert mode outside the region");
      return;
    }
    t.csi("P");
  }
  t.moved_to(g.row, g.col);
  t.print(g.chars.data(), g.nchars, g.width, m.cols());
}

void check_last_glyph(SnapshotTerminal& t, const LastGlyphPlan& plan) {
  const std::optional<LastGlyph>& g = plan.glyph;
  const LastGlyph* printed = t.last_printed();
  if (g ? (printed && *printed == *g) : !printed) return;
  auto where = [](const LastGlyph& x) {
    return "(" + std::to_string(x.row) + "," + std::to_string(x.col) + ") w" +
           std::to_string(x.width) + " U+" + std::to_string(static_cast<unsigned>(x.chars[0]));
  };
  const std::string what = "last glyph (REP, combining marks): the mirror's " +
                           (g ? where(*g) : std::string("none")) + ", printed " +
                           (printed ? where(*printed) : std::string("none"));
  t.fail("unreproducible_cursor", what.c_str());
}

}  // namespace backscroll::term
