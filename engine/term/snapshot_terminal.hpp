// SnapshotTerminal: the fresh terminal of cols x rows a snapshot_v1 is written for
// (snapshot_writer.cpp), as the writer models it: the bytes so far, and the pen, cursor, pending
// wrap, cursor style and last glyph printed they leave it with, so each emitter writes only what
// changes. It also keeps the first reason the writer gave up, with where it was.
// Internal to the snapshot writer.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/terminal_modes.hpp"

namespace backscroll::term {

inline void append_num(std::string& out, unsigned v) {
  char buf[16];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// The SGR argument groups that set pen `p` after a reset (0), in order: f(group, parameters)
// for each ("1", "38;5;200" of 3 parameters, "4:3" of 2). Nothing is allocated: a snapshot of
// colored output encodes a pen every few cells.
template <typename F>
void for_each_sgr_group(const Pen& p, F&& f) {
  if (p.bold) f(std::string_view("1"), 1);
  if (p.faint) f(std::string_view("2"), 1);
  if (p.italic) f(std::string_view("3"), 1);
  switch (p.underline) {
    case Underline::single: f(std::string_view("4"), 1); break;
    case Underline::double_: f(std::string_view("4:2"), 2); break;
    case Underline::curly: f(std::string_view("4:3"), 2); break;
    case Underline::off: break;
  }
  if (p.blink) f(std::string_view("5"), 1);
  if (p.reverse) f(std::string_view("7"), 1);
  if (p.conceal) f(std::string_view("8"), 1);
  if (p.strike) f(std::string_view("9"), 1);
  if (p.overline) f(std::string_view("53"), 1);
  char buf[24];
  char* const end = buf + sizeof buf;
  if (p.font > 0 && p.font <= 9) {
    f(std::string_view(buf, std::to_chars(buf, end, 10 + p.font).ptr), 1);
  }
  const auto colour = [&](const Color& c, bool fg) {
    char* at = buf;
    int params = 1;
    switch (c.kind) {
      case Color::Kind::default_color: return;
      case Color::Kind::indexed:
        if (c.index_or_red < 8) {
          at = std::to_chars(at, end, (fg ? 30u : 40u) + c.index_or_red).ptr;
        } else if (c.index_or_red < 16) {
          at = std::to_chars(at, end, (fg ? 90u : 100u) + c.index_or_red - 8u).ptr;
        } else {
          at = std::copy_n(fg ? "38;5;" : "48;5;", 5, at);
          at = std::to_chars(at, end, unsigned{c.index_or_red}).ptr;
          params = 3;
        }
        break;
      case Color::Kind::rgb:
        at = std::copy_n(fg ? "38;2;" : "48;2;", 5, at);
        at = std::to_chars(at, end, unsigned{c.index_or_red}).ptr;
        *at++ = ';';
        at = std::to_chars(at, end, unsigned{c.green}).ptr;
        *at++ = ';';
        at = std::to_chars(at, end, unsigned{c.blue}).ptr;
        params = 5;
        break;
    }
    f(std::string_view(buf, static_cast<std::size_t>(at - buf)), params);
  };
  colour(p.fg, true);
  colour(p.bg, false);
}

class SnapshotTerminal {
 public:
  // `spare_alternate`: the terminal is on its main screen and its alternate screen is free to
  // borrow (false on SnapshotCanvas::alternate, which is drawn there).
  SnapshotTerminal(int cols, int rows, bool spare_alternate = true)
      : cols_(cols), rows_(rows), spare_alternate_(spare_alternate) {}

  int cols() const { return cols_; }
  int rows() const { return rows_; }
  // Whether the hidden alternate screen may serve as scratch space while `m`'s main screen is
  // drawn (it is erased on every entry, so nothing drawn there shows).
  bool may_borrow_alternate(const MirrorScreen& m) const {
    return spare_alternate_ && !m.alt_screen();
  }
  // The cursor as the model has it.
  int row() const { return row_; }
  int col() const { return col_; }

  // The bytes so far. Bytes appended here directly are not followed by the model.
  std::string& out() { return out_; }
  const char* failure() const { return failure_; }
  const std::string& detail() const { return detail_; }

  // Gives up: the first reason stays, with where the model was and the section.
  void fail(const char* reason, const char* what = "");
  void section(const char* name) { section_ = name; }

  // --- primitive emitters (track the fresh terminal) ---------------------------------------

  void csi(std::string_view body) {
    out_ += "\x1b[";
    out_ += body;
  }

  void pen(const Pen& p);

  // Absolute move (1-based in the sequence). With origin mode on, rows are region-relative.
  void cup(int row, int col);

  // Moves along the current row.
  void move_to(int col);

  // Moves along the current row with a sequence even when the cursor is there already, so a
  // zero-width character printed next takes a column of its own (xterm.js and the mirror join
  // one that directly follows a glyph).
  void move_to_with_sequence(int col);

  // Prints a glyph at the cursor (autowrap is on while the snapshot draws).
  void print(const char32_t* chars, int n, int width, int row_width);

  // Prints a wide character where only a wide glyph's side effect is wanted (it is overwritten).
  void print_stand_in(int row_width);

  // Prints one-character glyphs at the cursor, given by their characters and widths (at least
  // one), as print() one by one would: only the last one may reach the row's end.
  void print_run(std::span<const char32_t> chars, std::span<const std::uint8_t> widths);

  // Prints `glyph` where moves the model does not follow left the cursor: only the last glyph
  // printed is tracked.
  void print_unfollowed(const LastGlyph& glyph);

  // The cursor is at (row, col) without a pending wrap, moved there by bytes the model does not
  // follow (a CUP relative to the region, the origin tail).
  void moved_to(int row, int col) {
    row_ = row;
    col_ = col;
    phantom_ = false;
  }

  // Cells [from, end) of the row erased in `p`: ECH, or EL when the run reaches the row's end.
  void erase_run(int from, int end, const Pen& p);

  void erase_chars(int n);

  void newline();

  // `source`: how the stream set the style (TerminalModes::cursor_style_source). Set that way
  // even when it is libvterm's default, for a terminal with other defaults (xterm.js) and its
  // reading of later CSI ? 12; else only where it differs from the model.
  void cursor_style(bool visible, bool blink, int shape,
                    CursorStyleSource source = CursorStyleSource::none);

  // libvterm 0.1.4 restores a zeroed slot on DECRC before any DECSC: hidden, steady cursor of
  // shape 0 (no DECSCUSR value), black-on-black RGB pen, home position. Shape 0 exists only
  // that way, so a snapshot that needs it starts the same way.
  void zeroed_restore();

  // --- the last glyph printed ----------------------------------------------------------------

  // The last glyph this terminal printed, or nullptr.
  const LastGlyph* last_printed() const { return printed_ ? &printed_glyph_ : nullptr; }
  // `g`, a lone combining mark (width 0), would join the glyph this terminal printed last.
  bool joins_last_printed(const LastGlyph& g) const {
    return g.width == 0 && last_row_ == g.row && last_col_ + last_width_ == g.col;
  }
  // The bytes end with a glyph printed (nothing written after it).
  bool ends_in_text() const { return printed_ && text_end_ == out_.size(); }

 private:
  const int cols_;
  const int rows_;
  const bool spare_alternate_;
  std::string out_;
  const char* failure_ = nullptr;
  std::string detail_;
  const char* section_ = "";
  // A pen packed: pack_pen, and pack_color of fg and bg (every field of a Pen). Pens with the
  // same key are written with the same bytes.
  struct PenKey {
    std::uint64_t attrs_fg = 0;
    std::uint32_t bg = 0;
    bool operator==(const PenKey&) const = default;
  };
  static PenKey key_of(const Pen& p);
  Pen pen_;  // a fresh terminal starts with the default pen
  // The bytes pen() wrote for the last few pens it had to encode (empty: unused), replaced in
  // turn.
  struct EncodedPen {
    PenKey key;
    std::string bytes;
  };
  std::array<EncodedPen, 8> pen_cache_;
  std::size_t pen_cache_next_ = 0;
  int row_ = 0;
  int col_ = 0;
  bool phantom_ = false;
  // The last glyph printed (libvterm's combine_pos/width start zeroed).
  int last_row_ = 0;
  int last_col_ = 0;
  int last_width_ = 0;
  bool printed_ = false;  // this terminal printed a glyph: printed_glyph_ is its last one
  LastGlyph printed_glyph_;
  std::size_t text_end_ = 0;  // out_'s size just after the last glyph printed
  bool visible_ = true;
  bool blink_ = true;
  int shape_ = 1;
};

}  // namespace backscroll::term
