// build_snapshot (its Writer) emits snapshot_v1 in the section order of docs/snapshot.md:
//   title; history and main screen (scrolled through the fresh terminal, so the history lands
//   in its scrollback); saved cursor (DECSC); alternate screen; scroll region; origin mode;
//   cursor (re-entering the pending wrap if set); pen; modes; charsets.
// It keeps a model of the fresh terminal (pen, cursor column, last glyph printed) to emit only
// what changes, and gives up (a fallback reason) rather than emit something inexact.
#include "engine/term/utf8.hpp"
#include "engine/term/snapshot_writer.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <vector>

#include "engine/term/mirror_input.hpp"

namespace backscroll::term {
namespace {

// A wide character used where only a wide glyph's side effect is wanted (it is overwritten).
constexpr char32_t kWideStandIn = 0x4e00;

void append_num(std::string& out, unsigned v) {
  char buf[16];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// SGR argument groups for a pen, after a reset (0).
std::vector<std::string> sgr_groups(const Pen& p) {
  std::vector<std::string> g;
  if (p.bold) g.emplace_back("1");
  if (p.faint) g.emplace_back("2");
  if (p.italic) g.emplace_back("3");
  switch (p.underline) {
    case Underline::single: g.emplace_back("4"); break;
    case Underline::double_: g.emplace_back("4:2"); break;
    case Underline::curly: g.emplace_back("4:3"); break;
    case Underline::off: break;
  }
  if (p.blink) g.emplace_back("5");
  if (p.reverse) g.emplace_back("7");
  if (p.conceal) g.emplace_back("8");
  if (p.strike) g.emplace_back("9");
  if (p.overline) g.emplace_back("53");
  if (p.font > 0 && p.font <= 9) g.emplace_back(std::to_string(10 + p.font));
  auto colour = [&](const Color& c, bool fg) {
    std::string s;
    switch (c.kind) {
      case Color::Kind::default_color: return;
      case Color::Kind::indexed:
        if (c.index_or_red < 8) {
          append_num(s, (fg ? 30u : 40u) + c.index_or_red);
        } else if (c.index_or_red < 16) {
          append_num(s, (fg ? 90u : 100u) + c.index_or_red - 8u);
        } else {
          s = fg ? "38;5;" : "48;5;";
          append_num(s, c.index_or_red);
        }
        break;
      case Color::Kind::rgb:
        s = fg ? "38;2;" : "48;2;";
        append_num(s, c.index_or_red);
        s += ';';
        append_num(s, c.green);
        s += ';';
        append_num(s, c.blue);
        break;
    }
    g.push_back(std::move(s));
  };
  colour(p.fg, true);
  colour(p.bg, false);
  return g;
}

int count_params(const std::string& group) {
  return 1 + static_cast<int>(std::count_if(group.begin(), group.end(),
                                            [](char c) { return c == ';' || c == ':'; }));
}

class Writer {
 public:
  // `glyph`: libvterm's last glyph as the snapshot re-creates it (reproducible_last_glyph).
  Writer(const MirrorScreen& m, const TerminalModes& modes, std::optional<LastGlyph> glyph)
      : m_(m), modes_(modes), glyph_(std::move(glyph)), run_(run_continues()) {}

  std::string& out() { return out_; }
  const char* failure() const { return failure_; }

  void fail(const char* reason, const char* what = "") {
    if (failure_) return;
    failure_ = reason;
    detail_ = std::string(what) + " at row " + std::to_string(row_) + " col " +
              std::to_string(col_) + " (" + section_ + ")";
  }
  void section(const char* name) { section_ = name; }
  const std::string& detail() const { return detail_; }

  // --- primitive emitters (track the fresh terminal) ---------------------------------------

  void csi(std::string_view body) {
    out_ += "\x1b[";
    out_ += body;
  }

  void pen(const Pen& p) {
    if (pen_known_ && p == pen_) return;
    const auto groups = sgr_groups(p);
    // Each SGR carries at most 16 parameters (libvterm 0.1.4 overflows past 16).
    std::string cur = "0";
    int n = 1;
    for (const auto& grp : groups) {
      const int k = count_params(grp);
      if (n + k > MirrorInput::kMaxCsiArgs) {
        csi(cur + "m");
        cur.clear();
        n = 0;
      }
      if (!cur.empty()) cur += ';';
      cur += grp;
      n += k;
    }
    csi(cur + "m");
    pen_ = p;
    pen_known_ = true;
  }

  // Absolute move (1-based in the sequence). With origin mode on, rows are region-relative.
  void cup(int row, int col) {
    std::string s;
    append_num(s, static_cast<unsigned>(row + 1));
    s += ';';
    append_num(s, static_cast<unsigned>(col + 1));
    s += 'H';
    csi(s);
    row_ = row;
    col_ = col;
    phantom_ = false;
  }

  // Moves along the current row.
  void move_to(int col) {
    if (!phantom_ && col == col_) return;
    std::string s;
    if (!phantom_ && col > col_) {
      if (col - col_ > 1) append_num(s, static_cast<unsigned>(col - col_));
      s += 'C';
    } else {
      if (col > 0) append_num(s, static_cast<unsigned>(col + 1));
      s += 'G';
    }
    csi(s);
    col_ = col;
    phantom_ = false;
  }

  // Moves along the current row with a sequence even when the cursor is there already, so a
  // zero-width character printed next takes a column of its own (xterm.js and the mirror join
  // one that directly follows a glyph).
  void move_to_with_sequence(int col) {
    if (phantom_ || col != col_) return move_to(col);
    std::string s;
    if (col > 0) append_num(s, static_cast<unsigned>(col + 1));
    csi(s + 'G');
  }

  // Prints a glyph at the cursor (autowrap is on while the snapshot draws).
  void print(const char32_t* chars, int n, int width, int row_width) {
    for (int i = 0; i < n; ++i) append_utf8(out_, chars[i]);
    last_row_ = row_;
    last_col_ = col_;
    last_width_ = width;
    printed_ = true;
    text_end_ = out_.size();
    printed_glyph_ = LastGlyph{row_, col_, width, std::min(n, Cell::kMaxChars), {}};
    std::copy(chars, chars + printed_glyph_.nchars, printed_glyph_.chars.begin());
    if (col_ + width >= row_width && width > 0) {
      phantom_ = true;  // the cursor stays on the glyph
    } else {
      col_ += width;
    }
  }

  void print_stand_in(int row_width) {
    const char32_t c = kWideStandIn;
    print(&c, 1, 2, row_width);
  }

  // A glyph of `width` printed at the cursor only to set the pending wrap (the cell is then
  // erased or shifted): libvterm's last glyph when it was printed there, so REP and combining
  // marks after the cut see the same one; else a space or the wide stand-in. (A REP could set
  // the wrap without changing libvterm's last glyph, but xterm.js and xterm repeat only a glyph
  // printed just before it: not after the CUP that gets there.)
  void print_wrap_glyph(int width) {
    const std::optional<LastGlyph>& g = glyph_;
    if (g && g->row == row_ && g->col == col_ && g->width == width && g->nchars > 0) {
      print(g->chars.data(), g->nchars, width, m_.cols());
    } else if (width == 1) {
      const char32_t space = U' ';
      print(&space, 1, 1, m_.cols());
    } else {
      print_stand_in(m_.cols());
    }
  }

  // Cells [from, end) of the row erased in `p`: ECH, or EL when the run reaches the row's end.
  void erase_run(int from, int end, const Pen& p) {
    move_to(from);
    pen(p);
    if (end == m_.cols()) csi("K");
    else erase_chars(end - from);
  }

  void erase_chars(int n) {
    std::string s;
    if (n > 1) append_num(s, static_cast<unsigned>(n));
    s += 'X';
    csi(s);
  }

  void newline() {
    if (!(pen_known_ && pen_ == Pen{})) pen(Pen{});  // scrolled-in lines take the pen (BCE)
    // CR then LF. CR does not cancel a pending wrap when it does not move the cursor (a
    // glyph as wide as the row, in column 0: one column, or a wide one on two): CHA does, and
    // LF at the bottom would keep it and the next glyph would scroll a blank line in.
    out_ += phantom_ && col_ == 0 ? "\x1b[G\n" : "\r\n";
    col_ = 0;
    phantom_ = false;
    if (row_ < m_.rows() - 1) ++row_;
  }

  // --- lines ---------------------------------------------------------------------------------

  // Draws cells [0, W) of a line on a row of pristine cells, cursor at the row's start.
  // `truncated`: a history line from a wider terminal; a wide character cut in two at the
  // last column is left out.
  // `cells` holds the line (W cells); scratch vectors are reused across lines.
  // Printable ASCII glyphs and erased cells only, one column each: most lines of most output.
  static bool is_plain(const std::vector<Cell>& cells) {
    return std::all_of(cells.begin(), cells.end(), [](const Cell& x) {
      if (x.width != 1 || x.dwl || x.dhl != 0) return false;
      if (x.kind == Cell::Kind::erased) return true;
      return x.kind == Cell::Kind::glyph && x.nchars == 1 && x.chars[0] >= 0x20 && x.chars[0] < 0x7f;
    });
  }

  // draw_line() for an is_plain() line, writing the same bytes without its per-cell passes:
  // runs of glyphs in one pen are copied as they are (only the last one is print()ed, which
  // keeps the writer's cursor, pending-wrap and last-glyph bookkeeping), runs of erased cells
  // are erased as draw_line() erases them.
  void draw_plain_line(const std::vector<Cell>& cells) {
    const int W = m_.cols();
    auto at = [&](int c) -> const Cell& { return cells[static_cast<std::size_t>(c)]; };
    int c = 0;
    while (c < W) {
      const Cell& cell = at(c);
      int end = c + 1;
      while (end < W && at(end).kind == cell.kind && at(end).pen == cell.pen) ++end;
      if (cell.kind == Cell::Kind::erased) {
        if (is_pristine(cell)) {
          c = end;
          continue;
        }
        erase_run(c, end, cell.pen);
        c = end;
        continue;
      }
      move_to(c);
      pen(cell.pen);
      for (int k = c; k < end - 1; ++k) out_ += static_cast<char>(at(k).chars[0]);
      col_ = end - 1;
      print(at(end - 1).chars.data(), 1, 1, W);
      c = end;
    }
  }

  void draw_line(std::vector<Cell>& cells, bool truncated) {
    const int W = m_.cols();
    if (truncated && cells[static_cast<std::size_t>(W - 1)].width == 2) {
      Cell blank;
      cells[static_cast<std::size_t>(W - 1)] = blank;
    }
    std::vector<bool>& must_draw = must_draw_;
    std::vector<bool>& made_continuation = made_continuation_;
    must_draw.assign(static_cast<std::size_t>(W), false);
    made_continuation.assign(static_cast<std::size_t>(W), false);
    // Nothing to draw on a line of pristine cells.
    if (std::all_of(cells.begin(), cells.end(), [](const Cell& x) { return is_pristine(x); })) return;
    if (is_plain(cells)) {
      draw_plain_line(cells);
      return;
    }

    // A cell whose first character is zero-width (a lone one: after a sequence or a control,
    // xterm.js and the mirror give it a column), printed after a sequence.
    auto draw_lone = [&](int c) {
      const Cell& cell = cells[static_cast<std::size_t>(c)];
      if (cell.nchars > 1) {
        // Several in one cell: libvterm's own lone glyph (marks after a glyph at the row's end
        // that the mirror could not join); printed after a sequence, each would take a column.
        fail("unreproducible_cells", "zero-width characters without a glyph");
        return;
      }
      if (cell.width == 2) {
        move_to(c);
        print_stand_in(W);
        made_continuation[static_cast<std::size_t>(c + 1)] = true;
      }
      pen(cell.pen);
      move_to_with_sequence(c);
      print(cell.chars.data(), cell.nchars, 1, W);
    };

    // Pass 0: continuation cells at the start of the row (a DCH moved them there) are made
    // one column to the right and shifted into place with DCH, before anything else is drawn.
    if (cells[0].kind == Cell::Kind::continuation) {
      int m = 1;
      while (m < W - 1 && cells[static_cast<std::size_t>(m)].kind == Cell::Kind::continuation) ++m;
      if (m >= W - 1) {
        fail("unreproducible_cells", "row of continuation cells");
      } else {
        for (int t = m - 1; t >= 0; --t) {  // cells 1..m become continuations
          move_to(t);
          print_stand_in(W);
        }
        move_to(0);
        pen(Pen{});
        csi("P");
        for (int t = 0; t < m; ++t) made_continuation[static_cast<std::size_t>(t)] = true;
      }
    }

    // A wide character alone in the last column (an ICH pushed it there): printed one column
    // to the left and pushed there the same way.
    bool last_done = false;
    if (W >= 2) {
      const Cell& last = cells[static_cast<std::size_t>(W - 1)];
      const Cell& prev = cells[static_cast<std::size_t>(W - 2)];
      if (last.kind == Cell::Kind::glyph && m_.glyph_width(last.chars[0]) == 2) {
        if (prev.kind == Cell::Kind::glyph && m_.glyph_width(prev.chars[0]) == 2 &&
            prev.width == 1) {
          fail("unreproducible_cells", "two half-overwritten wide characters at the end");
        } else {
          move_to(W - 2);
          pen(last.pen);
          print(last.chars.data(), last.nchars, 2, W);
          move_to(W - 2);
          csi("@");
          must_draw[static_cast<std::size_t>(W - 2)] = true;  // now erased in this pen
          last_done = true;
        }
      }
    }

    // Pass 1: every cell, left to right.
    int c = 0;
    while (c < W) {
      const Cell& cell = cells[static_cast<std::size_t>(c)];
      const auto uc = static_cast<std::size_t>(c);
      if (cell.kind != Cell::Kind::continuation && cell.width == 2) {
        // More continuation cells after this one's (stale right halves): each is made by a
        // wide character printed just left of it, right to left, before this cell is drawn.
        int m = 1;
        while (c + 1 + m < W && cells[uc + 1 + static_cast<std::size_t>(m)].kind ==
                                    Cell::Kind::continuation)
          ++m;
        for (int t = m - 1; t >= 1; --t) {
          move_to(c + t);
          print_stand_in(W);
          made_continuation[uc + 1 + static_cast<std::size_t>(t)] = true;
        }
      }
      switch (cell.kind) {
        case Cell::Kind::continuation:
          if (!made_continuation[uc]) fail("unreproducible_cells", "stray continuation cell");
          ++c;
          break;
        case Cell::Kind::erased: {
          if (cell.width == 2) {
            move_to(c);
            print_stand_in(W);
            made_continuation[uc + 1] = true;
            move_to(c);
            pen(cell.pen);
            erase_chars(1);
            c += 2;
            break;
          }
          if (is_pristine(cell) && !must_draw[uc]) {
            ++c;
            break;
          }
          int end = c + 1;
          while (end < W) {
            const Cell& n = cells[static_cast<std::size_t>(end)];
            if (n.kind != Cell::Kind::erased || n.width != 1 || !(n.pen == cell.pen)) break;
            ++end;
          }
          erase_run(c, end, cell.pen);
          c = end;
          break;
        }
        case Cell::Kind::glyph: {
          const int w0 = m_.glyph_width(cell.chars[0]);
          if (w0 == 0) {
            draw_lone(c);
            c += cell.width;
            break;
          }
          if (w0 == cell.width) {
            move_to(c);
            pen(cell.pen);
            print(cell.chars.data(), cell.nchars, w0, W);
            if (w0 == 2) made_continuation[uc + 1] = true;
            c += w0;
          } else if (w0 == 2) {  // a wide character whose right half was overwritten
            if (c + 1 >= W) {
              // Drawn first (above); in history, a wider terminal's leftover is left out.
              if (!last_done) fail("unreproducible_cells", "wide character in the last column");
              ++c;
              break;
            }
            move_to(c);
            pen(cell.pen);
            print(cell.chars.data(), cell.nchars, 2, W);
            must_draw[uc + 1] = true;  // the print made it a continuation
            ++c;
          } else {  // a narrow glyph over the left half of a wide one
            move_to(c);
            print_stand_in(W);
            made_continuation[uc + 1] = true;
            move_to(c);
            pen(cell.pen);
            print(cell.chars.data(), cell.nchars, 1, W);
            c += 2;
          }
          break;
        }
      }
    }
  }

  // --- sections --------------------------------------------------------------------------------

  void title(std::string_view t) {
    const std::string clean = MirrorScreen::sanitize_title(t);
    if (clean.empty()) return;
    out_ += "\x1b]2;";
    out_ += clean;
    out_ += "\x1b\\";
  }

  std::size_t history_and_main(std::size_t want) {
    const std::size_t total = m_.scrollback_lines();
    // On one row libvterm 0.1.4 erases instead of scrolling a line off: nothing reaches its
    // history, so none is drawn (a snapshot carries up to N lines).
    const std::size_t n = m_.rows() > 1 ? std::min(want, total) : 0;
    const std::size_t first = total - n;
    const int rows = m_.rows();
    const int W = m_.cols();
    std::vector<Cell> cells(static_cast<std::size_t>(W));
    out_.reserve(out_.size() + (n + static_cast<std::size_t>(rows)) * static_cast<std::size_t>(W + 8));
    row_ = 0;
    col_ = 0;
    section("history");
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0) newline();
      const std::size_t line = first + i;
      m_.scrollback_row(line, cells);
      draw_line(cells, m_.scrollback_cols(line) > W);
    }
    section("main screen");
    for (int r = 0; r < rows; ++r) {
      if (n > 0 || r > 0) newline();
      for (int c = 0; c < W; ++c) cells[static_cast<std::size_t>(c)] = m_.main_cell(r, c);
      draw_line(cells, false);
    }
    return n;
  }

