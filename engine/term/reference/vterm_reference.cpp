// ReferenceTerminal over libvterm 0.1.4: the snapshot contract's second emulator.
#include "engine/term/reference/vterm_reference.hpp"

#include <vterm.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <sstream>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/zero_width.hpp"

namespace backscroll::testing {
namespace {

using term::Cell;
using term::Color;
using term::Pen;

Color color_of(const VTermColor& c, bool fg) {
  if (fg ? VTERM_COLOR_IS_DEFAULT_FG(&c) : VTERM_COLOR_IS_DEFAULT_BG(&c)) return Color{};
  if (VTERM_COLOR_IS_INDEXED(&c)) return Color::indexed(c.indexed.idx);
  return Color::rgb(c.rgb.red, c.rgb.green, c.rgb.blue);
}

// As vterm_screen_get_cell reports it (reverse includes DECSCNM): what is displayed.
Cell cell_of(const VTermScreenCell& v) {
  Cell c;
  if (v.chars[0] == 0) {
    c.kind = Cell::Kind::erased;
  } else if (v.chars[0] == 0xffffffffu) {
    c.kind = Cell::Kind::continuation;
  } else {
    c.kind = Cell::Kind::glyph;
    int n = 0;
    while (n < VTERM_MAX_CHARS_PER_CELL && v.chars[n] != 0) {
      c.chars[static_cast<std::size_t>(n)] = v.chars[n];
      ++n;
    }
    c.nchars = static_cast<std::uint8_t>(n);
  }
  c.width = static_cast<std::uint8_t>(v.width == 2 ? 2 : 1);
  c.dwl = v.attrs.dwl;
  c.dhl = static_cast<std::uint8_t>(v.attrs.dhl);
  Pen& p = c.pen;
  p.bold = v.attrs.bold;
  p.italic = v.attrs.italic;
  p.blink = v.attrs.blink;
  p.reverse = v.attrs.reverse;
  p.strike = v.attrs.strike;
  p.underline = static_cast<term::Underline>(v.attrs.underline);
  p.font = static_cast<std::uint8_t>(v.attrs.font);
  p.fg = color_of(v.fg, true);
  p.bg = color_of(v.bg, false);
  return c;
}

std::string describe(const Cell& c) {
  std::ostringstream o;
  switch (c.kind) {
    case Cell::Kind::erased: o << "erased"; break;
    case Cell::Kind::continuation: o << "continuation"; break;
    case Cell::Kind::glyph:
      o << "glyph";
      for (int i = 0; i < c.nchars; ++i) {
        char buf[16];
        std::snprintf(buf, sizeof buf, " U+%04X",
                      static_cast<unsigned>(c.chars[static_cast<std::size_t>(i)]));
        o << buf;
      }
      break;
  }
  const Pen& p = c.pen;
  o << " w" << int{c.width} << " b" << p.bold << "i" << p.italic << "u" << int(p.underline) << "k"
    << p.blink << "r" << p.reverse << "s" << p.strike << "f" << int{p.font};
  auto col = [&](const Color& x) {
    o << (x.kind == Color::Kind::default_color ? "def"
          : x.kind == Color::Kind::indexed     ? "idx"
                                               : "rgb")
      << int{x.index_or_red} << "," << int{x.green} << "," << int{x.blue};
  };
  o << " fg=";
  col(p.fg);
  o << " bg=";
  col(p.bg);
  if (c.dwl || c.dhl) o << " dwl" << c.dwl << "dhl" << int{c.dhl};
  return o.str();
}

}  // namespace

struct ReferenceTerminal::Impl {
  VTerm* vt = nullptr;
  VTermScreen* screen = nullptr;
  VTermScreenCallbacks callbacks{};
  bool visible = true;
  bool blink = true;
  int shape = 1;
  bool alt = false;
  bool reverse = false;
  int mouse = 0;
  std::string title;
  std::vector<std::shared_ptr<const std::vector<Cell>>> scrollback;
  ~Impl() {
    if (vt) vterm_free(vt);
  }
};

struct ReferenceCallbacks {
  static int settermprop(VTermProp prop, VTermValue* val, void* user) {
    auto& im = *static_cast<ReferenceTerminal::Impl*>(user);
    switch (prop) {
      case VTERM_PROP_CURSORVISIBLE: im.visible = val->boolean; break;
      case VTERM_PROP_CURSORBLINK: im.blink = val->boolean; break;
      case VTERM_PROP_CURSORSHAPE: im.shape = val->number; break;
      case VTERM_PROP_ALTSCREEN: im.alt = val->boolean; break;
      case VTERM_PROP_REVERSE: im.reverse = val->boolean; break;
      case VTERM_PROP_MOUSE: im.mouse = val->number; break;
      case VTERM_PROP_TITLE:
        im.title = term::MirrorScreen::sanitize_title(val->string ? val->string : "");
        break;
      default: break;
    }
    return 1;
  }
  static int pushline(int cols, const VTermScreenCell* cells, void* user) {
    auto& im = *static_cast<ReferenceTerminal::Impl*>(user);
    auto line = std::make_shared<std::vector<Cell>>();
    line->reserve(static_cast<std::size_t>(cols));
    for (int c = 0; c < cols; ++c) line->push_back(cell_of(cells[c]));
    im.scrollback.push_back(std::move(line));
    return 1;
  }
  static void output(const char* s, std::size_t len, void* user) {
    static_cast<ReferenceTerminal*>(user)->output_.append(s, len);
  }
};

ReferenceTerminal::ReferenceTerminal(int cols, int rows) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.vt = vterm_new(rows, cols);
  vterm_set_utf8(im.vt, 1);
  vterm_output_set_callback(im.vt, &ReferenceCallbacks::output, this);
  im.screen = vterm_obtain_screen(im.vt);
  vterm_screen_enable_altscreen(im.screen, 1);
  im.callbacks.settermprop = &ReferenceCallbacks::settermprop;
  im.callbacks.sb_pushline = &ReferenceCallbacks::pushline;
  vterm_screen_set_callbacks(im.screen, &im.callbacks, impl_.get());
  vterm_screen_reset(im.screen, 1);
}

