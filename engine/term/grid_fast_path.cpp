// Each step below follows libvterm 0.1.4's state layer (state.c on_text, on_control, on_csi;
// pen.c vterm_state_setpen) for the case the preconditions leave: no origin mode, no margins,
// no insert mode, no line attributes, no protected cells. The mirror's tests and fuzzer compare
// every result with a mirror that feeds libvterm every byte (docs/fast-path.md).
#include "engine/term/grid_fast_path.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string_view>

#include "engine/term/grid_cell.hpp"
#include "engine/term/mirror_input.hpp"
#include "engine/term/screen_grid.hpp"
#include "engine/term/text_run.hpp"
#include "engine/term/utf8.hpp"
#include "engine/term/wide_chars.hpp"

namespace backscroll::term {
namespace {

constexpr std::uint32_t kMissing = MirrorInput::kArgMissing;
// Larger values are left to libvterm, which reads them into a C int (truncation included).
constexpr std::uint32_t kMaxArgValue = 65535;

struct CsiArgs {
  // [0, count) set: nothing reads past them (a CSI comes every few bytes of a redraw, and
  // zeroing the rest was a store of 64 bytes each).
  std::array<std::uint32_t, MirrorInput::kMaxCsiArgs> args;
  int count = 0;
  char final = 0;
  std::size_t end = 0;  // one past the final byte

