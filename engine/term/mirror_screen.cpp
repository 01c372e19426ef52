// MirrorScreen over libvterm 0.1.4's parser and state layer (Debian 12), with ScreenGrid in place
// of its screen layer. The only engine file that includes <vterm.h>.
// Departures from feeding libvterm the raw stream, each because libvterm 0.1.4 would crash, hang
// or hide state a snapshot needs (docs/snapshot.md has the details and the reproducers):
//   - writes end at clean boundaries, at most 64 KiB (its per-write stack arrays);
//   - a CSI with more than 16 parameters is replaced by CAN + the same sequence with its first
//     16 (an SGR is split into several whole SGRs); libvterm 0.1.4 writes past its array;
//   - REP of a zero-width glyph is dropped (endless loop), REP of a wide glyph that would end
//     past the last column is shortened (null dereference), REP of a glyph wider than its row
//     is dropped (it would lose marks the mirror joined);
//   - UTF-8 encoded U+0080-U+009F are dropped (width -1: the cursor leaves the screen and the
//     next erase dereferences a null cell); values past U+10FFFF become U+FFFD; an unfinished
//     UTF-8 sequence cut by a control is dropped;
//   - after a cursor restore (DECRC) to a position a resize left off-screen, a no-op CSI makes
//     libvterm clamp the cursor (ED 1 there writes past its line-info array);
//   - the size is at least 2 columns (a wide character at one column writes past the row).
#include "engine/term/mirror_screen.hpp"
#include "engine/term/grid_fast_path.hpp"
#include "engine/term/screen_grid.hpp"
#include "engine/term/utf8.hpp"
#include "engine/term/zero_width.hpp"

#include <vterm.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <optional>
#include <string>

namespace backscroll::term {
namespace {

constexpr std::size_t kNpos = static_cast<std::size_t>(-1);
constexpr std::size_t kFlushThreshold = 32 * 1024;

Color from_vterm(const VTermColor& c, bool is_fg) {
  if (is_fg ? VTERM_COLOR_IS_DEFAULT_FG(&c) : VTERM_COLOR_IS_DEFAULT_BG(&c)) return Color{};
  if (VTERM_COLOR_IS_INDEXED(&c)) return Color::indexed(c.indexed.idx);
  return Color::rgb(c.rgb.red, c.rgb.green, c.rgb.blue);
}

GridRect to_grid(const VTermRect& r) {
  return GridRect{r.start_row, r.end_row, r.start_col, r.end_col};
}
LineAttrs to_line_attrs(const VTermLineInfo& i) {
  return LineAttrs{i.doublewidth != 0, static_cast<int>(i.doubleheight)};
}

}  // namespace

struct MirrorScreen::Impl final : ScreenGrid::LineAttrsSource {
  VTerm* vt = nullptr;
  VTermState* state = nullptr;
  VTermStateCallbacks callbacks{};
  std::optional<ScreenGrid> grid;
  // A one-row terminal that answers glyph_width().
  VTerm* probe = nullptr;

  ~Impl() {
    if (vt) vterm_free(vt);
    if (probe) vterm_free(probe);
  }

  LineAttrs line_attrs(int row) const override {
    return to_line_attrs(*vterm_state_get_lineinfo(state, row));
  }

  int row_width(int row) const {
    int rows = 0, cols = 0;
    vterm_get_size(vt, &rows, &cols);
    if (row < 0 || row >= rows) return cols;
    return vterm_state_get_lineinfo(state, row)->doublewidth ? cols / 2 : cols;
  }
};

// The state layer's callbacks, with MirrorScreen* as user data: the grid's share first (what
// screen.c's state_cbs do), then the mirror's own bookkeeping.
struct MirrorScreenCallbacks {
  static MirrorScreen& of(void* user) { return *static_cast<MirrorScreen*>(user); }
  static ScreenGrid& grid(void* user) { return *of(user).grid_; }

  static int putglyph(VTermGlyphInfo* info, VTermPos pos, void* user) {
    MirrorScreen& m = of(user);
    if (m.muted_) return 1;
    if (!m.grid_->put_glyph(pos.row, pos.col, info->chars, info->width, info->protected_cell != 0,
                            LineAttrs{info->dwl != 0, static_cast<int>(info->dhl)}))
      return 0;
    // The last glyph of a text write (screen.c reports it as the write's last damage).
    m.last_glyph_row_ = pos.row;
    m.last_glyph_col_ = pos.col;
    m.last_glyph_width_ = info->width;
    m.glyph_damaged_ = true;
    return 1;
  }
  static int movecursor(VTermPos, VTermPos, int, void* user) {
    if (of(user).muted_) return 1;
    of(user).pending_wrap_ = false;
    return 1;
  }
  static int scrollrect(VTermRect rect, int downward, int rightward, void* user) {
    grid(user).scroll_rect(to_grid(rect), downward, rightward);
    return 1;
  }
  static int erase(VTermRect rect, int selective, void* user) {
    MirrorScreen& m = of(user);
    if (m.keep_cursor_row_) {
      // ED 0's first erase is the cursor's row from its column (state.c): dropped.
      m.keep_cursor_row_ = false;
      if (rect.end_row == rect.start_row + 1) return 1;
    }
    grid(user).erase(to_grid(rect), selective != 0);
    return 1;
  }
  static int setpenattr(VTermAttr attr, VTermValue* val, void* user) {
    GridPen& pen = grid(user).pen();
    auto flag = [&](std::uint32_t bit) {
      pen.attrs = val->boolean ? pen.attrs | bit : pen.attrs & ~bit;
    };
    auto field = [&](int shift, unsigned mask) {
      pen.attrs = (pen.attrs & ~(mask << shift)) | (static_cast<unsigned>(val->number) & mask)
                                                       << shift;
    };
    switch (attr) {
      case VTERM_ATTR_BOLD: flag(attr::kBold); break;
      case VTERM_ATTR_UNDERLINE: field(attr::kUnderlineShift, 3u); break;
      case VTERM_ATTR_ITALIC: flag(attr::kItalic); break;
      case VTERM_ATTR_BLINK: flag(attr::kBlink); break;
      case VTERM_ATTR_REVERSE: flag(attr::kReverse); break;
      case VTERM_ATTR_STRIKE: flag(attr::kStrike); break;
      case VTERM_ATTR_FONT: field(attr::kFontShift, 0xfu); break;
      case VTERM_ATTR_FOREGROUND: pen.fg = pack_color(from_vterm(val->color, true)); break;
      case VTERM_ATTR_BACKGROUND: pen.bg = pack_color(from_vterm(val->color, false)); break;
      default: return 0;
    }
    return 1;
  }
  static int settermprop(VTermProp prop, VTermValue* val, void* user) {
    MirrorScreen& m = of(user);
    switch (prop) {
      case VTERM_PROP_CURSORVISIBLE: m.cursor_visible_ = val->boolean; break;
      case VTERM_PROP_CURSORBLINK: m.cursor_blink_ = val->boolean; break;
      case VTERM_PROP_CURSORSHAPE: m.cursor_shape_ = val->number; break;
      case VTERM_PROP_ALTSCREEN: grid(user).set_alt_screen(val->boolean); break;
      case VTERM_PROP_REVERSE: grid(user).set_reverse_video(val->boolean); break;
      case VTERM_PROP_TITLE:
        m.title_ = MirrorScreen::sanitize_title(val->string ? val->string : "");
        break;
      default: break;
    }
    return 1;
  }
  static int resize(int rows, int cols, VTermPos* delta, void* user) {
    VTermPos cursor;
    vterm_state_get_cursorpos(of(user).impl_->state, &cursor);
    delta->row += grid(user).resize(rows, cols, cursor.row);
    return 1;
  }
  static int setlineinfo(int row, const VTermLineInfo* now, const VTermLineInfo* before,
                         void* user) {
    grid(user).set_line_attrs(row, to_line_attrs(*now), to_line_attrs(*before));
    return 1;
  }
  static void output(const char*, std::size_t len, void* user) {
    of(user).dropped_reply_bytes_ += len;
  }
};

// ---------------------------------------------------------------------------------------------
// Feeder: MirrorInput's sink for one buffer; decides where each vterm_input_write ends.

class MirrorScreen::Feeder final : public MirrorInput::Sink {
 public:
  Feeder(MirrorScreen& m, std::span<const unsigned char> buf) : m_(m), buf_(buf) {
    m.gl_table_from_.assign(1, {0, m.input_.gl_table()});
  }