  // libvterm 0.1.4 restores a zeroed slot on DECRC before any DECSC: hidden, steady cursor of
  // shape 0 (no DECSCUSR value), black-on-black RGB pen, home position. Shape 0 exists only
  // that way, so a snapshot that needs it starts the same way.
  void zeroed_restore() {
    out_ += "\x1b" "8";
    pen_ = Pen{};
    pen_.fg = Color::rgb(0, 0, 0);
    pen_.bg = Color::rgb(0, 0, 0);
    visible_ = false;
    blink_ = false;
    shape_ = 0;
    row_ = col_ = 0;
  }

  // `source`: how the stream set the style (TerminalModes::cursor_style_source). Set that way
  // even when it is libvterm's default, for a terminal with other defaults (xterm.js) and its
  // reading of later CSI ? 12; else only where it differs from the writer's state.
  void cursor_style(bool visible, bool blink, int shape,
                    CursorStyleSource source = CursorStyleSource::none) {
    if (shape == 0 && shape_ != 0) {
      fail("unreproducible_cursor");
      return;
    }
    if (source == CursorStyleSource::blink_mode && shape == shape_) {
      csi(blink ? "?12h" : "?12l");
      blink_ = blink;
    }
    // DECSCUSR sets shape and blink together, everywhere; CSI ? 12 otherwise only for the
    // zeroed shape DECSCUSR cannot name.
    if (shape != 0 && (shape != shape_ || blink != blink_ || source == CursorStyleSource::decscusr)) {
      int n = shape == 2 ? 3 : shape == 3 ? 5 : 1;
      if (!blink) ++n;
      std::string s;
      append_num(s, static_cast<unsigned>(n));
      s += " q";
      csi(s);
      blink_ = blink;
      shape_ = shape;
    }
    if (blink != blink_) {
      csi(blink ? "?12h" : "?12l");
      blink_ = blink;
    }
    if (visible != visible_) {
      csi(visible ? "?25h" : "?25l");
      visible_ = visible;
    }
  }