ReferenceTerminal::~ReferenceTerminal() = default;

// libvterm decodes a piece of text that starts with a non-ASCII byte as UTF-8 to its end, past
// a DEC graphics (or other table) GL: a write that starts there decodes differently from one
// that starts at the ASCII after it. A terminal applies the GL to every ASCII byte (xterm,
// xterm.js, the mirror), so while GL holds a set other than ASCII each write here ends before
// an ASCII byte that follows a non-ASCII one in ground state (a small tracker of libvterm's
// parser: escape, designations, SO/SI, CSI, strings). Only then: a write that starts with
// combining marks cannot join them to a glyph in the last column (libvterm 0.1.4 compares the
// cursor with the column after that glyph), so splitting where GL is ASCII would lose marks
// the terminal keeps.
void ReferenceTerminal::feed(std::string_view bytes) {
  std::size_t from = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    switch (parser_) {
      case Parser::ground:
        if (c == 0x1b) parser_ = Parser::escape;
        else if (c == 0x0e || c == 0x0f) shift_out_ = c == 0x0e;
        else if (c >= 0x20 && c < 0x7f && previous_ >= 0x80 && utf8_remaining_ == 0 && i > from &&
                 (shift_out_ ? g1_ : g0_) != 'B') {
          vterm_input_write(impl_->vt, bytes.data() + from, i - from);
          from = i;
        }
        break;
      case Parser::escape:
        if (c == '[') parser_ = Parser::csi;
        else if (c == ']' || c == 'P') parser_ = Parser::string;
        else if (c == '(') parser_ = Parser::designate_g0;
        else if (c == ')') parser_ = Parser::designate_g1;
        else if (c == 'c') {  // RIS
          g0_ = g1_ = 'B';
          shift_out_ = false;
          parser_ = Parser::ground;
        } else if ((c >= 0x30 && c <= 0x7e) || c == 0x18 || c == 0x1a) parser_ = Parser::ground;
        break;
      case Parser::designate_g0:
      case Parser::designate_g1:
        if (c >= 0x30 && c <= 0x7e)
          (parser_ == Parser::designate_g0 ? g0_ : g1_) = static_cast<char>(c);
        parser_ = c == 0x1b ? Parser::escape : Parser::ground;
        break;
      case Parser::csi:
        if (c == 0x1b) parser_ = Parser::escape;
        else if ((c >= 0x40 && c <= 0x7e) || c == 0x18 || c == 0x1a || c >= 0x80)
          parser_ = Parser::ground;
        break;
      case Parser::string:
        if (c == 0x07 || c == 0x18 || c == 0x1a) parser_ = Parser::ground;
        else if (c == 0x1b) parser_ = Parser::string_escape;
        break;
      case Parser::string_escape:
        parser_ = c == '\\' || c == 0x18 || c == 0x1a ? Parser::ground
                  : c == 0x1b                         ? Parser::escape
                                                      : Parser::string;
        break;
    }
    previous_ = parser_ == Parser::ground ? c : 0;
    if (c >= 0xc0) utf8_remaining_ = c < 0xe0 ? 1 : c < 0xf0 ? 2 : c < 0xf8 ? 3 : 0;
    else if (c >= 0x80 && utf8_remaining_ > 0) --utf8_remaining_;
    else utf8_remaining_ = 0;
  }
  if (from < bytes.size()) vterm_input_write(impl_->vt, bytes.data() + from, bytes.size() - from);
}

