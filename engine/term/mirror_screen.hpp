// MirrorScreen: one actor's headless terminal at the PTY's size: libvterm 0.1.4's parser and
// state layer (UTF-8) in front of a ScreenGrid of our own that behaves as libvterm's screen
// layer with the alternate screen enabled, plus what a snapshot needs that libvterm keeps
// private: a bounded scrollback store, the title, the cursor's pending-wrap state, the saved
// cursor (DECSC).
// Single-threaded: the mirror thread feeds it and builds snapshots from it between feeds.
// Coordinates: 0-based (row, col) on the screen; scrollback lines are indexed oldest first.
// It never writes to the PTY: libvterm's replies to queries (DA, DSR/CPR, DECRQSS, DECRQM)
// are dropped and only counted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/term/mirror_input.hpp"
#include "engine/term/screen_cell.hpp"
#include "engine/term/scrollback.hpp"
#include "engine/term/wide_chars.hpp"

namespace backscroll::term {

// What libvterm is fed, as MirrorScreen feeds it: every vterm_input_write and vterm_set_size in
// order, from a fresh terminal of the given size. A second libvterm fed the same calls holds
// the same state; the tests use one with libvterm's own screen layer to check ScreenGrid.
class VtermTap {
 public:
  virtual ~VtermTap() = default;
  virtual void created(int cols, int rows) = 0;  // also after reset()
  virtual void wrote(std::string_view bytes) = 0;
  virtual void resized(int cols, int rows) = 0;
  // The mirror emptied the history (CSI 3 J, which libvterm 0.1.4 ignores: xterm clears it).
  virtual void history_cleared() {}
  // The mirror kept cells libvterm erases (ED 0 at a pending wrap keeps the cursor's row, as
  // xterm.js does): from here on until created(), the screens are not expected to agree.
  virtual void departed() {}
};

// Cursor state a snapshot restores.
struct CursorState {
  int row = 0;
  int col = 0;
  bool visible = true;
  bool blink = true;
  int shape = 1;  // 1 block, 2 underline, 3 bar (VTERM_PROP_CURSORSHAPE_*)
  // The last character printed filled the row's last column and autowrap is on: the next
  // printable character goes to the start of the next line (DEC "last column flag").
  bool pending_wrap = false;
};

// What DECSC (ESC 7, CSI ? 1048 h, CSI ? 1049 h) saved in libvterm 0.1.4: position, pen and
// cursor visibility/blink/shape (not the origin mode or the charsets, unlike xterm).
struct SavedCursor {
  int row = 0;
  int col = 0;
  Pen pen;
  bool visible = true;
  bool blink = true;
  int shape = 1;
  // What xterm.js keeps with a save and libvterm does not: the charset GL held ('B' ASCII, '0'
  // DEC graphics, 'A' UK; its DECRC restores it) and the screen it was saved on (a slot per
  // screen there; libvterm has one).
  char gl_charset = 'B';
  bool on_alt = false;
  bool operator==(const SavedCursor&) const = default;
};

// The glyph libvterm 0.1.4 repeats on REP and joins a combining mark to (state.c combine_chars,
// combine_width, combine_pos): the last glyph a run of text printed, where it was printed and
// how wide it was (0 for a lone combining mark). REP, DECALN, erasing, scrolling and resizing
// leave it alone, so its cell may hold something else by now, or lie off the screen. A mark
// joins it when the cursor is at (row, col + width).
struct LastGlyph {
  int row = 0;
  int col = 0;
  int width = 0;
  int nchars = 0;  // the chars its cell got (a cell keeps at most Cell::kMaxChars)
  std::array<char32_t, Cell::kMaxChars> chars{};
  bool operator==(const LastGlyph&) const = default;
};

class ScreenGrid;

class MirrorScreen {
 public:
  // libvterm 0.1.4 crashes on a wide character at one column; the mirror never goes below 2.
  static constexpr int kMinCols = 2;
  static constexpr int kMaxCols = 2000;
  static constexpr int kMaxRows = 2000;
  // Each vterm_input_write is at most this long (libvterm allocates on the stack per write).
  static constexpr std::size_t kMaxWrite = 64 * 1024;
  // An unfinished sequence at the end of feed() is held back up to this size.
  static constexpr std::size_t kMaxCarry = 4096;