  void saved_cursor(const SavedCursor& s) {
    section("saved cursor");
    if (s.row >= m_.rows() || s.col >= m_.cols()) {
      // A shrinking resize left libvterm's saved slot off the screen (it never moves it); a
      // fresh terminal cannot save a position off its screen, and a later grow brings the
      // slot back into view where the terminal fed everything restores it exactly.
      fail("unreproducible_cursor", "saved cursor off the screen");
      return;
    }
    cup(s.row, s.col);
    pen(s.pen);
    cursor_style(s.visible, s.blink, s.shape);
    // GL as it was, for xterm.js's DECRC; G0 back to ASCII for what is drawn next (the
    // charsets are designated at the end).
    const bool charset = s.gl_charset != 'B';
    if (charset) (out_ += "\x1b(") += s.gl_charset;
    out_ += "\x1b" "7";
    if (charset) out_ += "\x1b(B";
  }

  // After the main screen (and the saved cursor): the alternate screen's cells, and the saved
  // cursor again when it was saved there (xterm.js keeps a slot per screen; libvterm's one slot
  // gets the same values twice).
  void alternate_screen(const std::optional<SavedCursor>& saved) {
    section("alternate screen");
    pen(Pen{});
    csi("?1047h");  // libvterm: switch and erase, no cursor save (the slot is set above)
    std::vector<Cell> cells(static_cast<std::size_t>(m_.cols()));
    for (int r = 0; r < m_.rows(); ++r) {
      bool any = false;
      for (int c = 0; c < m_.cols(); ++c) {
        cells[static_cast<std::size_t>(c)] = m_.cell(r, c);
        any = any || !is_pristine(cells[static_cast<std::size_t>(c)]);
      }
      if (!any) continue;
      cup(r, 0);
      draw_line(cells, false);
    }
    if (saved && saved->on_alt) saved_cursor(*saved);
  }