  std::size_t fed() const { return fed_; }

  // Feeds buf[fed_, x): ends a write at the last text run before x, so the text's effect on
  // the cursor can be read, and at x.
  void flush(std::size_t x) {
    if (text_end_ != kNpos && text_end_ <= fed_) text_end_ = kNpos;
    if (x <= fed_) return;
    if (text_end_ != kNpos && text_end_ <= x) {
      write_text(text_start_, text_end_);
      m_.after_text_write(text_autowrap_);
      text_end_ = kNpos;
    }
    if (text_open_ && text_open_from_ < x) {
      write_text(text_open_from_, x);
      m_.after_text_write(m_.input_.autowrap());
    } else {
      write_range(fed_, x);
    }
    if (clear_at_ != kNpos && clear_at_ <= x) {  // after the last text written
      m_.pending_wrap_ = false;
      clear_at_ = clear_last_ > x ? clear_last_ : kNpos;
    }
  }

  void text_begin(std::size_t at) override {
    note_gl_table(at);
    // Only DEL between the run that ended and this one: the glyph being printed goes on (DEL
    // is ignored), so marks that start this run join the last glyph of that one. join_marks()
    // reads it and its pending wrap from the write that ends the run: write it now, or the
    // next flush writes both runs in one write and reads only this one's.
    if (text_end_ != kNpos && text_end_ > fed_ && at > 0 && buf_[at - 1] == 0x7f) flush(at);
    text_open_ = true;
    text_open_from_ = at;
  }
  void text_end(std::size_t end) override {
    text_open_ = false;
    text_start_ = text_open_from_;
    text_end_ = end;
    text_autowrap_ = m_.input_.autowrap();
  }
  void drop_text(std::size_t at, std::size_t len) override {
    flush(at);
    fed_ = std::max(fed_, at + len);
    ++m_.rewritten_;
  }
  void replace_text(std::size_t at, std::size_t len) override {
    flush(at);
    m_.write("\xef\xbf\xbd", 3);
    // The replacement is the last glyph for now (a flush at fed_ writes nothing and reads no
    // damage): its pending wrap and REP glyph count even if the run prints nothing after it.
    m_.after_text_write(m_.input_.autowrap());
    fed_ = at + len;
    ++m_.rewritten_;
  }
  void cluster_overflow(std::size_t at, std::size_t len, char32_t c) override {
    flush(at);  // libvterm has the glyph's first six characters
    // Where libvterm did not join the characters before (a lone mark it printed after the
    // row's end), it reads this one too, as before: the bytes go with the next flush.
    if (!m_.extend_last_glyph(c)) return;
    fed_ = std::max(fed_, at + len);
    ++m_.rewritten_;
  }
  bool lone_zero_width(std::size_t at, std::size_t len, char32_t c) override {
    flush(at);
    fed_ = std::max(fed_, at + len);
    ++m_.rewritten_;
    // At a pending wrap xterm.js's cursor is one past the last column: the character lands
    // nowhere and the wrap stays pending.
    if (m_.pending_wrap_) return false;
    // A space takes the column in libvterm (the pen, a wide glyph's half, the pending wrap at
    // the row's end: as any narrow character), then the cell gets `c`. In insert mode it
    // overwrites: xterm.js inserts as many cells as the character is wide (none).
    m_.glyph_damaged_ = false;
    if (m_.input_.insert()) m_.write("\x1b[4l \x1b[4h", 9);
    else m_.write(" ", 1);
    const bool printed = m_.glyph_damaged_;  // read as the last glyph by after_text_write()
    m_.after_text_write(m_.input_.autowrap());
    if (printed) m_.replace_last_glyph(c);
    return true;
  }
  void csi_overflow(std::size_t at) override {
    flush(at);
    m_.skipping_csi_ = true;
  }
  void csi_abort(std::size_t at) override {
    // Invariant: libvterm is never left inside the truncated copy of an overflowed CSI. It
    // has not seen the skipped bytes, so for it the byte that ended the CSI (a digit after an
    // intermediate, say) may continue the sequence: with "CSI ;x17 # 9 9 b" it would run
    // "CSI ;x16 9 9 b", a REP the guards below never saw.
    m_.skipping_csi_ = false;
    m_.write("\x18", 1);
    fed_ = at;
  }

  void csi(const MirrorInput::Csi& c, std::span<const std::uint32_t> all_args,
           std::size_t final_at) override {
    enum class Event {
      none,
      clear,
      rep,
      alt_enter,
      save,
      restore,
      autowrap,
      clear_history,
      erase_right,
      bounds
    };
    Event ev = Event::none;
    const std::uint32_t mode = c.argcount > 0 ? (c.args[0] & ~MirrorInput::kArgMore) : 0;
    if ((c.final == 'K' || c.final == 'J') && (c.plain() || c.dec_private()) && c.arg(0, 0) == 0) {
      ev = Event::erase_right;  // EL 0, ED 0 and their selective forms DECSEL, DECSED
    } else if (c.plain()) {
      if (c.final == 'b') ev = Event::rep;
      else if (c.final == 'J' && c.arg(0, 0) == 3) ev = Event::clear_history;
      else if (std::strchr("ABCDEFGH`adefjk", c.final) != nullptr) ev = Event::clear;
      else if (c.final == 'r' || c.final == 's') ev = Event::bounds;  // DECSTBM, DECSLRM
    } else if (c.dec_private() && c.arg(0, MirrorInput::kArgMissing) != MirrorInput::kArgMissing) {
      if (c.final == 'h' && (mode == 1047 || mode == 1049)) ev = Event::alt_enter;
      else if (c.final == 'h' && mode == 1048) ev = Event::save;
      else if (c.final == 'l' && (mode == 1048 || mode == 1049)) ev = Event::restore;
      else if ((c.final == 'h' || c.final == 'l') && mode == 7) ev = Event::autowrap;
      else if ((c.final == 'h' || c.final == 'l') && (mode == 6 || mode == 69)) ev = Event::bounds;
    }

    if (c.final == 'm' && c.plain()) {
      sgr(c, all_args, final_at);
      return;
    }
    if (!c.overflowed) {
      if (ev == Event::none) return;  // fed with the next flush
      if (ev == Event::clear) {
        // libvterm drops the pending wrap even if the cursor stays.
        if (clear_at_ == kNpos) clear_at_ = final_at + 1;
        clear_last_ = final_at + 1;
        return;
      }
      flush(final_at);  // everything but the final byte
    } else {
      // libvterm has the sequence up to its 16th argument: cancel that and feed a safe copy.
      m_.skipping_csi_ = false;
      ++m_.rewritten_;
      if (!c.controls_after_overflow.empty())
        m_.write(c.controls_after_overflow.data(), c.controls_after_overflow.size());
      m_.write("\x18", 1);
      const std::string seq = MirrorInput::encode(c);
      m_.write(seq.data(), seq.size() - 1);
      fed_ = final_at;
      if (ev == Event::none || ev == Event::clear) {
        flush(final_at + 1);
        if (ev == Event::clear) m_.pending_wrap_ = false;
        return;
      }
    }

    switch (ev) {
      // The saved cursor is read before the final byte: libvterm saves the position and then,
      // at the end of every CSI, clamps the cursor into the scroll region in origin mode (a
      // cursor outside it, after a DECRC, is saved where it was and then moved).
      case Event::alt_enter:
        if (mode == 1049) m_.capture_saved();
        flush(final_at + 1);
        break;
      case Event::save:
        m_.capture_saved();
        flush(final_at + 1);
        break;
      case Event::restore:
        flush(final_at + 1);
        m_.clamp_cursor_after_restore();
        m_.restore_pen_extras();
        break;
      case Event::rep: rep(c, final_at); break;
      case Event::autowrap:
        flush(final_at + 1);
        m_.vt_autowrap_ = c.final == 'h';
        break;
      case Event::bounds:
        // The tokenizer has this sequence's region, margins or DECOM (and may read on past
        // more before the text written next): libvterm has them once it is written.
        flush(final_at + 1);
        m_.vt_bounds_ = m_.input_.cursor_bounds();
        break;
      case Event::erase_right:
        // At a pending wrap xterm.js's cursor is one past the last column, and EL 0 / ED 0
        // erase from there: nothing of the cursor's row (VTE and kitty agree; xterm and
        // libvterm erase the last column). The wrap stays pending in both. An EL is cancelled
        // (the tap's libvterm sees the same CAN); an ED still erases the rows below.
        if (!m_.pending_wrap_) break;  // fed with the next flush
        ++m_.rewritten_;
        if (c.final == 'K' || m_.cursor().row + 1 >= m_.rows_) {
          m_.write("\x18", 1);
          fed_ = final_at + 1;
        } else {
          m_.keep_cursor_row_ = true;
          flush(final_at + 1);
          m_.keep_cursor_row_ = false;
          if (m_.tap_) m_.tap_->departed();
        }
        break;
      case Event::clear_history:
        // xterm and xterm.js empty the history (libvterm 0.1.4 has no sb_clear): lines pushed
        // before it are gone for every later snapshot; the screen stays.
        flush(final_at + 1);
        m_.scrollback_.erase_lines();
        if (m_.tap_) m_.tap_->history_cleared();
        break;
      default: break;
    }
  }