  // libvterm's CSI_ARG_COUNT (missing or 0: 1) and CSI_ARG_OR.
  int count_arg() const {
    return args[0] == kMissing || args[0] == 0 ? 1 : static_cast<int>(args[0]);
  }
  int arg_or(int i, int def) const {
    return i < count && args[static_cast<std::size_t>(i)] != kMissing
               ? static_cast<int>(args[static_cast<std::size_t>(i)])
               : def;
  }
};

// ESC [ at bytes[at]: arguments (digits and ';' only) and a final byte. False when the sequence
// is not one the fast path reads (a leader, ':', an intermediate, a control or a byte from 0x80
// inside, more than 16 arguments, a value past kMaxArgValue) or is unfinished.
bool parse_csi(std::span<const unsigned char> bytes, std::size_t at, CsiArgs& out) {
  std::uint32_t value = kMissing;
  for (std::size_t p = at + 2; p < bytes.size(); ++p) {
    const unsigned char c = bytes[p];
    if (c >= '0' && c <= '9') {
      value = (value == kMissing ? 0 : value * 10) + (c - '0');
      if (value > kMaxArgValue) return false;
    } else if (c == ';') {
      if (out.count == MirrorInput::kMaxCsiArgs - 1) return false;
      out.args[static_cast<std::size_t>(out.count++)] = value;
      value = kMissing;
    } else if (c >= 0x40 && c <= 0x7e) {
      out.args[static_cast<std::size_t>(out.count++)] = value;
      out.final = static_cast<char>(c);
      out.end = p + 1;
      return true;
    } else {
      return false;
    }
  }
  return false;
}

// linefeed(): scroll the region when on its bottom row, else down a row (not past the screen).
void line_feed(ScreenGrid& grid, GridFastPath::State& s) {
  if (s.row == s.region_bottom - 1) {
    grid.scroll_rect(GridRect{s.region_top, s.region_bottom, 0, s.cols}, 1, 0);
  } else if (s.row < s.rows - 1) {
    ++s.row;
  }
}

// on_text() for printable ASCII: one column per byte; at a pending wrap, a line feed to column
// 0 first; the last column sets the pending wrap (autowrap on) or takes every byte after it.
[[gnu::always_inline]] inline void put_text(ScreenGrid& grid, const unsigned char* text,
                                            std::size_t len, GridFastPath::State& s) {
  while (len > 0) {
    if (s.pending_wrap) {
      line_feed(grid, s);
      s.col = 0;
      s.pending_wrap = false;
    }
    const auto k =
        static_cast<int>(std::min<std::size_t>(len, static_cast<std::size_t>(s.cols - s.col)));
    grid.put_ascii(s.row, s.col, text, k);
    s.printed = true;
    s.last_row = s.row;
    s.last_width = 1;
    s.last_char = text[k - 1];
    s.last_mark_count = 0;
    text += k;
    len -= static_cast<std::size_t>(k);
    if (s.col + k < s.cols) {
      s.col += k;
      s.last_col = s.col - 1;
      continue;
    }
    s.col = s.cols - 1;
    s.last_col = s.col;
    if (s.autowrap) {
      s.pending_wrap = true;
    } else if (len > 0) {
      grid.put_ascii(s.row, s.col, text + len - 1, 1);
      s.last_char = text[len - 1];
      len = 0;
    }
  }
}

// on_text() for one character from U+00A0 of `width` columns (1 or 2). A glyph that does not
// fit on the row goes to the next one first, autowrap or not (libvterm 0.1.4, measured); one
// that reaches the row's end sets the pending wrap (autowrap on) or leaves the cursor on it.
// `chars`: the cell's characters when zero-width ones join the glyph (up to kVtermCellChars,
// 0-terminated when fewer; `c` first), nullptr for `c` alone.
[[gnu::always_inline]] inline void put_char(ScreenGrid& grid, char32_t c, int width,
                                            GridFastPath::State& s,
                                            const std::uint32_t* chars = nullptr) {
  if (s.pending_wrap || s.col + width > s.cols) {
    line_feed(grid, s);
    s.col = 0;
    s.pending_wrap = false;
  }
  const std::uint32_t alone[2] = {c, 0};
  grid.put_glyph(s.row, s.col, chars != nullptr ? chars : alone, width, false, LineAttrs{});
  s.printed = true;
  s.last_row = s.row;
  s.last_col = s.col;
  s.last_width = width;
  s.last_char = c;
  s.last_mark_count = 0;
  if (s.col + width < s.cols) s.col += width;
  else if (s.autowrap) s.pending_wrap = true;
}

// Whether `ch` is a character the fast path prints as a glyph: from U+00A0 (no C1 control),
// one or two columns wide, a glyph of its own wherever it comes (none that libvterm joins to
// the glyph before it), and not U+FFFE or U+FFFF, which libvterm's decoder turns into U+FFFD
// (encoding.c; found by the mirror fuzzer, 2026-12-05).
[[gnu::always_inline]] inline bool printable(const Utf8Char& ch) {
  return ch.value >= 0xa0 && ch.value != 0xfffe && ch.value != 0xffff &&
         !joins_at_write_start(ch.value);
}

// The character at bytes[at] when it starts one the fast path prints.
[[gnu::always_inline]] inline std::optional<Utf8Char> printable_at(
    std::span<const unsigned char> bytes, std::size_t at) {
  if (at >= bytes.size() || bytes[at] < 0x80) return std::nullopt;
  std::optional<Utf8Char> ch = decode_utf8(bytes.subspan(at));
  if (ch && !printable(*ch)) ch.reset();
  return ch;
}

// Whether the bytes at `p` (a byte from 0x80 first) that the fast path does not print could be
// joined to the glyph before them: a character that joins_at_write_start(), or one not
// complete yet.
bool may_join(std::span<const unsigned char> p) {
  if (const std::optional<Utf8Char> ch = decode_utf8(p)) return joins_at_write_start(ch->value);
  return p.size() < utf8_sequence_length(p[0]);  // cut short: unknown yet
}

// Prints a glyph `c` of `width` columns that ends at `at` (where a byte from 0x80 starts no
// character the fast path prints) with the zero-width characters after it that libvterm joins
// to it, or by itself when nothing joins it (a C1 control, malformed UTF-8, U+FFFE follows);
// `at` moves past the marks and `next` gets the character after them when the fast path prints
// it. False, nothing printed, when the glyph goes to libvterm with what follows it: more marks
// than a cell keeps (the mirror keeps them beyond libvterm's, Sink::cluster_overflow), a
// character libvterm joins with columns (U+302A-F, U+3099-A: differently at a write's start
// than within one), or the start of a character not complete yet (it may be either). Out of
// line: most text has no marks.
[[gnu::noinline]] bool put_with_marks(ScreenGrid& grid, char32_t c, int width,
                                      std::span<const unsigned char> bytes, std::size_t& at,
                                      std::optional<Utf8Char>& next, GridFastPath::State& s) {
  std::uint32_t chars[kVtermCellChars] = {c};
  int count = 1;
  std::size_t p = at;
  while (p < bytes.size() && bytes[p] >= 0x80) {
    const std::span<const unsigned char> rest = bytes.subspan(p);
    const std::optional<Utf8Char> ch = decode_utf8(rest);
    if (!ch) {
      if (rest.size() < utf8_sequence_length(rest[0])) return false;
      break;  // malformed: joins nothing
    }
    if (!joins_at_write_start(ch->value)) break;
    if (!is_zero_width(ch->value) || count == static_cast<int>(kVtermCellChars)) return false;
    chars[count++] = ch->value;
    p += ch->length;
  }
  if (count < static_cast<int>(kVtermCellChars)) chars[count] = 0;
  put_char(grid, c, width, s, count > 1 ? chars : nullptr);
  s.last_mark_count = count - 1;
  std::copy(chars + 1, chars + count, s.last_marks.begin());
  at = p;
  next = printable_at(bytes, p);
  return true;
}

// EL 0-2 and ED 0-2 (state.c): the cursor stays. False for another selector.
bool erase(ScreenGrid& grid, const CsiArgs& c, const GridFastPath::State& s) {
  const int which = c.args[0] == kMissing ? 0 : static_cast<int>(c.args[0]);
  auto erase_rect = [&](int top, int bottom, int left, int right) {
    if (right > left && bottom > top) grid.erase(GridRect{top, bottom, left, right}, false);
  };
  if (c.final == 'K') {
    switch (which) {
      case 0: erase_rect(s.row, s.row + 1, s.col, s.cols); return true;
      case 1: erase_rect(s.row, s.row + 1, 0, s.col + 1); return true;
      case 2: erase_rect(s.row, s.row + 1, 0, s.cols); return true;
      default: return false;
    }
  }
  switch (which) {
    case 0:
      erase_rect(s.row, s.row + 1, s.col, s.cols);
      erase_rect(s.row + 1, s.rows, 0, s.cols);
      return true;
    case 1:
      erase_rect(0, s.row, 0, s.cols);
      erase_rect(s.row, s.row + 1, 0, s.col + 1);
      return true;
    case 2: erase_rect(0, s.rows, 0, s.cols); return true;
    default: return false;  // 3 empties the history (the mirror's own handling)
  }
}

// vterm_state_setpen() into `pen` (the attributes libvterm keeps; MirrorScreen's setpenattr
// callback packs them so), and into `extras` the ones it lacks, as MirrorInput::sgr_extras()
// reads them (the colour forms let through here take as many arguments in both). False,
// `pen` and `extras` half done, for an attribute the fast path leaves to libvterm and the
// mirror: one it does not know, or a colour form the mirror rewrites. `parts` gets the
// GridFastPath::PenPart bits of libvterm's pen it sets.
bool apply_sgr(const CsiArgs& c, GridPen& pen, std::uint32_t& extras, std::uint16_t& parts) {
  using P = GridFastPath;
  const std::span<const std::uint32_t> args(c.args.data(), static_cast<std::size_t>(c.count));
  auto set = [&](std::uint32_t bit, bool on, std::uint16_t part) {
    pen.attrs = on ? pen.attrs | bit : pen.attrs & ~bit;
    parts |= part;
  };
  auto field = [&](int shift, std::uint32_t mask, std::uint32_t value, std::uint16_t part) {
    pen.attrs = (pen.attrs & ~(mask << shift)) | (value & mask) << shift;
    parts |= part;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::uint32_t a = args[i] == kMissing ? 0 : args[i];
    switch (a) {
      case 0:
        pen.attrs &= attr::kExtraMask;
        pen.fg = 0;
        pen.bg = 0;
        extras = 0;
        parts = P::kAllPenParts;  // nothing before it matters
        break;
      case 1: set(attr::kBold, true, P::kPartBold); break;
      case 3: set(attr::kItalic, true, P::kPartItalic); break;
      case 4: field(attr::kUnderlineShift, 3u, 1u, P::kPartUnderline); break;
      case 5: set(attr::kBlink, true, P::kPartBlink); break;
      case 7: set(attr::kReverse, true, P::kPartReverse); break;
      case 9: set(attr::kStrike, true, P::kPartStrike); break;
      case 21: field(attr::kUnderlineShift, 3u, 2u, P::kPartUnderline); break;
      case 22:
        set(attr::kBold, false, P::kPartBold);
        extras &= ~MirrorInput::kPenFaint;
        break;
      case 23: set(attr::kItalic, false, P::kPartItalic); break;
      case 24: field(attr::kUnderlineShift, 3u, 0u, P::kPartUnderline); break;
      case 25: set(attr::kBlink, false, P::kPartBlink); break;
      case 27: set(attr::kReverse, false, P::kPartReverse); break;
      case 29: set(attr::kStrike, false, P::kPartStrike); break;
      case 39:
        pen.fg = 0;
        parts |= P::kPartForeground;
        break;
      case 49:
        pen.bg = 0;
        parts |= P::kPartBackground;
        break;
      // Faint, conceal, overline: libvterm has none of them.
      case 2: extras |= MirrorInput::kPenFaint; break;
      case 8: extras |= MirrorInput::kPenConceal; break;
      case 28: extras &= ~MirrorInput::kPenConceal; break;
      case 53: extras |= MirrorInput::kPenOverline; break;
      case 55: extras &= ~MirrorInput::kPenOverline; break;
      case 38:
      case 48: {
        // Only the forms libvterm reads as xterm.js does; the mirror rewrites the others.
        const std::size_t values = MirrorInput::xterm_colour_values(args, i);
        if (values == 0) return false;
        std::uint32_t& colour = a == 38 ? pen.fg : pen.bg;
        parts |= a == 38 ? P::kPartForeground : P::kPartBackground;
        if (values == 1) {
          colour = pack_color(Color::indexed(static_cast<std::uint8_t>(args[i + 2])));
          i += 2;
        } else {
          colour = pack_color(Color::rgb(static_cast<std::uint8_t>(args[i + 2]),
                                         static_cast<std::uint8_t>(args[i + 3]),
                                         static_cast<std::uint8_t>(args[i + 4])));
          i += 4;
        }
        break;
      }
      default:
        if (a >= 10 && a <= 19) {
          field(attr::kFontShift, 0xfu, a - 10, P::kPartFont);
        } else if (a >= 30 && a <= 37) {
          pen.fg = pack_color(Color::indexed(static_cast<std::uint8_t>(a - 30)));
          parts |= P::kPartForeground;
        } else if (a >= 40 && a <= 47) {
          pen.bg = pack_color(Color::indexed(static_cast<std::uint8_t>(a - 40)));
          parts |= P::kPartBackground;
        } else if (a >= 90 && a <= 97) {
          pen.fg = pack_color(Color::indexed(static_cast<std::uint8_t>(a - 82)));
          parts |= P::kPartForeground;
        } else if (a >= 100 && a <= 107) {
          pen.bg = pack_color(Color::indexed(static_cast<std::uint8_t>(a - 92)));
          parts |= P::kPartBackground;
        } else {
          return false;
        }
        break;
    }
  }
  return true;
}

// An SGR: applied to the grid's pen and logged for libvterm, or false with nothing changed.
bool sgr(ScreenGrid& grid, const CsiArgs& c, std::span<const unsigned char> raw,
         GridFastPath::State& s) {
  GridPen pen = grid.pen();
  std::uint32_t extras = s.pen_extras;
  std::uint16_t parts = 0;
  if (!apply_sgr(c, pen, extras, parts)) return false;
  s.sgr_log.append(raw, parts);
  s.pen_extras = extras;
  pen.attrs = (pen.attrs & ~attr::kExtraMask) | GridFastPath::extra_attrs(extras);
  grid.pen() = pen;
  return true;
}

// The `CSI ?` at bytes[at] when it is `CSI ? 25 h/l` (DECTCEM), `CSI ? 12 h/l` (the cursor's
// blink) or `CSI ? 2026 h/l` (one argument, no other form): its length, with the cursor's
// visibility or blink noted; 0 for anything else.
std::size_t dec_mode(std::span<const unsigned char> bytes, std::size_t at, GridFastPath::State& s) {
  if (bytes.size() - at < 6) return 0;
  const unsigned char set = bytes[at + 5];
  if (set == 'h' || set == 'l') {
    const int on = set == 'h' ? 1 : 0;
    if (bytes[at + 3] == '2' && bytes[at + 4] == '5') {
      s.cursor_visible = on;
      s.modes_since_save = true;
      return 6;
    }
    // After a DECRC the scanner reads mode 12 in a way the run's settings cannot carry
    // (VtScanner::skip_fast): a later one goes to libvterm.
    if (bytes[at + 3] == '1' && bytes[at + 4] == '2' && !s.restored) {
      s.cursor_blink = on;
      s.modes_since_save = true;
      return 6;
    }
  }
  const auto is = [&](std::string_view form) {
    return bytes.size() - at >= form.size() &&
           std::memcmp(bytes.data() + at, form.data(), form.size()) == 0;
  };
  return is("\x1b[?2026h") || is("\x1b[?2026l") ? 8 : 0;
}

// RI (`ESC M`, state.c on_control 0x8d): on the region's top row the region scrolls down a
// line, else the cursor goes up a row (not past the screen's top: from row 0 above the region
// nothing happens). At a pending wrap, which RI keeps when it scrolls, libvterm takes it.
bool reverse_index(ScreenGrid& grid, GridFastPath::State& s) {
  if (!s.wrap_known || s.pending_wrap) return false;
  if (s.row == s.region_top) {
    grid.scroll_rect(GridRect{s.region_top, s.region_bottom, 0, s.cols}, -1, 0);
  } else if (s.row > 0) {
    --s.row;
  }
  return true;
}

// DECSC (state.c savecursor): the place, the pen, the cursor's visibility and blink. The SGRs
// logged so far rebuild the saved pen (State::saved_sgrs); the log goes on from it.
[[gnu::noinline]] void save_cursor(const ScreenGrid& grid, GridFastPath::State& s) {
  if (!s.saved) s.saved_sgrs.clear();
  s.saved_sgrs.append(s.sgr_log);
  s.sgr_log.clear();
  s.saved = true;
  s.save = {s.row, s.col, grid.pen(), s.pen_extras, s.cursor_visible, s.cursor_blink};
  s.modes_since_save = false;
}

// DECRC of the run's own save (State::Save says which): the place and the pen come back, and
// the pending wrap ends only if the cursor moves (updatecursor). False, nothing changed, for
// one the run leaves to libvterm.
[[gnu::noinline]] bool restore_cursor(ScreenGrid& grid, GridFastPath::State& s) {
  if (!s.saved || s.modes_since_save || !s.wrap_known) return false;
  if (s.row != s.save.row || s.col != s.save.col) s.pending_wrap = false;
  s.row = s.save.row;
  s.col = s.save.col;
  grid.pen() = s.save.pen;
  s.pen_extras = s.save.pen_extras;
  s.sgr_log.clear();  // libvterm's pen is the saved one again
  s.restored = true;
  return true;
}

// EL 0 at a pending wrap, which changes nothing (State::elided_erases).
bool erases_nothing(const CsiArgs& c, const GridFastPath::State& s) {
  return c.final == 'K' && s.wrap_known && s.pending_wrap &&
         (c.args[0] == kMissing || c.args[0] == 0);
}

// IL, DL (within the region, the cursor's row down; nothing when the cursor is outside it),
// SU and SD (the whole region), state.c: scroll() clamps the count to the rows moved. At a
// pending wrap, which they keep, libvterm takes them.
bool scroll(ScreenGrid& grid, const CsiArgs& c, const GridFastPath::State& s) {
  if (!s.wrap_known || s.pending_wrap || c.count > 1) return false;
  const int count = c.count_arg();
  const bool lines = c.final == 'L' || c.final == 'M';
  if (lines && (s.row < s.region_top || s.row >= s.region_bottom)) return true;
  const int top = lines ? s.row : s.region_top;
  const int downward = c.final == 'M' || c.final == 'S' ? count : -count;
  grid.scroll_rect(GridRect{top, s.region_bottom, 0, s.cols},
                   std::clamp(downward, top - s.region_bottom, s.region_bottom - top), 0);
  return true;
}

// DECSTBM (state.c): the region is clamped to the screen, a degenerate one is the whole
// screen, and the cursor goes home.
void set_region(const CsiArgs& c, GridFastPath::State& s) {
  int top = std::clamp(c.arg_or(0, 1) - 1, 0, s.rows);
  int bottom = c.count < 2 || c.args[1] == kMissing ? -1 : static_cast<int>(c.args[1]);
  if (top == 0 && bottom == s.rows) bottom = -1;
  else bottom = std::min(bottom, s.rows);
  if ((bottom > -1 ? bottom : s.rows) <= top) {
    top = 0;
    bottom = -1;
  }
  s.region_top = top;
  s.region_bottom = bottom > -1 ? bottom : s.rows;
  s.region_bottom_set = bottom;
  s.row = 0;
  s.col = 0;
}

// A CSI of the subset; false (nothing changed) for any other.
bool apply_csi(ScreenGrid& grid, const CsiArgs& c, std::span<const unsigned char> raw,
               GridFastPath::State& s) {
  switch (c.final) {
    case 'm': return sgr(grid, c, raw, s);
    case 'L':
    case 'M':
    case 'S':
    case 'T': return scroll(grid, c, s);
    case 'r':
      // libvterm drops a pending wrap here only when going home moves the cursor.
      if (c.count > 2 || ((!s.wrap_known || s.pending_wrap) && s.row == 0 && s.col == 0))
        return false;
      set_region(c, s);
      s.region_sequence = std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size());
      break;
    case 'K':
    case 'J':
      // At a pending wrap EL 0 / ED 0 keep the cursor's row (MirrorScreen follows xterm.js).
      return s.wrap_known && !s.pending_wrap && erase(grid, c, s);
    case 'X':
      // ECH: the cursor's cell and those right of it, at most to the row's end; the cursor
      // stays. At a pending wrap (which it keeps in libvterm, ends in xterm.js) libvterm takes it.
      if (!s.wrap_known || s.pending_wrap || c.count > 1) return false;
      grid.erase(GridRect{s.row, s.row + 1, s.col, std::min(s.col + c.count_arg(), s.cols)}, false);
      return true;
    case 'A': s.row -= c.count_arg(); break;  // CUU
    case 'B':                                 // CUD
    case 'e': s.row += c.count_arg(); break;  // VPR
    case 'C':                                 // CUF
    case 'a': s.col += c.count_arg(); break;  // HPR
    case 'D': s.col -= c.count_arg(); break;  // CUB
    case 'E':                                 // CNL
      s.col = 0;
      s.row += c.count_arg();
      break;
    case 'F':  // CPL
      s.col = 0;
      s.row -= c.count_arg();
      break;
    case 'G':                                     // CHA
    case '`': s.col = c.arg_or(0, 1) - 1; break;  // HPA
    case 'H':                                     // CUP
    case 'f':                                     // HVP
      s.row = c.arg_or(0, 1) - 1;
      s.col = c.count < 2 || c.args[1] == kMissing ? 0 : static_cast<int>(c.args[1]) - 1;
      break;
    case 'd': s.row = c.arg_or(0, 1) - 1; break;  // VPA
    default: return false;
  }
  // Every move drops the pending wrap, even one that leaves the cursor where it was; then
  // on_csi clamps the cursor to the screen.
  s.pending_wrap = false;
  s.wrap_known = true;
  s.row = std::clamp(s.row, 0, s.rows - 1);
  s.col = std::clamp(s.col, 0, s.cols - 1);
  return true;
}

// A hyperlink's start or end at bytes[at] (`ESC ] 8 ; params ; URI`, ended by BEL or ST), with
// printable ASCII inside and at most kMaxHyperlinkBytes in all: its length, 0 for anything
// else. libvterm 0.1.4 ignores OSC 8 (state.c on_osc: titles only; MirrorScreen sets no
// fallback), the tokenizer keeps nothing of it, and the scanner neither (it is harmless to a
// snapshot): the grid and every state stay as they were. gcc links each warning's option to
// its manual, `ls --hyperlink` each name.
constexpr std::size_t kMaxHyperlinkBytes = 2048;
std::size_t hyperlink(std::span<const unsigned char> bytes, std::size_t at) {
  const std::size_t n = std::min(bytes.size(), at + kMaxHyperlinkBytes);
  if (n - at < 5 || bytes[at + 2] != '8' || bytes[at + 3] != ';') return 0;
  for (std::size_t p = at + 4; p < n; ++p) {
    const unsigned char c = bytes[p];
    if (c == 0x07) return p + 1 - at;
    if (c == 0x1b) return p + 1 < n && bytes[p + 1] == '\\' ? p + 2 - at : 0;
    if (c < 0x20 || c > 0x7e) return 0;
  }
  return 0;
}

// The sequence at bytes[at] (an ESC), by its second byte: its length when the run took it, 0
// to stop before it.
std::size_t escape(ScreenGrid& grid, std::span<const unsigned char> bytes, std::size_t at,
                   GridFastPath::State& s) {
  const std::size_t n = bytes.size();
  if (at + 1 >= n) return 0;
  switch (bytes[at + 1]) {
    case '[': {
      if (at + 2 < n && bytes[at + 2] == '?') return dec_mode(bytes, at, s);
      CsiArgs csi;
      if (!parse_csi(bytes, at, csi)) return 0;
      if (erases_nothing(csi, s)) s.elided_erases.emplace_back(at, csi.end);
      else if (!apply_csi(grid, csi, bytes.subspan(at, csi.end - at), s)) return 0;
      return csi.end - at;
    }
    case '(':
      // SCS: G0 := US-ASCII, which it holds already.
      if (!s.g0_ascii || at + 2 >= n || bytes[at + 2] != 'B') return 0;
      s.designated_g0 = true;
      return 3;
    case ']': return hyperlink(bytes, at);
    case 'M': return reverse_index(grid, s) ? 2 : 0;
    case '7': save_cursor(grid, s); return 2;
    case '8': return restore_cursor(grid, s) ? 2 : 0;
    default: return 0;
  }
}

}  // namespace