  int region_top() const { return region_set_ ? top_ : 0; }
  int region_bottom() const { return region_set_ ? bottom_ : m_.rows(); }

  void scroll_region() {
    const int rows = m_.rows();
    const int top = modes_.scroll_top;
    const int bottom = modes_.scroll_bottom == 0 ? rows : modes_.scroll_bottom;
    // libvterm stores exactly "1;rows" as the full screen (no explicit bottom) but keeps a
    // bottom clamped to rows explicit, and an explicit bottom stays put when the screen grows:
    // "1;rows+1" sets it.
    const bool explicit_full = top == 0 && bottom == rows && modes_.scroll_bottom != 0;
    if (top == 0 && bottom == rows && !explicit_full) return;
    if (top >= bottom || bottom > rows) {
      // A shrinking resize clamps the bottom and not the top (libvterm, docs/vt-scanner.md):
      // DECSTBM cannot set such a region in a fresh terminal.
      fail("unreproducible_region", "degenerate scroll region");
      return;
    }
    // Without a bottom (the last row, whatever the size later) when the stream gave none.
    std::string s;
    append_num(s, static_cast<unsigned>(top + 1));
    if (modes_.scroll_bottom != 0) {
      s += ';';
      append_num(s, static_cast<unsigned>(explicit_full ? bottom + 1 : bottom));
    }
    s += 'r';
    csi(s);
    region_set_ = true;
    top_ = top;
    bottom_ = bottom;
  }