ScreenModel ReferenceTerminal::model(std::size_t history_lines) const {
  const Impl& im = *impl_;
  ScreenModel m;
  vterm_get_size(im.vt, &m.rows, &m.cols);
  m.cells.reserve(static_cast<std::size_t>(m.rows) * static_cast<std::size_t>(m.cols));
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c) {
      VTermScreenCell v{};
      vterm_screen_get_cell(im.screen, VTermPos{r, c}, &v);
      m.cells.push_back(cell_of(v));
    }
  VTermPos pos;
  vterm_state_get_cursorpos(vterm_obtain_state(im.vt), &pos);
  m.cursor_row = pos.row;
  m.cursor_col = pos.col;
  m.cursor_visible = im.visible;
  m.cursor_blink = im.blink;
  m.cursor_shape = im.shape;
  m.alt_screen = im.alt;
  m.reverse_video = im.reverse;
  m.mouse = im.mouse;
  m.title = im.title;
  const std::size_t kept = std::min(history_lines, im.scrollback.size());
  m.scrollback.assign(im.scrollback.end() - static_cast<std::ptrdiff_t>(kept), im.scrollback.end());
  return m;
}

std::string ReferenceTerminal::mode_report() {
  output_.clear();
  for (int mode : {1, 5, 6, 7, 12, 25, 1000, 1002, 1003, 1004, 1005, 1006, 1015, 1047, 2004}) {
    const std::string q = "\x1b[?" + std::to_string(mode) + "$p";
    feed(q);
  }
  std::string r = output_;
  output_.clear();
  return r;
}