std::uint32_t GridFastPath::extra_attrs(std::uint32_t extras) {
  return (extras & MirrorInput::kPenFaint ? attr::kFaint : 0u) |
         (extras & MirrorInput::kPenConceal ? attr::kConceal : 0u) |
         (extras & MirrorInput::kPenOverline ? attr::kOverline : 0u);
}

std::size_t GridFastPath::run(ScreenGrid& grid, std::span<const unsigned char> bytes, State& s) {
  const unsigned char* const b = bytes.data();
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = b[i];
    if (!s.wrap_known && c != 0x1b) break;
    if (c >= 0x20 && c < 0x7f) {
      const std::size_t len = ascii_run_length(b + i, n - i);
      if (i + len == n || b[i + len] < 0x80 || printable_at(bytes, i + len)) {
        put_text(grid, b + i, len, s);
        i += len;
        s.text_last = true;
        continue;
      }
      // Something else follows the run's last character: marks that join it (where GL holds
      // the UTF-8 decoder, which reads them in one piece with it), or it goes to libvterm with
      // what follows it.
      if (len > 1) {
        put_text(grid, b + i, len - 1, s);
        i += len - 1;
        s.text_last = true;
      }
      std::size_t after = i + 1;
      std::optional<Utf8Char> next;  // (read again below)
      if (s.gl_utf8) {
        if (!put_with_marks(grid, b[i], 1, bytes, after, next, s)) break;
      } else if (may_join(bytes.subspan(after))) {
        break;
      } else {
        put_text(grid, b + i, 1, s);
      }
      i = after;
      s.text_last = true;
      continue;
    }
    if (c >= 0x80) {
      // A run of UTF-8 characters, each decoded once: the one after a character is looked at
      // to know whether that one may be printed alone, then printed itself.
      std::optional<Utf8Char> ch = printable_at(bytes, i);
      bool stop = !ch;
      while (ch) {
        std::size_t after = i + ch->length;
        const int width = is_wide(ch->value) ? 2 : 1;  // (printable() ruled out zero width)
        std::optional<Utf8Char> next;
        if (after < n && b[after] >= 0x80 && !(next = printable_at(bytes, after))) {
          if (!put_with_marks(grid, ch->value, width, bytes, after, next, s)) {
            stop = true;  // the glyph goes to libvterm with what follows it
            break;
          }
        } else {
          put_char(grid, ch->value, width, s);
        }
        i = after;
        s.text_last = true;
        ch = next;
      }
      if (stop) break;
      continue;
    }
    if (c == 0x1b) {
      const std::size_t taken = escape(grid, bytes, i, s);
      if (taken == 0) break;
      i += taken;
    } else if (c == '\r') {
      // The cursor moves and the pending wrap goes, unless the cursor is in column 0 already
      // (a wide glyph filling a two-column row): CR keeps the wrap there (libvterm, measured).
      if (s.col > 0) s.pending_wrap = false;
      s.col = 0;
      ++i;
    } else if (c == '\n' && !s.pending_wrap) {
      line_feed(grid, s);
      ++i;
    } else if (c == '\b' && !s.pending_wrap) {
      if (s.col > 0) --s.col;
      ++i;
    } else if (c == '\t' && s.default_tabs && !s.pending_wrap) {
      // tab(): to the next stop, at most the last column (where it stays).
      s.col = std::min((s.col / 8 + 1) * 8, s.cols - 1);
      ++i;
    } else {
      break;
    }
    s.text_last = false;
  }
  return i;
}

}  // namespace backscroll::term