  // Places the cursor; origin mode is already set, so rows are relative to the region.
  void place_cursor(const std::optional<SavedCursor>& saved) {
    const CursorState cur = m_.cursor();
    const int W = m_.cols();
    const bool origin = modes_.origin;
    const bool inside = cur.row >= region_top() && cur.row < region_bottom();
    if (origin && !inside) {
      // CUP cannot leave the region, and every CSI after it clamps the cursor back into it.
      // libvterm's DECRC can leave it, and LF, RI, CR, HT and BS move without clamping: the
      // snapshot ends with ESC 8 and those, when the saved slot (or the zeroed slot, without
      // DECSC) holds this pen and cursor style, on the same side of the region.
      const Pen p = m_.pen();
      Pen zero;
      zero.fg = zero.bg = Color::rgb(0, 0, 0);
      const int srow = saved ? saved->row : 0;
      const int scol = saved ? saved->col : 0;
      const bool style =
          saved ? (saved->pen == p && saved->visible == cur.visible &&
                   saved->blink == cur.blink && saved->shape == cur.shape)
                : (p == zero && !cur.visible && !cur.blink && cur.shape == 0);
      const bool above = cur.row < region_top() && srow < region_top();
      const bool below = cur.row >= region_bottom() && srow >= region_bottom();
      const bool cols_ok = scol < W;
      if (style && (above || below) && cols_ok) {
        tail_ = true;
        tail_row_ = srow;
        tail_col_ = scol;
        return;
      }
      fail("unreproducible_cursor");
      return;
    }
    const int rel_row = origin ? cur.row - region_top() : cur.row;
    if (run_) {
      cup(rel_row, glyph_->col);  // end_text_run() prints the glyph from here
      row_ = cur.row;
      return;
    }
    if (cur.pending_wrap) {
      const Cell cell = m_.cell(cur.row, cur.col);
      const int c = cur.col;
      cup(rel_row, c);
      row_ = cur.row;
      if (cell.kind == Cell::Kind::glyph) {
        const int w0 = m_.glyph_width(cell.chars[0]);
        if (w0 > 0 && w0 == cell.width && c + w0 >= W) {
          pen(cell.pen);
          print(cell.chars.data(), cell.nchars, w0, W);  // same glyph: only the wrap state
          return;
        }
      } else if (cell.kind == Cell::Kind::continuation && c == W - 2) {
        // A DCH after the wrap pulled the right half here: the same DCH does it again.
        const Cell next = m_.cell(cur.row, c + 1);
        if (next.kind == Cell::Kind::erased) {
          print_wrap_glyph(2);
          pen(next.pen);
          csi("P");
          return;
        }
      } else if (cell.kind == Cell::Kind::erased && m_.alt_screen()) {
        // On the main screen the hidden alternate one serves (below): ECH after the glyph ends
        // the wrap in xterm.js.
        if (c == W - 1) {
          print_wrap_glyph(1);
          pen(cell.pen);
          erase_chars(1);
          return;
        }
        if (c == W - 2) {
          // A wide character printed here set the wrap; ECH, which does not move the cursor,
          // gives both cells back their erased state.
          const Cell next = m_.cell(cur.row, c + 1);
          if (next.kind == Cell::Kind::continuation) {
            print_wrap_glyph(2);
            pen(cell.pen);
            erase_chars(1);
            return;
          }
          if (next.kind == Cell::Kind::erased) {
            print_wrap_glyph(2);
            pen(next.pen);
            erase_chars(2);
            if (!(cell.pen == next.pen)) {
              pen(cell.pen);
              erase_chars(1);
            }
            return;
          }
        }
      }
      if (!m_.alt_screen() && (c == W - 1 || c == W - 2)) {
        // The wrap state is the cursor's, not the screen's: set it on the (hidden, erased on
        // every entry) alternate screen and come back.
        csi("?1047h");
        print_wrap_glyph(c == W - 1 ? 1 : 2);
        csi("?1047l");
        return;
      }
      fail("unreproducible_cursor", "pending wrap over these cells");
      return;
    }
    cup(rel_row, cur.col);
  }