std::string ReferenceTerminal::input_report() {
  output_.clear();
  VTerm* vt = impl_->vt;
  vterm_keyboard_key(vt, VTERM_KEY_UP, VTERM_MOD_NONE);
  vterm_keyboard_key(vt, VTERM_KEY_HOME, VTERM_MOD_NONE);
  vterm_keyboard_key(vt, VTERM_KEY_KP_1, VTERM_MOD_NONE);
  vterm_keyboard_key(vt, VTERM_KEY_KP_ENTER, VTERM_MOD_NONE);
  vterm_keyboard_unichar(vt, 'a', VTERM_MOD_NONE);
  vterm_keyboard_start_paste(vt);
  vterm_keyboard_end_paste(vt);
  vterm_state_focus_in(vterm_obtain_state(vt));
  vterm_mouse_move(vt, 2, 3, VTERM_MOD_NONE);
  vterm_mouse_button(vt, 1, true, VTERM_MOD_NONE);
  vterm_mouse_move(vt, 3, 4, VTERM_MOD_NONE);
  vterm_mouse_button(vt, 1, false, VTERM_MOD_NONE);
  std::string r = output_;
  output_.clear();
  return r;
}

std::string first_difference(const ScreenModel& a, const ScreenModel& b, std::size_t max_history) {
  std::ostringstream o;
  if (a.rows != b.rows || a.cols != b.cols) {
    o << "size " << a.cols << "x" << a.rows << " vs " << b.cols << "x" << b.rows;
    return o.str();
  }
  for (int r = 0; r < a.rows; ++r)
    for (int c = 0; c < a.cols; ++c)
      if (!(a.at(r, c) == b.at(r, c))) {
        o << "cell (" << r << "," << c << "): " << describe(a.at(r, c)) << " vs "
          << describe(b.at(r, c));
        return o.str();
      }
  if (a.cursor_row != b.cursor_row || a.cursor_col != b.cursor_col)
    o << "cursor (" << a.cursor_row << "," << a.cursor_col << ") vs (" << b.cursor_row << ","
      << b.cursor_col << ")";
  else if (a.cursor_visible != b.cursor_visible)
    o << "cursor visible " << a.cursor_visible << " vs " << b.cursor_visible;
  else if (a.cursor_blink != b.cursor_blink || a.cursor_shape != b.cursor_shape)
    o << "cursor style " << a.cursor_blink << "/" << a.cursor_shape << " vs " << b.cursor_blink
      << "/" << b.cursor_shape;
  else if (a.alt_screen != b.alt_screen)
    o << "alternate screen " << a.alt_screen << " vs " << b.alt_screen;
  else if (a.reverse_video != b.reverse_video)
    o << "reverse video " << a.reverse_video << " vs " << b.reverse_video;
  else if (a.mouse != b.mouse) o << "mouse " << a.mouse << " vs " << b.mouse;
  else if (a.title != b.title) o << "title '" << a.title << "' vs '" << b.title << "'";
  if (!o.str().empty()) return o.str();
  const std::size_t n = std::min({a.scrollback.size(), b.scrollback.size(), max_history});
  for (std::size_t i = 1; i <= n; ++i) {
    const auto& la = *a.scrollback[a.scrollback.size() - i];
    const auto& lb = *b.scrollback[b.scrollback.size() - i];
    if (la.size() != lb.size()) {
      o << "history line -" << i << " width " << la.size() << " vs " << lb.size();
      return o.str();
    }
    for (std::size_t c = 0; c < la.size(); ++c)
      if (!(la[c] == lb[c])) {
        o << "history line -" << i << " col " << c << ": " << describe(la[c]) << " vs "
          << describe(lb[c]);
        return o.str();
      }
  }
  return "";
}

std::string render(const ScreenModel& m) {
  std::string out;
  for (int r = 0; r < m.rows; ++r) {
    out += '|';
    for (int c = 0; c < m.cols; ++c) {
      const Cell& cell = m.at(r, c);
      if (cell.kind == Cell::Kind::glyph) {
        const char32_t ch = cell.chars[0];
        out += (ch >= 0x20 && ch < 0x7f) ? static_cast<char>(ch) : '?';
      } else if (cell.kind == Cell::Kind::continuation) {
        out += '_';
      } else {
        out += cell.pen == Pen{} ? ' ' : '.';
      }
    }
    out += "|\n";
  }
  out += "cursor " + std::to_string(m.cursor_row) + "," + std::to_string(m.cursor_col) + "\n";
  return out;
}

