#include "engine/term/snapshot_terminal.hpp"

#include <algorithm>

#include "engine/term/grid_cell.hpp"
#include "engine/term/mirror_input.hpp"
#include "engine/term/utf8.hpp"

namespace backscroll::term {
namespace {

constexpr char32_t kWideStandIn = 0x4e00;

}  // namespace

SnapshotTerminal::PenKey SnapshotTerminal::key_of(const Pen& p) {
  return {std::uint64_t{pack_pen(p)} << 32 | pack_color(p.fg), pack_color(p.bg)};
}

void SnapshotTerminal::fail(const char* reason, const char* what) {
  if (failure_) return;
  failure_ = reason;
  detail_ = std::string(what) + " at row " + std::to_string(row_) + " col " + std::to_string(col_) +
            " (" + section_ + ")";
}

void SnapshotTerminal::pen(const Pen& p) {
  if (p == pen_) return;  // the common case, before packing
  const PenKey key = key_of(p);
  if (key == key_of(pen_)) return;  // the same bytes (a colour's unused fields differ)
  pen_ = p;
  // A few pens come back all the time (a history of colored output): their bytes are kept.
  for (const EncodedPen& known : pen_cache_) {
    if (known.key == key && !known.bytes.empty()) {
      out_ += known.bytes;
      return;
    }
  }
  const std::size_t start = out_.size();
  // Each SGR carries at most 16 parameters (libvterm 0.1.4 overflows past 16).
  out_ += "\x1b[0";
  int n = 1;
  for_each_sgr_group(p, [&](std::string_view group, int params) {
    if (n + params > MirrorInput::kMaxCsiArgs) {
      out_ += "m\x1b[";
      n = 0;
    } else {
      out_ += ';';
    }
    out_ += group;
    n += params;
  });
  out_ += 'm';
  EncodedPen& slot = pen_cache_[pen_cache_next_++ % pen_cache_.size()];
  slot.key = key;
  slot.bytes.assign(out_, start);
}

void SnapshotTerminal::cup(int row, int col) {
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

void SnapshotTerminal::move_to(int col) {
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

void SnapshotTerminal::move_to_with_sequence(int col) {
  if (phantom_ || col != col_) return move_to(col);
  std::string s;
  if (col > 0) append_num(s, static_cast<unsigned>(col + 1));
  csi(s + 'G');
}

void SnapshotTerminal::print(const char32_t* chars, int n, int width, int row_width) {
  for (int i = 0; i < n; ++i) append_utf8(out_, chars[i]);
  last_row_ = row_;
  last_col_ = col_;
  last_width_ = width;
  printed_ = true;
  text_end_ = out_.size();
  // As LastGlyph{row_, col_, width, nchars, chars}, without zeroing all of `chars` per glyph:
  // only what the previous glyph left past this one's characters.
  const int nchars = std::min(n, Cell::kMaxChars);
  std::copy(chars, chars + nchars, printed_glyph_.chars.begin());
  if (printed_glyph_.nchars > nchars) {
    std::fill(printed_glyph_.chars.begin() + nchars,
              printed_glyph_.chars.begin() + printed_glyph_.nchars, U'\0');
  }
  printed_glyph_.row = row_;
  printed_glyph_.col = col_;
  printed_glyph_.width = width;
  printed_glyph_.nchars = nchars;
  if (col_ + width >= row_width && width > 0) {
    phantom_ = true;  // the cursor stays on the glyph
  } else {
    col_ += width;
  }
}

void SnapshotTerminal::print_stand_in(int row_width) {
  const char32_t c = kWideStandIn;
  print(&c, 1, 2, row_width);
}

void SnapshotTerminal::print_run(std::span<const char32_t> chars,
                                 std::span<const std::uint8_t> widths) {
  const std::size_t last = chars.size() - 1;
  for (std::size_t k = 0; k < last; ++k) {
    append_utf8(out_, chars[k]);
    col_ += widths[k];
  }
  print(&chars[last], 1, widths[last], cols_);
}

void SnapshotTerminal::print_unfollowed(const LastGlyph& glyph) {
  for (int i = 0; i < glyph.nchars; ++i) {
    append_utf8(out_, glyph.chars[static_cast<std::size_t>(i)]);
  }
  printed_ = true;
  text_end_ = out_.size();
  printed_glyph_ = glyph;
}

void SnapshotTerminal::erase_run(int from, int end, const Pen& p) {
  move_to(from);
  pen(p);
  if (end == cols_) csi("K");
  else erase_chars(end - from);
}

void SnapshotTerminal::erase_chars(int n) {
  std::string s;
  if (n > 1) append_num(s, static_cast<unsigned>(n));
  s += 'X';
  csi(s);
}

void SnapshotTerminal::newline() {
  pen(Pen{});  // scrolled-in lines take the pen (BCE)
  // CR then LF. CR does not cancel a pending wrap when it does not move the cursor (a
  // glyph as wide as the row, in column 0: one column, or a wide one on two): CHA does, and
  // LF at the bottom would keep it and the next glyph would scroll a blank line in.
  out_ += phantom_ && col_ == 0 ? "\x1b[G\n" : "\r\n";
  col_ = 0;
  phantom_ = false;
  if (row_ < rows_ - 1) ++row_;
}

void SnapshotTerminal::cursor_style(bool visible, bool blink, int shape, CursorStyleSource source) {
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

void SnapshotTerminal::zeroed_restore() {
  out_ +=
      "\x1b"
      "8";
  pen_ = Pen{};
  pen_.fg = Color::rgb(0, 0, 0);
  pen_.bg = Color::rgb(0, 0, 0);
  visible_ = false;
  blink_ = false;
  shape_ = 0;
  row_ = col_ = 0;
}

}  // namespace backscroll::term