  // libvterm's last glyph (what REP repeats and a combining mark joins, MirrorScreen::
  // last_glyph) as the stream left it: printed last, where it was printed. Over the cell that
  // still holds it; else printed and erased again (ECH) when its cells are erased; else on the
  // hidden alternate screen (its cells are erased on every entry). Called before the scroll
  // region and origin mode, which limit where CUP goes, when nothing is printed afterwards.
  void last_glyph() {
    section("last glyph");
    const std::optional<LastGlyph>& g = glyph_;
    if (!g) return;  // checked by check_last_glyph(): nothing printed, or a fallback
    if (g->width == 0) {
      // libvterm's own lone zero-width glyph (marks it could not join, MirrorScreen::
      // join_marks aside): printed after a sequence, a zero-width character takes a column.
      fail("unreproducible_cursor", "last glyph is zero-width characters without a glyph");
      return;
    }
    // With a pending wrap, place_cursor() prints the glyph that sets it last: libvterm's last
    // glyph when it was printed there, else check_last_glyph() falls back. A run of text that
    // goes on ends the snapshot with it (end_text_run).
    if (m_.cursor().pending_wrap || run_) return;
    if (printed_ && printed_glyph_ == *g) return;
    const int W = m_.cols();
    const int span = std::max(g->width, 1);
    if (g->nchars == 0 || g->row >= m_.rows() || g->col + span > W) {
      fail("unreproducible_cursor", "last glyph off the screen");
      return;
    }
    // A lone combining mark would join the glyph this terminal printed last.
    auto joins = [&] {
      return g->width == 0 && last_row_ == g->row && last_col_ + last_width_ == g->col;
    };
    const Cell cell = m_.cell(g->row, g->col);
    const bool same = cell.kind == Cell::Kind::glyph && cell.nchars == g->nchars &&
                      std::equal(g->chars.begin(), g->chars.begin() + g->nchars,
                                 cell.chars.begin()) &&
                      (g->width == 0 ? m_.glyph_width(cell.chars[0]) == 0 : cell.width == g->width);
    bool erased = true;
    for (int k = 0; k < span; ++k) {
      const Cell e = m_.cell(g->row, g->col + k);
      erased = erased && e.kind == Cell::Kind::erased && e.width == 1;
    }
    if (same || erased) {
      cup(g->row, g->col);
      if (joins()) {
        fail("unreproducible_cursor", "last glyph would join another");
        return;
      }
      pen(cell.pen);
      print(g->chars.data(), g->nchars, g->width, W);
      for (int k = 0; erased && k < span; ++k) {
        move_to(g->col + k);
        pen(m_.cell(g->row, g->col + k).pen);
        erase_chars(1);
      }
      return;
    }
    if (m_.alt_screen()) {
      fail("unreproducible_cursor", "last glyph's cell changed");
      return;
    }
    csi("?1047h");
    cup(g->row, g->col);
    if (joins()) {
      fail("unreproducible_cursor", "last glyph would join another");
      return;
    }
    print(g->chars.data(), g->nchars, g->width, W);
    csi("?1047l");
  }