// ---- ScreenLayerTap -------------------------------------------------------------------------

struct ScreenLayerTap::Impl {
  std::size_t max_lines;
  VTerm* vt = nullptr;
  VTermScreen* screen = nullptr;
  VTermScreenCallbacks callbacks{};
  bool alt = false;
  bool reverse = false;
  std::deque<std::vector<VTermScreenCell>> history;  // as sb_pushline gave them
  std::uint64_t pushed = 0;
  std::uint64_t popped = 0;
  bool departed = false;  // since created(): see VtermTap::departed()
  std::uint64_t departures = 0;
  explicit Impl(std::size_t lines) : max_lines(lines) {}
  ~Impl() { destroy(); }
  void destroy() {
    if (vt) vterm_free(vt);
    vt = nullptr;
  }
};

struct ScreenLayerCallbacks {
  static ScreenLayerTap::Impl& of(void* user) { return *static_cast<ScreenLayerTap::Impl*>(user); }
  static int settermprop(VTermProp prop, VTermValue* val, void* user) {
    if (prop == VTERM_PROP_ALTSCREEN) of(user).alt = val->boolean;
    if (prop == VTERM_PROP_REVERSE) of(user).reverse = val->boolean;
    return 1;
  }
  static int pushline(int cols, const VTermScreenCell* cells, void* user) {
    auto& im = of(user);
    im.history.emplace_back(cells, cells + cols);
    ++im.pushed;
    while (im.history.size() > im.max_lines) im.history.pop_front();
    return 1;
  }
  // The line as it was pushed; columns past its width pristine; a wide glyph cut by the right
  // edge narrow (libvterm steps through the row by width).
  static int popline(int cols, VTermScreenCell* cells, void* user) {
    auto& im = of(user);
    if (im.history.empty()) return 0;
    const std::vector<VTermScreenCell>& line = im.history.back();
    VTermColor fg, bg;
    vterm_state_get_default_colors(vterm_obtain_state(im.vt), &fg, &bg);
    for (int c = 0; c < cols; ++c) {
      VTermScreenCell v{};
      if (static_cast<std::size_t>(c) < line.size()) {
        v = line[static_cast<std::size_t>(c)];
      } else {
        v.fg = fg;
        v.bg = bg;
      }
      if (v.chars[0] == 0xffffffffu) std::fill(v.chars + 1, v.chars + VTERM_MAX_CHARS_PER_CELL, 0u);
      v.width = static_cast<char>(v.width == 2 && c + 1 < cols ? 2 : 1);
      cells[c] = v;
    }
    im.history.pop_back();
    ++im.popped;
    return 1;
  }
};

ScreenLayerTap::ScreenLayerTap(std::size_t max_lines) : impl_(std::make_unique<Impl>(max_lines)) {}
ScreenLayerTap::~ScreenLayerTap() = default;

void ScreenLayerTap::created(int cols, int rows) {
  Impl& im = *impl_;
  im.destroy();
  im.history.clear();
  im.pushed = im.popped = 0;
  im.alt = im.reverse = im.departed = false;
  im.vt = vterm_new(rows, cols);
  vterm_set_utf8(im.vt, 1);
  im.screen = vterm_obtain_screen(im.vt);
  vterm_screen_enable_altscreen(im.screen, 1);
  im.callbacks.settermprop = &ScreenLayerCallbacks::settermprop;
  im.callbacks.sb_pushline = &ScreenLayerCallbacks::pushline;
  im.callbacks.sb_popline = &ScreenLayerCallbacks::popline;
  vterm_screen_set_callbacks(im.screen, &im.callbacks, &im);
  vterm_screen_reset(im.screen, 1);
}

void ScreenLayerTap::wrote(std::string_view bytes) {
  vterm_input_write(impl_->vt, bytes.data(), bytes.size());
}

void ScreenLayerTap::resized(int cols, int rows) { vterm_set_size(impl_->vt, rows, cols); }