  MirrorScreen(int cols, int rows, ScrollbackLimits limits = {});
  ~MirrorScreen();
  MirrorScreen(const MirrorScreen&) = delete;
  MirrorScreen& operator=(const MirrorScreen&) = delete;

  // Parses bytes in stream order. Best fed whole sequences; an unfinished sequence or UTF-8
  // character at the end is held back (pending_bytes()) until the next feed completes it.
  void feed(std::span<const std::byte> bytes);
  void feed(std::string_view bytes) {
    feed(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  }
  // What the fast path took in feed_fast_only() that a VtScanner keeps (VtScanner::skip_fast).
  struct FastRun {
    std::size_t bytes = 0;
    // Its DECSTBM, DECTCEM, cursor-blink and `ESC ( B` sequences, whole: the last of each kind
    // per run of the fast path, one run's after another's (the kinds are independent).
    std::string settings;
    bool text = false;             // it printed a character
    bool restored_cursor = false;  // it took a DECRC
  };
  // The longest prefix of `bytes` the fast path takes now, fed as feed() would feed it; 0
  // bytes where it may not start (its modes, libvterm inside a sequence or holding bytes, a
  // single shift waiting) or takes nothing. `run` is cleared first.
  void feed_fast_only(std::span<const std::byte> bytes, FastRun& run);
  // Where the fast path stopped (or may not start) at the start of `bytes` (not empty): how
  // many bytes libvterm reads before the fast path is tried again (at least one). All of them
  // while the fast path is off or a lasting mode rules it out (fast_path_lasting_modes()).
  std::size_t libvterm_share(std::string_view bytes) const;
  // Where the fast path stopped in text or before a sequence it does not take: up to the next
  // ESC, or through the end of the line.
  static std::size_t between_fast_runs(std::string_view bytes);
  // The PTY was resized (apply in stream order). Sizes are clamped to [kMinCols, kMaxCols] x
  // [1, kMaxRows]; size_clamped() says when the mirror is not at the requested size.
  void resize(int cols, int rows);
  // Back to a fresh terminal (after a clear): screen, scrollback, title, saved cursor, modes.
  void reset();

  int cols() const { return cols_; }
  int rows() const { return rows_; }
  bool size_clamped() const { return size_clamped_; }

  // Bytes of the input fed so far that the screen does not reflect yet (held back, or an
  // unfinished sequence libvterm is in the middle of). A snapshot describes the stream up to
  // (bytes fed - pending_bytes()); 0 when the caller feeds whole sequences.
  std::size_t pending_bytes() const { return pending_bytes_; }
  bool clean() const { return pending_bytes_ == 0; }

  // The active screen (the alternate one while it is active).
  Cell cell(int row, int col) const;
  bool alt_screen() const;
  // The main screen: the live one, or its copy while the alternate screen is active.
  Cell main_cell(int row, int col) const;
  // DECSCNM (CSI ? 5 h): libvterm reports every cell's reverse bit flipped; cell() and
  // main_cell() return the stored bit.
  bool reverse_video() const;

  // Whether the grid's own bookkeeping matches its cells (ScreenGrid::zero_from_holds): for
  // the tests that compare the mirror with libvterm after every write.
  bool grid_bookkeeping_holds() const;

  std::size_t scrollback_lines() const { return scrollback_.lines(); }
  // Lines pushed into the history since the terminal was created or reset.
  std::uint64_t pushed_lines() const { return scrollback_.pushed(); }
  // Rows scrolled off a region's top without entering the history (ScreenGrid::dropped_rows).
  std::uint64_t dropped_rows() const;
  std::size_t scrollback_bytes() const { return scrollback_.bytes(); }
  void set_scrollback_limits(ScrollbackLimits limits) { scrollback_.set_limits(limits); }
  // Drops every history line, as CSI 3 J does (pushed_lines() keeps counting): the engine's
  // clear that keeps the screen.
  void erase_history() { scrollback_.erase_lines(); }
  // Width the line had when it scrolled off; columns past it read as pristine cells.
  int scrollback_cols(std::size_t line) const { return scrollback_.cols(line); }
  Cell scrollback_cell(std::size_t line, int col) const { return scrollback_.cell(line, col); }
  // Cells [0, out.size()) of a history line at once (cheaper than cell by cell).
  void scrollback_row(std::size_t line, std::span<Cell> out) const { scrollback_.row(line, out); }
  // Scrollback::stored_cells: the line's cells up to its last that is not pristine.
  std::size_t scrollback_stored_cells(std::size_t line, std::span<Cell> out) const {
    return scrollback_.stored_cells(line, out);
  }
  // The main screen's row `row` read in place (also while the alternate screen is active).
  GridRow main_row(int row) const;
  // The active screen's row `row` read in place (the alternate one's while it is active).
  GridRow active_row(int row) const;
  Scrollback::StoredLine scrollback_line(std::size_t line) const {
    return scrollback_.stored_line(line);
  }

  CursorState cursor() const;
  Pen pen() const;
  std::optional<SavedCursor> saved_cursor() const { return saved_; }
  // libvterm's REP / combining glyph; nullopt until a run of text printed one.
  std::optional<LastGlyph> last_glyph() const { return last_glyph_; }
  // The last byte parsed was text (no sequence or control after the last glyph) and that
  // glyph is still open: the stream may go on with a combining mark for that glyph, or a REP
  // of it, which a terminal applies only right after text (xterm, xterm.js). A snapshot then
  // ends with that glyph. A resize ends the glyph (resize()), and so does text libvterm never
  // gets (a dropped C1 character: the next mark is a lone one, MirrorInput::glyph_open).
  bool text_last() const { return text_last_ && input_.glyph_open(); }
  // The last OSC 0/2 title: at most 256 bytes of valid UTF-8 without control characters.
  const std::string& title() const { return title_; }

  // libvterm's cell width of a character (0 for combining marks, 1, 2 for wide).
  int glyph_width(char32_t c) const {
    // Inline: the snapshot's hot path. Below U+00A0 only printable ASCII is text to libvterm.
    if (c >= 0x20 && c < 0x7f) return 1;
    return c >= 0xa0 ? unicode_width(c) : non_ascii_width(c);
  }

  // DECAWM, as the mirror tracks it to know the pending-wrap state.
  bool autowrap() const { return input_.autowrap(); }
  // G0/G1 designations ('u': never designated, libvterm's UTF-8 default) and SO in effect,
  // exactly as libvterm holds them.
  char g0() const { return input_.designation(0); }
  char g1() const { return input_.designation(1); }
  bool shift_out() const { return input_.gl_set() == 1; }

  // MirrorInput::Unmodelled flags: state libvterm keeps that a snapshot cannot reproduce.
  std::uint32_t unmodelled() const { return input_.unmodelled() | unmodelled_; }

  // The fast path (grid_fast_path.hpp): on by default; off, libvterm parses every byte (the
  // tests compare the two).
  void set_fast_path(bool on) { fast_path_on_ = on; }

  // Counters.
  std::uint64_t dropped_reply_bytes() const { return dropped_reply_bytes_; }
  // Bytes the fast path applied without libvterm.
  std::uint64_t fast_path_bytes() const { return fast_path_bytes_; }
  std::uint64_t rewritten_sequences() const { return rewritten_; }

  // Reports every call that reaches libvterm from now on, starting with created(); attach it
  // before the first feed. nullptr detaches.
  void set_tap(VtermTap* tap);

  static constexpr std::size_t kMaxTitleBytes = 256;
  static std::string sanitize_title(std::string_view raw);

 private:
  friend struct MirrorScreenCallbacks;
  struct Impl;
  class Feeder;

  void create();
  // feed() through MirrorInput and libvterm.
  void feed_libvterm(std::span<const unsigned char> buf);
  // The fast path may run while these hold (grid_fast_path.hpp, preconditions): modes that
  // only bytes libvterm parses change.
  bool fast_path_modes() const;
  // Those of them programs keep for long: origin mode, margins, line sizes, protected cells,
  // LNM, G2 / G3 (not GL's table or insert mode, set for a few characters).
  bool fast_path_lasting_modes() const;
  // ... and these, which any sequence or text may change.
  bool fast_path_ready() const;
  // Applies the prefix of `buf` the fast path takes, brings libvterm's state to where it left
  // the terminal, and returns its length. With `run`, adds to it what a VtScanner keeps.
  std::size_t feed_fast(std::span<const unsigned char> buf, FastRun* run = nullptr);
  void write(const char* bytes, std::size_t len);
  void vt_write(const char* bytes, std::size_t len);
  void after_text_write(bool autowrap);
  // Adds `c` to the last glyph's cell, past the six characters libvterm keeps
  // (MirrorInput::Sink::cluster_overflow), when that cell still holds the glyph with six or
  // more characters; false (nothing changed) otherwise.
  bool extend_last_glyph(char32_t c);
  // The last glyph's cell holds `c` instead (a lone zero-width character printed as a space:
  // MirrorInput::Sink::lone_zero_width).
  void replace_last_glyph(char32_t c);
  std::size_t join_marks(std::span<const unsigned char> text, bool gl_table);
  // The length of the combining mark `text` starts with, else 0.
  std::size_t starts_with_mark(std::span<const unsigned char> text) const;
  // The pen attributes libvterm lacks (MirrorInput::kPen* bits), in the grid's pen from the
  // next byte on; restore_pen_extras() takes the saved cursor's (DECRC).
  void set_pen_extras(std::uint32_t extras);
  void restore_pen_extras();
  void capture_saved();
  void clamp_cursor_after_restore();
  void resize_fixup(int reset);
  // Below U+00A0 (controls to libvterm), asked of libvterm once per character.
  int non_ascii_width(char32_t c) const;

  int cols_;
  int rows_;
  bool size_clamped_ = false;
  Scrollback scrollback_;
  std::unique_ptr<Impl> impl_;
  ScreenGrid* grid_ = nullptr;  // impl_'s
  VtermTap* tap_ = nullptr;
  MirrorInput input_;
  std::vector<unsigned char> carry_;  // held-back unfinished sequence
  std::size_t pending_bytes_ = 0;
  bool skipping_csi_ = false;  // inside a CSI past its 16th argument: its bytes are not fed
  // libvterm's parser as write() tracks it; in string_esc_held, the string's ESC is held back.
  enum class VtState : std::uint8_t {
    ground,
    escape,
    csi,
    csi_args,
    csi_intermed,
    string,
    string_esc,
    string_esc_held
  };
  VtState vt_state_ = VtState::ground;

  bool cursor_visible_ = true;
  bool cursor_blink_ = true;
  int cursor_shape_ = 1;
  bool pending_wrap_ = false;
  // Set while an ED 0 at a pending wrap is written: libvterm's erase of the cursor's row from
  // its column is dropped (xterm.js erases from one past the last column: nothing of the row).
  bool keep_cursor_row_ = false;
  bool vt_autowrap_ = true;  // DECAWM as libvterm has it after the bytes written so far
  // DECOM, the scroll region and the margins as libvterm has them after the bytes written so
  // far (the tokenizer's may be ahead, within a feed): whether libvterm clamps a CUF.
  MirrorInput::CursorBounds vt_bounds_;
  std::uint32_t pen_extras_ = 0;  // MirrorInput::kPen* bits of the pen (set_pen_extras)
  bool text_last_ = false;        // see text_last()
  // The feeding buffer's GL table state from each position on (Feeder::gl_table_at), in
  // position order, never empty while feeding; kept here so its capacity serves every feed.
  std::vector<std::pair<std::size_t, bool>> gl_table_from_;
  int combine_width_ = 0;  // width of the last glyph libvterm printed (what REP repeats)
  // libvterm's last glyph (what REP repeats) lacks marks the grid's cell took itself
  // (join_marks' in-place branch); last_glyph_ has them. Until libvterm prints a glyph again.
  bool rep_lacks_marks_ = false;
  int last_glyph_row_ = 0;  // last glyph put (valid right after a text write)
  int last_glyph_col_ = 0;
  int last_glyph_width_ = 0;
  bool glyph_damaged_ = false;
  std::optional<SavedCursor> saved_;
  std::optional<LastGlyph> last_glyph_;
  std::string title_;
  bool fast_path_on_ = true;
  // Set while libvterm is brought up to date after a fast run: the grid already shows what
  // those writes would draw, so the callbacks leave it (and the pending wrap) alone.
  bool muted_ = false;
  // A resize came after the last fast run that knew libvterm's pending wrap: libvterm keeps
  // it with the cursor anywhere (feed_fast).
  bool wrap_unknown_ = false;
  std::string sync_;  // the bytes of that update, reused
  std::uint64_t fast_path_bytes_ = 0;
  std::uint64_t dropped_reply_bytes_ = 0;
  std::uint64_t rewritten_ = 0;
  std::uint32_t unmodelled_ = 0;  // MirrorInput::Unmodelled flags the screen itself sets
  mutable std::unordered_map<char32_t, std::uint8_t> width_cache_;
};

}  // namespace backscroll::term