  // After everything printed: this terminal's last glyph is the mirror's.
  void check_last_glyph() {
    const std::optional<LastGlyph>& g = glyph_;
    if (g ? (printed_ && printed_glyph_ == *g) : !printed_) return;
    auto where = [](const LastGlyph& x) {
      return "(" + std::to_string(x.row) + "," + std::to_string(x.col) + ") w" +
             std::to_string(x.width) + " U+" + std::to_string(static_cast<unsigned>(x.chars[0]));
    };
    const std::string what = "last glyph (REP, combining marks): the mirror's " +
                             (g ? where(*g) : std::string("none")) + ", printed " +
                             (printed_ ? where(printed_glyph_) : std::string("none"));
    fail("unreproducible_cursor", what.c_str());
  }

  void modes(const CursorState& cur) {
    if (modes_.cursor_keys_application) csi("?1h");
    if (modes_.keypad_application) out_ += "\x1b=";
    if (modes_.insert) csi("4h");
    if (!m_.autowrap()) csi("?7l");
    if (modes_.bracketed_paste) csi("?2004h");
    if (modes_.focus_reporting) csi("?1004h");
    switch (modes_.mouse_tracking) {
      case MouseTracking::off: break;
      case MouseTracking::x10: csi("?9h"); break;
      case MouseTracking::normal: csi("?1000h"); break;
      case MouseTracking::button: csi("?1002h"); break;
      case MouseTracking::any: csi("?1003h"); break;
    }
    switch (modes_.mouse_encoding) {
      case MouseEncoding::x10: break;
      case MouseEncoding::utf8: csi("?1005h"); break;
      case MouseEncoding::sgr: csi("?1006h"); break;
      case MouseEncoding::urxvt: csi("?1015h"); break;
    }
    if (m_.reverse_video()) csi("?5h");
    if (!tail_) cursor_style(cur.visible, cur.blink, cur.shape, modes_.cursor_style_source);
  }

  // After every CSI: DECRC and moves that do not clamp, to a cursor outside the scroll region
  // in origin mode (see place_cursor).
  void origin_tail() {
    if (!tail_) return;
    const CursorState cur = m_.cursor();
    const int W = m_.cols();
    out_ += "\x1b" "8";
    for (int r = tail_row_; r < cur.row; ++r) out_ += '\n';
    for (int r = tail_row_; r > cur.row; --r) out_ += "\x1b" "M";
    int col = tail_col_;
    const int target = run_ ? glyph_->col : cur.col;  // end_text_run() prints from the glyph
    if (col != target) {
      out_ += '\r';
      col = 0;
      while (col < target) {  // default tab stops (changed ones are unmodelled state)
        out_ += '\t';
        col = std::min((col / 8 + 1) * 8, W - 1);
      }
      for (; col > target; --col) out_ += '\b';
    }
    if (cur.pending_wrap && !run_) {
      const Cell cell = m_.cell(cur.row, cur.col);
      const int w0 = cell.kind == Cell::Kind::glyph ? m_.glyph_width(cell.chars[0]) : 0;
      if (w0 > 0 && w0 == cell.width && cur.col + w0 >= W && cell.pen == m_.pen() &&
          m_.autowrap()) {
        for (int i = 0; i < cell.nchars; ++i) append_utf8(out_, cell.chars[static_cast<std::size_t>(i)]);
        printed_ = true;
        text_end_ = out_.size();
        printed_glyph_ = LastGlyph{cur.row, cur.col, w0, cell.nchars, cell.chars};
      } else {
        fail("unreproducible_cursor");
      }
    }
  }
  bool has_tail() const { return tail_; }

 private:
  // Whether the snapshot ends inside a text run (end_text_run): the stream's last bytes are
  // text whose last glyph is still in its cell, in the current pen, with the cursor right
  // after it (on it with a pending wrap, or in the last column with autowrap off). Otherwise
  // (a resize moved things, say) the snapshot ends as after any sequence. In insert mode after
  // a wide glyph or outside the scroll region (insert_mode_blocks) the run cannot go on in a
  // snapshot, and end_text_run falls back: docs/snapshot.md, "Known limitations".
  bool run_continues() const {
    if (!text_run_at_cursor() || insert_mode_blocks(*glyph_)) return false;
    const LastGlyph& g = *glyph_;
    const CursorState cur = m_.cursor();
    const bool row_end = g.col + g.width >= m_.cols();
    const bool on_glyph = cur.pending_wrap || (!m_.autowrap() && row_end);
    if (cur.row != g.row || cur.col != (on_glyph ? g.col : g.col + g.width)) return false;
    if (g.row >= m_.rows() || g.col + g.width > m_.cols()) return false;
    // A narrow glyph over the left half of a wide one keeps the right half in libvterm (the
    // cell reads two wide): printed again there, it does the same.
    const Cell c = m_.cell(g.row, g.col);
    return c.kind == Cell::Kind::glyph && (c.width == g.width || (g.width == 1 && c.width == 2)) &&
           c.nchars == g.nchars &&
           std::equal(g.chars.begin(), g.chars.begin() + g.nchars, c.chars.begin()) &&
           c.pen == m_.pen();
  }
  // The stream's last bytes are text, its last glyph printable again.
  bool text_run_at_cursor() const {
    return m_.text_last() && glyph_ && glyph_->width > 0 && glyph_->nchars > 0;
  }
  // In insert mode the glyph printed again needs end_text_run's DCH first, which libvterm
  // applies only inside the scroll region, and which cannot give a wide glyph's continuation
  // cell its pen back.
  bool insert_mode_blocks(const LastGlyph& g) const {
    if (!modes_.insert) return false;
    const int bottom =
        modes_.scroll_bottom == 0 ? m_.rows() : std::min<int>(modes_.scroll_bottom, m_.rows());
    return g.width > 1 || g.row < modes_.scroll_top || g.row >= bottom;
  }