void ScreenLayerTap::history_cleared() { impl_->history.clear(); }

void ScreenLayerTap::departed() {
  if (!impl_->departed) ++impl_->departures;
  impl_->departed = true;
}

std::uint64_t ScreenLayerTap::departures() const { return impl_->departures; }

std::uint64_t ScreenLayerTap::pushed() const { return impl_->pushed; }
std::uint64_t ScreenLayerTap::popped() const { return impl_->popped; }

// The grid's cell as libvterm's screen layer can hold it: without the pen attributes the
// mirror keeps itself (faint, conceal, overline), which libvterm ignores, and without the
// characters past the six it keeps (the mirror adds them itself; libvterm never sees them).
static Cell without_extras(Cell c) {
  c.pen.faint = c.pen.conceal = c.pen.overline = false;
  if (c.nchars > VTERM_MAX_CHARS_PER_CELL) c.nchars = VTERM_MAX_CHARS_PER_CELL;
  return c;
}

// A lone zero-width character has a column of its own in the mirror, which libvterm was
// given as a space (MirrorInput::Sink::lone_zero_width): that cell as libvterm holds it.
static Cell lone_as_space(Cell c) {
  if (c.kind == Cell::Kind::glyph && c.nchars == 1 && term::is_zero_width(c.chars[0]))
    c.chars[0] = U' ';
  return c;
}

std::string ScreenLayerTap::difference(const term::MirrorScreen& m) const {
  const Impl& im = *impl_;
  if (im.departed) return "";
  int rows = 0, cols = 0;
  vterm_get_size(im.vt, &rows, &cols);
  std::ostringstream o;
  if (rows != m.rows() || cols != m.cols()) {
    o << "size " << m.cols() << "x" << m.rows() << " vs screen layer " << cols << "x" << rows;
    return o.str();
  }
  if (!m.grid_bookkeeping_holds()) return "the grid's zero_from: a cell past it is not all zero";
  if (im.alt != m.alt_screen()) return "alternate screen flag";
  if (im.reverse != m.reverse_video()) return "reverse video flag";
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      VTermScreenCell v{};
      vterm_screen_get_cell(im.screen, VTermPos{r, c}, &v);
      Cell expected = cell_of(v);
      expected.pen.reverse = expected.pen.reverse != im.reverse;  // the cell's own bit
      const Cell got = without_extras(m.cell(r, c));
      if (!(got == expected) && !(lone_as_space(got) == expected)) {
        o << (im.alt ? "alternate" : "main") << " screen cell (" << r << "," << c << "): grid "
          << describe(got) << ", screen layer " << describe(expected);
        return o.str();
      }
    }
  if (im.pushed != m.pushed_lines()) {
    o << "lines pushed: grid " << m.pushed_lines() << ", screen layer " << im.pushed;
    return o.str();
  }
  if (im.history.size() != m.scrollback_lines()) {
    o << "history lines: grid " << m.scrollback_lines() << ", screen layer " << im.history.size();
    return o.str();
  }
  std::vector<Cell> row;
  for (std::size_t i = 0; i < im.history.size(); ++i) {
    const std::vector<VTermScreenCell>& line = im.history[i];
    if (static_cast<int>(line.size()) != m.scrollback_cols(i)) {
      o << "history line " << i << " width: grid " << m.scrollback_cols(i) << ", screen layer "
        << line.size();
      return o.str();
    }
    row.assign(line.size(), Cell{});
    m.scrollback_row(i, row);
    for (std::size_t c = 0; c < line.size(); ++c) {
      const Cell got = without_extras(row[c]);
      if (!(got == cell_of(line[c])) && !(lone_as_space(got) == cell_of(line[c]))) {
        o << "history line " << i << " col " << c << ": grid " << describe(row[c])
          << ", screen layer " << describe(cell_of(line[c]));
        return o.str();
      }
    }
  }
  return "";
}

}  // namespace backscroll::testing