  void esc(const MirrorInput::Esc& e, std::size_t final_at) override {
    if (e.intermed_len != 0) return;
    if (e.final == 'c') {  // RIS
      flush(final_at + 1);
      m_.vt_autowrap_ = true;
      m_.vt_bounds_ = m_.input_.cursor_bounds();
      m_.set_pen_extras(0);
    } else if (e.final == '7') {
      flush(final_at + 1);
      m_.capture_saved();
    } else if (e.final == '8') {
      flush(final_at + 1);
      m_.clamp_cursor_after_restore();
      m_.restore_pen_extras();
    }
  }

  void split_point(std::size_t at, bool) override {
    note_gl_table(at);
    if (!m_.skipping_csi_ && at >= fed_ + kFlushThreshold) flush(at);
  }

  void decoder_switch(std::size_t at) override { flush(at); }

 private:
  // SGR: written as it is, or rewritten where libvterm would misread it (a colour form it
  // reads otherwise than xterm.js, or more than 16 arguments); then the pen attributes the
  // mirror keeps itself, applied from the byte after it.
  void sgr(const MirrorInput::Csi& c, std::span<const std::uint32_t> all_args,
           std::size_t final_at) {
    const std::span<const std::uint32_t> args =
        c.overflowed
            ? all_args
            : std::span<const std::uint32_t>(c.args.data(), static_cast<std::size_t>(c.argcount));
    const std::uint32_t extras = MirrorInput::sgr_extras(m_.pen_extras_, args);
    if (c.overflowed) {
      // libvterm has the sequence up to its 16th argument: cancel that and feed a safe copy.
      m_.skipping_csi_ = false;
      if (!c.controls_after_overflow.empty())
        m_.write(c.controls_after_overflow.data(), c.controls_after_overflow.size());
    } else if (MirrorInput::sgr_needs_rewrite(args)) {
      flush(final_at);  // libvterm would misread a colour: CAN cancels its copy
    } else {
      if (extras != m_.pen_extras_) {  // they apply from the byte after it
        flush(final_at + 1);
        m_.set_pen_extras(extras);
      }
      return;  // otherwise fed with the next flush
    }
    m_.write("\x18", 1);
    const std::string rewritten = MirrorInput::encode_sgr(c, args);
    m_.write(rewritten.data(), rewritten.size());
    fed_ = final_at + 1;
    ++m_.rewritten_;
    if (extras != m_.pen_extras_) m_.set_pen_extras(extras);
  }

  // REP (CSI n b) repeats the last glyph libvterm printed, from the cursor to at most the end
  // of the row (state.c). Guarded against the two inputs that break libvterm 0.1.4.
  void rep(const MirrorInput::Csi& c, std::size_t final_at) {
    VTermPos pos;
    vterm_state_get_cursorpos(m_.impl_->state, &pos);
    const int row_width = m_.impl_->row_width(pos.row);
    const int w = m_.combine_width_;
    std::uint32_t count = c.arg(0, 1);
    if (count == 0) count = 1;
    std::int64_t target = std::min<std::int64_t>(std::int64_t{pos.col} + count, row_width);
    bool rewrite = false;
    // Zero width: an endless loop in libvterm. Wider than the row (a wide glyph on a
    // double-width line of a 2- or 3-column mirror): libvterm would print it over its own
    // cell again, without the marks join_marks() may have given the mirror's. Dropped.
    if (w <= 0 || w > row_width) {
      m_.write("\x18", 1);
      fed_ = final_at + 1;
      ++m_.rewritten_;
      return;
    }
    if (w == 2) {
      const int last = m_.cols_ - 1;
      if (last >= pos.col && (last - pos.col) % 2 == 0 && target > last) {
        // A wide glyph at the last column writes past the row: stop one column earlier.
        target = last;
        rewrite = true;
      }
    }
    if (target <= pos.col) {
      m_.write("\x18", 1);
      fed_ = final_at + 1;
      ++m_.rewritten_;
      return;
    }
    if (rewrite) {
      const std::string seq = "\x18\x1b[" + std::to_string(target - pos.col) + "b";
      m_.write(seq.data(), seq.size());
      fed_ = final_at + 1;
      ++m_.rewritten_;
    } else {
      flush(final_at + 1);
    }
    const std::int64_t steps = (target - pos.col + w - 1) / w;
    const std::int64_t end_col = pos.col + steps * w;
    // libvterm sets the wrap when the copies reach the row's end with autowrap on, and leaves
    // it as it was with autowrap off: a wrap pending from before DECAWM was reset stays
    // pending (the next glyph still wraps; found by the mirror fuzzer, 2026-12-07).
    if (m_.input_.autowrap()) m_.pending_wrap_ = end_col + w >= row_width;
    if (m_.rep_lacks_marks_ && m_.last_glyph_) {
      // libvterm repeated the glyph without the marks the grid joined to it in place; fed in
      // one write with them, it would have joined them and repeated them too. The copies get
      // them, as the glyph has them.
      const LastGlyph& g = *m_.last_glyph_;
      const std::u32string_view chars(g.chars.data(), static_cast<std::size_t>(g.nchars));
      for (std::int64_t col = pos.col; col < end_col; col += w)
        m_.grid_->set_chars(pos.row, static_cast<int>(col), chars);
      if (m_.tap_) m_.tap_->departed();
    }
  }

  // Writes buf[fed_, end), where a text run starts at `start`. Invariant: after_text_write()
  // reads the last damage as the last glyph the run printed, so damage from before the run
  // (an erase, a scroll, a resize or the reset of a new screen) must not count: the write is
  // split where the run starts (a clean boundary) and the damage flag cleared there. A run that
  // prints nothing (only dropped bytes) leaves the pending wrap and the last glyph as they
  // were. Part of a run written before (a U+FFFD replacement) keeps its damage.
  // A clear of the wrap (a cursor-motion CSI) before the run applies first: the run decides the
  // wrap again only if it prints a glyph.
  void write_text(std::size_t start, std::size_t end) {
    if (start >= fed_) {
      write_range(fed_, start);
      if (clear_at_ != kNpos && clear_at_ <= start) {
        m_.pending_wrap_ = false;
        clear_at_ = clear_last_ > start ? clear_last_ : kNpos;
      }
      m_.glyph_damaged_ = false;
    }
    write_range(fed_, end);
  }

  // Writes buf[a, b) in pieces of at most kMaxWrite, never splitting a UTF-8 character when
  // it can avoid it. A piece that starts with combining marks goes through join_marks() first.
  void write_range(std::size_t a, std::size_t b) {
    while (a < b) {
      // DELs that start the range, before marks: written on their own first (libvterm ignores
      // them, and the glyph being printed stays open, MirrorScreen::write), so that the marks
      // start a write and join it as marks right after it do. At a feed's start, where no run
      // of this buffer ended before them (text_begin()), and in a range of any other split.
      std::size_t marks = a;
      while (marks < b && buf_[marks] == 0x7f) ++marks;
      if (marks > a && marks < b && m_.starts_with_mark(buf_.subspan(marks, b - marks))) {
        m_.write(reinterpret_cast<const char*>(buf_.data() + a), marks - a);
        a = marks;
      }
      a += m_.join_marks(buf_.subspan(a, b - a), gl_table_at(a));
      if (a == b) break;
      std::size_t end = b;
      if (end - a > kMaxWrite) {
        end = a + kMaxWrite;
        for (int back = 0; back < 6 && end > a + 1 && (buf_[end] & 0xc0) == 0x80; ++back) --end;
        // Nor before a combining mark: join_marks() reads the last glyph and pending wrap,
        // which only the end of a flush updates (unless the marks run for 32 KiB).
        while (end > a + kMaxWrite / 2 && m_.starts_with_mark(buf_.subspan(end))) {
          do --end;
          while ((buf_[end] & 0xc0) == 0x80 && end > a + 1);
        }
      }
      m_.write(reinterpret_cast<const char*>(buf_.data() + a), end - a);
      a = end;
    }
    fed_ = std::max(fed_, b);
  }