 public:
  // From the mirror's own tracking rather than TerminalModes: it tells a designated US-ASCII
  // set from libvterm's initial UTF-8 decoder, which split text runs differently (a combining
  // mark after ASCII joins it only in the latter).
  void charsets() {
    auto designate = [&](char which, char f) {
      if (f == 'u') return;
      out_ += '\x1b';
      out_ += which;
      out_ += f;
    };
    designate('(', m_.g0());
    designate(')', m_.g1());
    if (m_.shift_out()) out_ += '\x0e';
    // Invariant: the snapshot ends inside a run of text exactly when the stream does at its
    // cursor. A combining mark joins the glyph before it, and a REP repeats it, only right
    // after it (xterm, xterm.js; libvterm within one write): the raw bytes after the cursor
    // continue a run only where they did in the stream. SI ends a run; GL is G0 already here.
    if (!run_ && printed_ && text_end_ == out_.size()) out_ += '\x0f';
  }

  // The stream's last bytes at the cursor are text (MirrorScreen::text_last): the snapshot ends
  // with its last glyph, printed again where it is and in the pen it has (the current one: no
  // sequence came after it), with the cursor already there and every mode set, so what follows
  // the cursor continues the run. In insert mode, DCH first makes room for the insertion.
  void end_text_run() {
    if (!run_) {
      // A run the stream goes on with (a combining mark or a REP may come next) that insert
      // mode keeps a snapshot from continuing: what comes next would differ, so fall back.
      if (text_run_at_cursor() && insert_mode_blocks(*glyph_)) {
        section("text run");
        fail("unreproducible_cursor", "a text run in insert mode a snapshot cannot continue");
      }
      return;
    }
    section("text run");
    const LastGlyph& g = *glyph_;
    if (modes_.insert) {
      if (tail_) {  // a CSI would clamp the cursor into the scroll region
        fail("unreproducible_cursor", "insert mode outside the region");
        return;
      }
      csi("P");
    }
    col_ = g.col;
    row_ = g.row;
    phantom_ = false;
    print(g.chars.data(), g.nchars, g.width, m_.cols());
  }

 private:
  const MirrorScreen& m_;
  const TerminalModes& modes_;
  std::string out_;
  const char* failure_ = nullptr;
  std::string detail_;
  const char* section_ = "";
  std::vector<bool> must_draw_;
  std::vector<bool> made_continuation_;
  Pen pen_;
  bool pen_known_ = true;  // a fresh terminal starts with the default pen
  int row_ = 0;
  int col_ = 0;
  bool phantom_ = false;
  // The last glyph printed (libvterm's combine_pos/width start zeroed).
  int last_row_ = 0;
  int last_col_ = 0;
  int last_width_ = 0;
  const std::optional<LastGlyph> glyph_;
  const bool run_;  // the snapshot ends inside a text run (run_continues)
  bool printed_ = false;     // this terminal printed a glyph: printed_glyph_ is its last one
  LastGlyph printed_glyph_;
  std::size_t text_end_ = 0;  // out_'s size just after the last glyph printed
  bool visible_ = true;
  bool blink_ = true;
  int shape_ = 1;
  bool tail_ = false;
  int tail_row_ = 0;
  int tail_col_ = 0;
  bool region_set_ = false;
  int top_ = 0;
  int bottom_ = 0;
};

const char* unmodelled_reason(std::uint32_t flags) {
  if (flags & MirrorInput::kGraphics) return "graphics";
  if (flags & MirrorInput::kHiddenString) return "unmodelled_string";
  return "unmodelled_state";
}

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

}  // namespace

Snapshot build_snapshot(const MirrorScreen& m, const TerminalModes& modes,
                        std::string_view title, const std::optional<SavedCursor>& saved,
                        const SnapshotOptions& options) {
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

  Writer w(m, modes, reproducible_last_glyph(m));
  w.title(title);
  if (m.cursor().shape == 0 || (saved && saved->shape == 0)) w.zeroed_restore();
  snap.scrollback_lines = w.history_and_main(options.scrollback_lines);
  if (saved) w.saved_cursor(*saved);
  if (m.alt_screen()) w.alternate_screen(saved);
  w.last_glyph();
  w.scroll_region();
  if (modes.origin) w.csi("?6h");
  w.place_cursor(saved);
  if (!w.has_tail()) w.pen(m.pen());
  w.modes(m.cursor());
  w.origin_tail();
  w.charsets();
  w.end_text_run();
  w.check_last_glyph();
  if (w.failure()) {
    snap.fallback_detail = w.detail();
    return fallback(w.failure());
  }
  if (w.out().size() > options.max_bytes) return fallback("too_large");
  snap.bytes = std::move(w.out());
  return snap;
}

}  // namespace backscroll::term