  // Whether GL holds a table, from each position on. MirrorInput reads ahead of the writes
  // (a run is written when a later byte ends it), so by the time join_marks() looks, a later
  // designation or shift may have changed the input's current state. Every designation and
  // shift is followed by a split point (ground state) before any text: noted there.
  void note_gl_table(std::size_t at) {
    const bool table = m_.input_.gl_table();
    auto& from = m_.gl_table_from_;
    if (from.back().second != table) from.emplace_back(at, table);
  }
  bool gl_table_at(std::size_t at) const {
    const auto& from = m_.gl_table_from_;
    for (auto it = from.rbegin(); it != from.rend(); ++it) {
      if (it->first <= at) return it->second;
    }
    return from.front().second;
  }

  MirrorScreen& m_;
  std::span<const unsigned char> buf_;
  std::size_t fed_ = 0;
  bool text_open_ = false;
  std::size_t text_open_from_ = 0;
  std::size_t text_start_ = 0;  // where the run that ends at text_end_ started
  std::size_t text_end_ = kNpos;
  bool text_autowrap_ = true;
  std::size_t clear_at_ = kNpos;  // the first wrap clear not applied yet (after its CSI)
  std::size_t clear_last_ = 0;    // the last one
};

// ---------------------------------------------------------------------------------------------

MirrorScreen::MirrorScreen(int cols, int rows, ScrollbackLimits limits)
    : cols_(std::clamp(cols, kMinCols, kMaxCols)),
      rows_(std::clamp(rows, 1, kMaxRows)),
      size_clamped_(cols_ != cols || rows_ != rows),
      scrollback_(limits) {
  create();
}

MirrorScreen::~MirrorScreen() = default;

// libvterm's parser and state layer, with the grid in place of its screen layer: the same
// set-up as vterm_obtain_screen() + vterm_screen_enable_altscreen() + vterm_screen_reset(1).
void MirrorScreen::create() {
  impl_ = std::make_unique<Impl>();
  Impl& im = *impl_;
  im.vt = vterm_new(rows_, cols_);
  vterm_set_utf8(im.vt, 1);
  vterm_output_set_callback(im.vt, &MirrorScreenCallbacks::output, this);
  im.state = vterm_obtain_state(im.vt);
  grid_ = &im.grid.emplace(rows_, cols_, scrollback_, im);
  im.callbacks.putglyph = &MirrorScreenCallbacks::putglyph;
  im.callbacks.movecursor = &MirrorScreenCallbacks::movecursor;
  im.callbacks.scrollrect = &MirrorScreenCallbacks::scrollrect;
  im.callbacks.erase = &MirrorScreenCallbacks::erase;
  im.callbacks.setpenattr = &MirrorScreenCallbacks::setpenattr;
  im.callbacks.settermprop = &MirrorScreenCallbacks::settermprop;
  im.callbacks.resize = &MirrorScreenCallbacks::resize;
  im.callbacks.setlineinfo = &MirrorScreenCallbacks::setlineinfo;
  vterm_state_set_callbacks(im.state, &im.callbacks, this);
  vterm_state_reset(im.state, 1);
  input_ = MirrorInput{};
  input_.set_size(cols_, rows_);
  vt_bounds_ = input_.cursor_bounds();
  if (tap_) tap_->created(cols_, rows_);
}

void MirrorScreen::set_tap(VtermTap* tap) {
  tap_ = tap;
  if (tap_) tap_->created(cols_, rows_);
}

void MirrorScreen::vt_write(const char* bytes, std::size_t len) {
  vterm_input_write(impl_->vt, bytes, len);
  if (tap_) tap_->wrote(std::string_view(bytes, len));
}

void MirrorScreen::reset() {
  impl_.reset();
  scrollback_.clear();
  cursor_visible_ = true;
  cursor_blink_ = true;
  cursor_shape_ = 1;
  pending_wrap_ = false;
  wrap_unknown_ = false;
  vt_autowrap_ = true;
  text_last_ = false;
  pen_extras_ = 0;
  combine_width_ = 0;
  last_glyph_.reset();
  rep_lacks_marks_ = false;
  glyph_damaged_ = false;
  saved_.reset();
  unmodelled_ = 0;
  title_.clear();
  carry_.clear();
  pending_bytes_ = 0;
  skipping_csi_ = false;
  vt_state_ = VtState::ground;
  create();
}

// Every byte reaches libvterm here. Invariant: libvterm never sees a byte between the ESC and
// the backslash of a string terminator. libvterm 0.1.4 ends an OSC or DCS at ESC \ even with C0
// controls, NUL or DEL between the two (it executes or ignores them), and then copies the string
// with as many bytes more than the write holds (strncpy past its end: a read of up to the whole
// run of them, e.g. ESC ] 2 ; t ESC, 100 KiB of SO, \). So an ESC inside a string that such a
// byte follows (or that ends the write) is held until the next byte that is not one: the
// controls go first (they act the same inside the string), NUL and DEL are dropped (ignored
// anyway), and the ESC follows, in one write with the byte after it (a control anywhere in a
// string whose ESC and backslash arrive in two writes does the same). Otherwise the write is not
// split (libvterm keeps only the last write of a split string). A small tracker of libvterm's
// parser (ground, escape, CSI, string) finds the strings.
void MirrorScreen::write(const char* bytes, std::size_t len) {
  if (len == 0) return;
  std::size_t from = 0;         // start of the bytes not written yet
  bool ground_tail = false;     // the bytes since the last sequence ended are all in ground state
  std::size_t ground_from = 0;  // where they start
  auto pass = [&](std::size_t to) {
    if (to > from) vt_write(bytes + from, to - from);
    from = to;
  };
  auto escape_byte = [&](unsigned char c) {  // c after an ESC
    if (c == '[') vt_state_ = VtState::csi;
    else if (c == ']' || c == 'P') vt_state_ = VtState::string;
    else if (c == 0x18 || c == 0x1a || (c >= 0x30 && c <= 0x7e)) vt_state_ = VtState::ground;
    else vt_state_ = VtState::escape;  // ESC, intermediates, C0, bytes >= 0x80
  };
  for (std::size_t i = 0; i < len; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    switch (vt_state_) {
      case VtState::ground:
        if (!ground_tail) ground_from = i;
        ground_tail = c != 0x1b;
        if (c == 0x1b) {
          vt_state_ = VtState::escape;
        } else {  // only an ESC leaves the ground state: skip to the next one
          const void* esc = std::memchr(bytes + i + 1, 0x1b, len - i - 1);
          i = esc ? static_cast<std::size_t>(static_cast<const char*>(esc) - bytes) - 1 : len;
        }
        break;
      case VtState::escape:
        ground_tail = false;
        escape_byte(c);
        break;
      case VtState::csi:
      case VtState::csi_args:
      case VtState::csi_intermed:
        // parser.c: leader bytes, then arguments, then intermediates, then the final byte; a
        // byte out of that order ends the sequence unfinished (the bytes after it are text).
        // C0 controls act inside it; DEL is ignored.
        if (c == 0x1b) {
          vt_state_ = VtState::escape;
        } else if (c == 0x18 || c == 0x1a) {
          vt_state_ = VtState::ground;
        } else if (c >= 0x20 && c != 0x7f) {
          if (vt_state_ == VtState::csi && c >= 0x3c && c <= 0x3f) break;
          if (vt_state_ != VtState::csi_intermed &&
              ((c >= '0' && c <= '9') || c == ':' || c == ';')) {
            vt_state_ = VtState::csi_args;
          } else if (c >= 0x20 && c <= 0x2f) {
            vt_state_ = VtState::csi_intermed;
          } else {
            vt_state_ = VtState::ground;  // the final byte, or an invalid one
          }
        }
        break;
      case VtState::string:
        if (c == 0x1b) {
          const auto next = i + 1 < len ? static_cast<unsigned char>(bytes[i + 1]) : 0x00;
          if (next == 0x7f || (next < 0x20 && next != 0x1b && next != 0x18 && next != 0x1a)) {
            pass(i);
            from = i + 1;
            vt_state_ = VtState::string_esc_held;
          } else {
            vt_state_ = VtState::string_esc;
          }
        } else if (c == 0x07 || c == 0x18 || c == 0x1a) {
          vt_state_ = VtState::ground;
        }
        break;
      case VtState::string_esc:  // the byte after the ESC is not a control
        if (c == '\\') vt_state_ = VtState::ground;
        else escape_byte(c);  // the string is abandoned: ESC c is an escape sequence
        break;
      case VtState::string_esc_held:
        if (c == 0x00 || c == 0x7f) {  // ignored by libvterm: dropped
          pass(i);
          from = i + 1;
        } else if (c < 0x20 && c != 0x1b && c != 0x18 && c != 0x1a) {
          // executed now, before the held ESC
        } else {
          pass(i);
          if (c == 0x18 || c == 0x1a) {
            vt_state_ = VtState::ground;  // cancels the string; the ESC is not needed
          } else {
            // The ESC and the byte after it in one write: libvterm also misreads a string
            // whose ESC and backslash arrive in two writes after a control in the string.
            const char pair[2] = {'\x1b', static_cast<char>(c)};
            vt_write(pair, 2);
            from = i + 1;
            if (c == '\\') vt_state_ = VtState::ground;
            else escape_byte(c);
          }
        }
        break;
    }
  }
  pass(len);
  // The states other than ground and escape end only at a sequence's last byte, which is not
  // text: ground_tail is false after any of them unless ground bytes followed.
  // DEL is ignored everywhere (libvterm, xterm.js): it neither ends the text before it nor is
  // text. A write of only DELs leaves text_last_ as it was.
  std::size_t end = len;
  while (end > 0 && static_cast<unsigned char>(bytes[end - 1]) == 0x7f) --end;
  if (end == 0) return;
  const auto last = static_cast<unsigned char>(bytes[end - 1]);
  text_last_ = vt_state_ == VtState::ground && ground_tail && end > ground_from && last >= 0x20;
}

void MirrorScreen::feed(std::span<const std::byte> bytes) {
  std::span<const unsigned char> buf(reinterpret_cast<const unsigned char*>(bytes.data()),
                                     bytes.size());
  // Invariant: the fast path starts only where libvterm would start a write (ground state,
  // nothing held) and libvterm is up to date after it, so libvterm takes over anywhere.
  // Between fast runs libvterm gets what libvterm_share() says.
  while (!buf.empty()) {
    if (fast_path_on_ && fast_path_modes() && fast_path_ready()) {
      if (const std::size_t taken = feed_fast(buf); taken > 0) {
        buf = buf.subspan(taken);
        continue;  // it may have stopped only to bring libvterm up to date
      }
    }
    const std::size_t next =
        libvterm_share(std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
    feed_libvterm(buf.first(next));
    buf = buf.subspan(next);
  }
}

std::size_t MirrorScreen::libvterm_share(std::string_view bytes) const {
  // The next ESC (the next token that may be one of the fast path's, or one that ends a mode
  // that rules it out for a moment), or all of them once a mode rules it out for longer. Until
  // 2026-12-07 every mode did: a box ncurses drew in DEC graphics handed libvterm the rest of
  // the feed (13% of a Python curses monitor went to libvterm that way, 4 ms/MB).
  if (!fast_path_on_ || !fast_path_lasting_modes()) return bytes.size();
  if (fast_path_modes()) return between_fast_runs(bytes);
  // Only GL's table or insert mode rules it out: up to the next ESC, which may end them.
  if (bytes.size() < 2) return bytes.size();
  const void* esc = std::memchr(bytes.data() + 1, 0x1b, bytes.size() - 1);
  return esc ? static_cast<std::size_t>(static_cast<const char*>(esc) - bytes.data())
             : bytes.size();
}

std::size_t MirrorScreen::between_fast_runs(std::string_view bytes) {
  // Up to the next ESC, or through the end of the line: text the fast path stopped in (wide
  // characters, marks) rarely goes on for more than a line. libvterm reads the text after a
  // control as a new piece of text within a write too, so a write that ends with the LF reads
  // the same. Searched in growing windows, so a stretch costs about its own length however
  // much follows it (a search of the whole rest per stretch would be quadratic).
  const char* const b = bytes.data();
  for (std::size_t window = 256;; window *= 4) {
    const std::size_t limit = std::min(window, bytes.size());
    const void* esc = limit > 1 ? std::memchr(b + 1, 0x1b, limit - 1) : nullptr;
    const std::size_t end =
        esc ? static_cast<std::size_t>(static_cast<const char*>(esc) - b) : limit;
    if (const void* lf = std::memchr(b, '\n', end))
      return static_cast<std::size_t>(static_cast<const char*>(lf) - b) + 1;
    if (esc != nullptr || limit == bytes.size()) return end;
  }
}

void MirrorScreen::feed_fast_only(std::span<const std::byte> bytes, FastRun& run) {
  run.bytes = 0;
  run.settings.clear();
  run.text = false;
  run.restored_cursor = false;
  std::span<const unsigned char> buf(reinterpret_cast<const unsigned char*>(bytes.data()),
                                     bytes.size());
  if (!fast_path_on_) return;
  // A run may stop only to bring libvterm up to date: the next one goes on from there.
  while (!buf.empty() && fast_path_modes() && fast_path_ready()) {
    const std::size_t taken = feed_fast(buf, &run);
    if (taken == 0) break;
    run.bytes += taken;
    buf = buf.subspan(taken);
  }
}

bool MirrorScreen::fast_path_modes() const {
  const char gl = input_.designation(input_.gl_set());
  return fast_path_lasting_modes() && !input_.insert() && (gl == 'u' || gl == 'B');
}

bool MirrorScreen::fast_path_lasting_modes() const {
  constexpr std::uint32_t kRuledOut = MirrorInput::kLineSize | MirrorInput::kProtectedCells |
                                      MirrorInput::kMargins | MirrorInput::kNewlineMode |
                                      MirrorInput::kCharsets;
  return !input_.origin() && (unmodelled() & kRuledOut) == 0;
}

bool MirrorScreen::fast_path_ready() const {
  // A waiting single shift: libvterm decodes the next character by G2 / G3, in a piece of its
  // own (MirrorInput::Sink::decoder_switch), which the fast path does not model.
  return carry_.empty() && pending_bytes_ == 0 && !skipping_csi_ && vt_state_ == VtState::ground &&
         input_.clean() && !input_.single_shift();
}

// libvterm is brought to where the fast run left the terminal, with the grid left alone
// (muted_): the run's last glyph printed again in its cell with its marks (libvterm's cursor,
// pending wrap and the glyph REP repeats and marks join, exactly as printing it the first time
// left them), the cursor put where the run left it, and the run's SGRs since its last reset.
std::size_t MirrorScreen::feed_fast(std::span<const unsigned char> buf, FastRun* run) {
  VTermPos pos;
  vterm_state_get_cursorpos(impl_->state, &pos);
  GridFastPath::State s;
  s.rows = rows_;
  s.cols = cols_;
  s.region_top = input_.region_top();
  s.region_bottom = input_.region_bottom();
  s.autowrap = input_.autowrap();
  s.gl_utf8 = input_.designation(input_.gl_set()) == 'u';
  s.g0_ascii = input_.designation(0) == 'B';
  s.default_tabs = (input_.unmodelled() & MirrorInput::kTabStops) == 0;
  s.row = pos.row;
  s.col = pos.col;
  // libvterm's pending wrap is off where it cannot be on: it is set only with the cursor on a
  // glyph that reaches the row's end (at most two columns wide), and stays through a resize.
  s.wrap_known = !wrap_unknown_ && !pending_wrap_ && pos.col < cols_ - 2;
  const bool wrap_was_known = s.wrap_known;
  s.pen_extras = pen_extras_;
  // A restore earlier in the FastRun counts: the scanner hears of it after all of the run's
  // settings (VtScanner::skip_fast), so no blink change may follow it there.
  s.restored = run != nullptr && run->restored_cursor;
  const std::size_t n = GridFastPath::run(*grid_, buf, s);
  if (n == 0) return 0;
  if (tap_) {
    // The tap's libvterm reads what the mirror would have written: CAN for each EL elided.
    const auto bytes = [&](std::size_t from, std::size_t to) {
      return std::string_view(reinterpret_cast<const char*>(buf.data()) + from, to - from);
    };
    std::size_t from = 0;
    for (const auto& [begin, end] : s.elided_erases) {
      tap_->wrote(bytes(from, begin));
      tap_->wrote("\x18");
      from = end;
    }
    tap_->wrote(bytes(from, n));
  }
  fast_path_bytes_ += n;
  rewritten_ += s.elided_erases.size();

  sync_.clear();
  auto cup = [&](int to_row, int to_col) {
    sync_ += "[" + std::to_string(to_row + 1) + ';' + std::to_string(to_col + 1) + 'H';
  };
  // libvterm's cursor as the update goes.
  int row = pos.row;
  int col = pos.col;
  bool pending_known = wrap_was_known;  // libvterm's pending wrap, before the update
  bool pending = false;
  if (s.saved) {
    // First the last DECSC, made where libvterm stands as it stood then: its place, the pen
    // (the SGRs logged before it; s.sgr_log goes on from there), the cursor's visibility and
    // blink; then the mirror reads the slot back as after any DECSC.
    if (row != s.save.row || col != s.save.col) {
      cup(s.save.row, s.save.col);  // a move: libvterm's pending wrap ends
      row = s.save.row;
      col = s.save.col;
      pending_known = true;
    }
    s.saved_sgrs.write_to(sync_);
    if (s.save.cursor_visible >= 0) sync_ += s.save.cursor_visible ? "[?25h" : "[?25l";
    if (s.save.cursor_blink >= 0) sync_ += s.save.cursor_blink ? "[?12h" : "[?12l";
    sync_ +=
        ""
        "7";
    muted_ = true;
    vterm_input_write(impl_->vt, sync_.data(), sync_.size());
    muted_ = false;
    pen_extras_ = s.save.pen_extras;
    capture_saved();
    sync_.clear();
  }
  if (!s.region_sequence.empty()) {
    // First: DECSTBM moves libvterm's cursor home (where it stays, a pending wrap there
    // included, the CUP below forces that off when the run knows it).
    input_.set_region(s.region_top, s.region_bottom_set);
    vt_bounds_ = input_.cursor_bounds();
    sync_ += s.region_sequence;
    row = 0;
    col = 0;
  }
  if (s.printed) {
    pending_known = true;
    cup(s.last_row, s.last_col);
    append_utf8(sync_, s.last_char);
    for (int k = 0; k < s.last_mark_count; ++k)
      append_utf8(sync_, s.last_marks[static_cast<std::size_t>(k)]);
    row = s.last_row;
    col = s.last_col + s.last_width < cols_ ? s.last_col + s.last_width : s.last_col;
    pending = s.autowrap && s.last_col + s.last_width >= cols_;
  }
  // A pending wrap is left only by the run's last glyph, in the last column, with nothing but
  // SGRs, elided ELs and `ESC ( B` after it: printing that glyph again left libvterm so.
  assert(!s.pending_wrap || (pending && row == s.row && col == s.col));
  // A run that did not know the pending wrap knows it after a cursor move (off): so must
  // libvterm. A run that never learnt it took only sequences that leave the cursor (SGRs,
  // `ESC ( B`, DECTCEM, modes 12 and 2026).
  if (row != s.row || col != s.col || pending != s.pending_wrap || (!pending_known && s.wrap_known))
    cup(s.row, s.col);
  s.sgr_log.write_to(sync_);
  if (s.cursor_visible >= 0) sync_ += s.cursor_visible ? "\x1b[?25h" : "\x1b[?25l";
  if (s.cursor_blink >= 0) sync_ += s.cursor_blink ? "\x1b[?12h" : "\x1b[?12l";
  muted_ = true;
  vterm_input_write(impl_->vt, sync_.data(), sync_.size());
  muted_ = false;

  if (s.wrap_known) {  // else the run applied only SGRs
    pending_wrap_ = s.pending_wrap;
    wrap_unknown_ = false;
  }
  text_last_ = s.text_last;
  pen_extras_ = s.pen_extras;
  if (s.printed) {
    LastGlyph g;
    g.row = s.last_row;
    g.col = s.last_col;
    g.width = s.last_width;
    g.nchars = 1 + s.last_mark_count;
    g.chars[0] = s.last_char;
    std::copy_n(s.last_marks.begin(), s.last_mark_count, g.chars.begin() + 1);
    last_glyph_ = g;
    combine_width_ = s.last_width;
    rep_lacks_marks_ = false;
  }
  input_.skipped_plain(s.text_last ? 1 + s.last_mark_count : 0,
                       s.text_last && s.last_char < 0x80 && s.last_mark_count == 0);
  if (run != nullptr) {
    run->settings += s.region_sequence;
    if (s.designated_g0) run->settings += "\x1b(B";
    if (s.cursor_visible >= 0) run->settings += s.cursor_visible ? "\x1b[?25h" : "\x1b[?25l";
    if (s.cursor_blink >= 0) run->settings += s.cursor_blink ? "\x1b[?12h" : "\x1b[?12l";
    run->text = run->text || s.printed;
    run->restored_cursor = run->restored_cursor || s.restored;
  }
  return n;
}

void MirrorScreen::feed_libvterm(std::span<const unsigned char> buf) {
  std::vector<unsigned char> scratch;
  std::size_t from = 0;
  if (!carry_.empty()) {
    scratch.reserve(carry_.size() + buf.size());
    scratch.insert(scratch.end(), carry_.begin(), carry_.end());
    scratch.insert(scratch.end(), buf.begin(), buf.end());
    from = carry_.size();
    carry_.clear();
    buf = scratch;
  }
  const std::size_t pending_before = from > 0 ? 0 : pending_bytes_;
  Feeder feeder(*this, buf);
  input_.scan(buf, from, feeder);

  const std::size_t n = buf.size();
  if (input_.clean() && !skipping_csi_) {
    feeder.flush(n);
    pending_bytes_ = 0;
    return;
  }
  const std::size_t start = input_.incomplete_from();
  pending_bytes_ = start == static_cast<std::size_t>(-1) ? pending_before + n : n - start;
  if (skipping_csi_) {
    feeder.flush(std::min(n, feeder.fed()));  // the overflowed CSI's bytes are not fed
    return;
  }
  if (start != static_cast<std::size_t>(-1) && start >= feeder.fed() && n - start <= kMaxCarry) {
    feeder.flush(start);
    carry_.assign(buf.begin() + static_cast<std::ptrdiff_t>(start), buf.end());
    return;
  }
  feeder.flush(n);  // too long to hold back: libvterm parses it across writes
}

void MirrorScreen::resize(int cols, int rows) {
  const int c = std::clamp(cols, kMinCols, kMaxCols);
  const int r = std::clamp(rows, 1, kMaxRows);
  size_clamped_ = (c != cols || r != rows);
  // A resize ends the glyph being printed: libvterm joins nothing to it once the resize moved
  // its cursor (a shrink pushes lines), and a snapshot after the resize cannot continue it. A
  // zero-width character after it follows no glyph (xterm.js would still join it: a resize
  // between a glyph and its marks is the one place the mirror differs), and a snapshot does not
  // end inside a text run.
  input_.end_glyph();
  text_last_ = false;
  wrap_unknown_ = true;
  // Bytes before the resize reach libvterm before it when that matters: C0 controls inside a
  // sequence act at once. A held sequence without them acts only when it is complete, after
  // the resize either way, and part of a UTF-8 character has no effect until it is complete:
  // those stay held. Invariant: libvterm never holds part of a character (it would complete
  // it with bytes the tokenizer reads as a new character, or to a value past U+10FFFF).
  bool in_sequence = !input_.in_ground();  // libvterm is inside the sequence being parsed
  if (!carry_.empty()) {
    const bool controls = std::any_of(carry_.begin() + 1, carry_.end(), [](unsigned char b) {
      return b > 0x00 && b < 0x20 && b != 0x1b;
    });
    if (!input_.in_character() && controls) {
      write(reinterpret_cast<const char*>(carry_.data()), carry_.size());
      carry_.clear();
    } else {
      in_sequence = false;  // the whole unfinished sequence is held
    }
  }
  if (c == cols_ && r == rows_) return;
  vterm_set_size(impl_->vt, r, c);
  if (tap_) tap_->resized(c, r);
  cols_ = c;
  rows_ = r;
  const int reset = input_.set_size(c, r);
  vt_bounds_ = input_.cursor_bounds();  // nothing scanned is unwritten between feeds
  if (!in_sequence) {
    resize_fixup(reset);
    return;
  }
  // libvterm is inside a sequence (one with C0 controls, written above, or one too long to
  // hold). The fixup cannot wait for its end: the controls inside it, and its final byte (RI,
  // say), act at once, with the cursor off the screen or in a degenerate region. CAN ends
  // libvterm's copy, the fixup runs between sequences, and the same parser state is entered
  // again (its controls have acted; a string's contents are not needed).
  const bool esc_held = vt_state_ == VtState::string_esc_held;
  write("\x18", 1);
  resize_fixup(reset);
  const std::string again = input_.reenter();
  write(again.data(), again.size());
  if (esc_held) vt_state_ = VtState::string_esc_held;
  ++rewritten_;
}

void MirrorScreen::resize_fixup(int reset) {
  // Invariant: libvterm's cursor is on the screen after a resize. libvterm 0.1.4 moves it up
  // by the lines a shrink pushes into the history (text below the new bottom) and clamps only
  // its upper bound: the cursor near the top ends above row 0, and the next text reads and
  // writes outside the line-info array. The same no-op CSI as after a restore clamps it.
  clamp_cursor_after_restore();
  if (reset != 0) {
    // Invariant: libvterm's scroll region and margins are never degenerate. It clamps only
    // their bottom and right edges on resize, and scrolling a region whose top is past its
    // bottom moves a negative number of rows (memmove of a negative size: SIGSEGV), e.g.
    // CSI 3 r, a resize to one row, LF. Such a region is reset to the full screen, as xterm
    // resets it on every resize (VtScanner::resize does the same); DECSTBM and DECSLRM home
    // the cursor, so it is put back (a pending wrap there is lost: kCursorFixup).
    VTermPos pos;
    vterm_state_get_cursorpos(impl_->state, &pos);
    std::string seq;
    if (reset & MirrorInput::kRegionReset) seq += "\x1b[r";
    if (reset & MirrorInput::kMarginsReset) seq += "\x1b[s";
    seq += "\x1b[" + std::to_string(pos.row + 1) + ';' + std::to_string(pos.col + 1) + 'H';
    write(seq.data(), seq.size());
    ++rewritten_;
    if (pending_wrap_) unmodelled_ |= MirrorInput::kCursorFixup;
    pending_wrap_ = false;
  }
}

void MirrorScreen::after_text_write(bool autowrap) {
  if (!glyph_damaged_) return;
  glyph_damaged_ = false;
  combine_width_ = last_glyph_width_;
  rep_lacks_marks_ = false;
  LastGlyph g;
  g.row = last_glyph_row_;
  g.col = last_glyph_col_;
  g.width = last_glyph_width_;
  const Cell c = cell(last_glyph_row_, last_glyph_col_);
  if (c.kind == Cell::Kind::glyph) {
    g.nchars = c.nchars;
    g.chars = c.chars;
  }
  last_glyph_ = g;
  const int row_width = impl_->row_width(last_glyph_row_);
  pending_wrap_ =
      autowrap && last_glyph_width_ > 0 && last_glyph_col_ + last_glyph_width_ >= row_width;
  if (pending_wrap_) {
    // The cursor stays on the glyph (state.c on_text); anything else means no pending wrap.
    VTermPos pos;
    vterm_state_get_cursorpos(impl_->state, &pos);
    if (pos.row != last_glyph_row_ || pos.col != last_glyph_col_) pending_wrap_ = false;
  }
}

void MirrorScreen::replace_last_glyph(char32_t c) {
  if (!last_glyph_) return;
  LastGlyph& g = *last_glyph_;
  grid_->set_chars(g.row, g.col, std::u32string_view(&c, 1));
  g.nchars = 1;
  g.chars = {};
  g.chars[0] = c;
}

bool MirrorScreen::extend_last_glyph(char32_t c) {
  if (!last_glyph_) return false;
  LastGlyph& g = *last_glyph_;
  // A lone mark (libvterm's glyph without a base, which xterm.js does not make) keeps
  // libvterm's six.
  if (g.nchars < static_cast<int>(kVtermCellChars) || is_zero_width(g.chars[0])) return false;
  const Cell now = cell(g.row, g.col);
  if (now.kind != Cell::Kind::glyph || now.nchars != g.nchars ||
      !std::equal(g.chars.begin(), g.chars.begin() + g.nchars, now.chars.begin()))
    return false;
  grid_->append_char(g.row, g.col, c);
  if (g.nchars < Cell::kMaxChars) g.chars[static_cast<std::size_t>(g.nchars++)] = c;
  return true;
}

// libvterm 0.1.4 joins a combining mark to the glyph before it only inside one piece of text
// (state.c on_text) or with the cursor right after that glyph. At the end of a row the cursor
// stays on the glyph (pending wrap, or autowrap off), so a mark that starts a write lands in a
// cell of its own, on the next row with a pending wrap: the screen would depend on where writes
// end. The rule the mirror keeps instead, for any split, is xterm.js's: marks that follow the
// glyph directly in the stream (no sequence or control between) join it, at the row's end too,
// while its cell is unchanged and the pen the one it was printed with. They are written
// together with the glyph again, after a BS and a CUF (the reverse in column 0) that cancel the
// pending wrap without leaving the cell (insert mode erases the same cells first); libvterm
// then holds the joined glyph for REP too. `gl_table`: GL held a table where `text` was read.
// Returns how many bytes of `text` (the start of a write) it wrote, 0 when the rule does not
// apply.
std::size_t MirrorScreen::join_marks(std::span<const unsigned char> text, bool gl_table) {
  // libvterm reads a lead byte as text only in ground state (not inside a string split apart).
  // The marks must continue the text the last write ended with: after a sequence or a control,
  // xterm.js does not join them and neither does libvterm within one write.
  if (!last_glyph_ || !text_last_ || text.empty() || text[0] < 0xc0 || vt_state_ != VtState::ground)
    return 0;
  if (vt_autowrap_ && !pending_wrap_) return 0;
  std::size_t marks = 0;  // bytes of the leading combining marks
  while (std::size_t length = starts_with_mark(text.subspan(marks))) marks += length;
  if (marks == 0) return 0;
  const LastGlyph& g = *last_glyph_;
  VTermPos pos;
  vterm_state_get_cursorpos(impl_->state, &pos);
  // DECSLRM margins do not stop this BS and CUF in libvterm 0.1.4 (measured inside, outside
  // and on them).
  if (g.width <= 0 || g.nchars == 0 || pos.row != g.row || pos.col != g.col ||
      g.col + g.width < impl_->row_width(g.row))
    return 0;
  const Cell c = cell(g.row, g.col);
  // A narrow glyph printed over a wide one that did not fit its row (a double-width line of one
  // column) leaves that one's continuation past the row's end, as libvterm's screen layer does:
  // the cell reads as wide, and still holds the glyph.
  const bool stale_half = c.width == 2 && g.width == 1 && g.col + 1 >= impl_->row_width(g.row);
  if (c.kind != Cell::Kind::glyph || (c.width != g.width && !stale_half) || c.nchars != g.nchars ||
      !std::equal(g.chars.begin(), g.chars.begin() + g.nchars, c.chars.begin()) ||
      !(c.pen == pen()))
    return 0;
  // Where libvterm cannot take the glyph again in its cell, the grid's cell takes the marks
  // itself; libvterm's last glyph (what REP repeats) keeps the glyph's own characters (rep()
  // gives the copies the marks), and libvterm's screen layer no longer matches the grid. Three
  // such places:
  //   - GL holds a table (ESC ( B, as `tput sgr0` prints, included): libvterm decodes a piece
  //     that starts with ASCII by the table and the marks after it in a call of their own,
  //     which joins nothing at the row's end, so a glyph printed again would not take them;
  //   - the glyph is wider than its row (a wide one on a double-width line of a 2- or
  //     3-column mirror): printed again it would wrap to the next row, which it only reached
  //     by wrapping (rep() drops a REP of it: libvterm would repeat it without the marks).
  //   - DECOM is on and the cursor is outside the scroll region, or outside the left/right
  //     margins with DECLRMM on (a DECRC, a resize, or margins set after it left it there): the
  //     CUF below would end, as every CSI does then, with the cursor clamped into them, and the
  //     glyph printed again there (found by the fuzzer).
  const bool table = g.chars[0] < 0x80 && gl_table;
  // The CUF ends in the glyph's column, or in column 1 for a glyph in column 0 (BS after it).
  // (libvterm's DECOM and region, not the tokenizer's: it may have read a DECSTBM after the
  // marks already.)
  const bool clamped = vt_bounds_.clamps(g.row, g.col > 0 ? g.col : 1);
  if (table || g.width > impl_->row_width(g.row) || clamped) {
    for (std::size_t at = 0; at < marks;) {
      const std::optional<Utf8Char> ch = decode_utf8(text.subspan(at));
      if (!ch) break;
      grid_->append_char(g.row, g.col, ch->value);
      at += ch->length;
    }
    const Cell joined = cell(g.row, g.col);
    last_glyph_->nchars = joined.nchars;
    last_glyph_->chars = joined.chars;
    rep_lacks_marks_ = true;
    if (tap_) tap_->departed();
    ++rewritten_;
    return marks;
  }
  // A glyph in column 0 fills its row (the mirror has at least two columns): CUF, then BS.
  std::string again = g.col > 0 ? "\b\x1b[C" : "\x1b[C\b";
  for (int i = 0; i < g.nchars; ++i) append_utf8(again, g.chars[static_cast<std::size_t>(i)]);
  again.append(reinterpret_cast<const char*>(text.data()), marks);
  glyph_damaged_ = false;
  write(again.data(), again.size());
  // A whole text write: its last glyph and pending wrap are read now, as after any (the
  // write this piece belongs to may not be the last of its feed), with the autowrap mode
  // libvterm has: the tokenizer may have read a DECAWM after the marks already.
  after_text_write(vt_autowrap_);
  ++rewritten_;
  return marks;
}

std::size_t MirrorScreen::starts_with_mark(std::span<const unsigned char> text) const {
  // libvterm's combining characters are exactly those of width 0 (mk_wcwidth's table), C1
  // controls aside (the tokenizer drops those).
  const std::optional<Utf8Char> ch = decode_utf8(text);
  return ch && ch->value >= 0xa0 && glyph_width(ch->value) == 0 ? ch->length : 0;
}

void MirrorScreen::set_pen_extras(std::uint32_t extras) {
  pen_extras_ = extras;
  GridPen& pen = grid_->pen();
  pen.attrs = (pen.attrs & ~attr::kExtraMask) | GridFastPath::extra_attrs(extras);
}

void MirrorScreen::restore_pen_extras() {
  // DECRC restores them with the pen (xterm.js keeps them with the colours); before any DECSC
  // the pen is the default one.
  std::uint32_t extras = 0;
  if (saved_) {
    extras = (saved_->pen.faint ? MirrorInput::kPenFaint : 0u) |
             (saved_->pen.conceal ? MirrorInput::kPenConceal : 0u) |
             (saved_->pen.overline ? MirrorInput::kPenOverline : 0u);
  }
  set_pen_extras(extras);
}

void MirrorScreen::capture_saved() {
  VTermPos pos;
  vterm_state_get_cursorpos(impl_->state, &pos);
  const char gl = shift_out() ? g1() : g0();
  saved_ = SavedCursor{pos.row,
                       pos.col,
                       pen(),
                       cursor_visible_,
                       cursor_blink_,
                       cursor_shape_,
                       gl == 'u' ? 'B' : gl,
                       alt_screen()};
}

void MirrorScreen::clamp_cursor_after_restore() {
  VTermPos pos;
  vterm_state_get_cursorpos(impl_->state, &pos);
  if (pos.row < 0 || pos.row >= rows_ || pos.col < 0 || pos.col >= cols_) {
    // An unknown DEC mode: a no-op after which on_csi clamps the cursor to the screen.
    write("\x1b[?0h", 5);
    ++rewritten_;
  }
}

Cell MirrorScreen::cell(int row, int col) const { return grid_->cell(row, col); }

Cell MirrorScreen::main_cell(int row, int col) const { return grid_->main_cell(row, col); }

GridRow MirrorScreen::main_row(int row) const { return grid_->main_row(row); }

GridRow MirrorScreen::active_row(int row) const { return grid_->row(row); }

bool MirrorScreen::alt_screen() const { return grid_->alt_active(); }
bool MirrorScreen::grid_bookkeeping_holds() const { return grid_->zero_from_holds(); }

std::uint64_t MirrorScreen::dropped_rows() const { return grid_->dropped_rows(); }

bool MirrorScreen::reverse_video() const { return grid_->reverse_video(); }

CursorState MirrorScreen::cursor() const {
  VTermPos pos;
  vterm_state_get_cursorpos(impl_->state, &pos);
  return CursorState{pos.row,       pos.col,       cursor_visible_,
                     cursor_blink_, cursor_shape_, pending_wrap_};
}

Pen MirrorScreen::pen() const {
  Pen p;
  VTermValue v{};
  VTermState* s = impl_->state;
  vterm_state_get_penattr(s, VTERM_ATTR_BOLD, &v);
  p.bold = v.boolean;
  p.faint = pen_extras_ & MirrorInput::kPenFaint;
  p.conceal = pen_extras_ & MirrorInput::kPenConceal;
  p.overline = pen_extras_ & MirrorInput::kPenOverline;
  vterm_state_get_penattr(s, VTERM_ATTR_UNDERLINE, &v);
  p.underline = static_cast<Underline>(v.number & 3);
  vterm_state_get_penattr(s, VTERM_ATTR_ITALIC, &v);
  p.italic = v.boolean;
  vterm_state_get_penattr(s, VTERM_ATTR_BLINK, &v);
  p.blink = v.boolean;
  vterm_state_get_penattr(s, VTERM_ATTR_REVERSE, &v);
  p.reverse = v.boolean;
  vterm_state_get_penattr(s, VTERM_ATTR_STRIKE, &v);
  p.strike = v.boolean;
  vterm_state_get_penattr(s, VTERM_ATTR_FONT, &v);
  p.font = static_cast<std::uint8_t>(v.number);
  vterm_state_get_penattr(s, VTERM_ATTR_FOREGROUND, &v);
  p.fg = from_vterm(v.color, true);
  vterm_state_get_penattr(s, VTERM_ATTR_BACKGROUND, &v);
  p.bg = from_vterm(v.color, false);
  return p;
}

int MirrorScreen::non_ascii_width(char32_t c) const {
  if (auto it = width_cache_.find(c); it != width_cache_.end()) return it->second;
  Impl& im = *impl_;
  if (!im.probe) {
    im.probe = vterm_new(1, 8);
    vterm_set_utf8(im.probe, 1);
    vterm_screen_reset(vterm_obtain_screen(im.probe), 1);
  }
  std::string seq = "\x1b[HX";
  append_utf8(seq, c);
  vterm_input_write(im.probe, seq.data(), seq.size());
  VTermPos pos;
  vterm_state_get_cursorpos(vterm_obtain_state(im.probe), &pos);
  const int w = std::clamp(pos.col - 1, 0, 2);
  width_cache_.emplace(c, static_cast<std::uint8_t>(w));
  return w;
}

// --- title ---------------------------------------------------------------------------------

std::string MirrorScreen::sanitize_title(std::string_view raw) {
  std::string out;
  std::size_t i = 0;
  while (i < raw.size()) {
    const auto b = static_cast<unsigned char>(raw[i]);
    std::size_t len = b < 0x80             ? 1
                      : (b & 0xe0) == 0xc0 ? 2
                      : (b & 0xf0) == 0xe0 ? 3
                      : (b & 0xf8) == 0xf0 ? 4
                                           : 0;
    if (len == 0 || i + len > raw.size()) {
      ++i;  // invalid lead or truncated: dropped
      continue;
    }
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1fu) : len == 3 ? (b & 0x0fu) : (b & 0x07u);
    bool ok = true;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cb = static_cast<unsigned char>(raw[i + k]);
      if ((cb & 0xc0) != 0x80) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (cb & 0x3fu);
    }
    if (!ok) {
      ++i;
      continue;
    }
    const bool overlong =
        (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    const bool control = cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
    const bool invalid = cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff);
    if (!overlong && !control && !invalid) {
      if (out.size() + len > kMaxTitleBytes) break;
      out.append(raw.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace backscroll::term
