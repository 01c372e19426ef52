// MirrorInput: the byte stream's tokenizer in front of libvterm, on the mirror thread.
// It replicates libvterm 0.1.4's parser state machine (src/parser.c: ground, ESC, CSI leader /
// arguments / intermediates, OSC/DCS strings, with its quirks: C0 controls execute inside
// sequences and strings, CAN/SUB abort, 8-bit C1 bytes are text in UTF-8 mode, SOS/PM/APC are not
// strings) so MirrorScreen can, without changing what libvterm shows:
//   - end each vterm_input_write at a clean boundary (ground state, not inside a UTF-8
//     character), at most 64 KiB long;
//   - stop where it must read libvterm's state: after the last text of a write (pending wrap,
//     the glyph REP repeats), before an alternate-screen switch (to copy the main screen, which
//     libvterm 0.1.4 cannot show while the alternate screen is active), after a cursor save or
//     restore;
//   - keep input that crashes or hangs libvterm 0.1.4 away from it (see docs/snapshot.md): CSI
//     sequences with more than 16 parameters, UTF-8 encoded C1 code points (width -1);
//   - flag state libvterm keeps but a snapshot cannot reproduce (MirrorInput::Unmodelled).
// Offsets are byte offsets into the buffer passed to scan(); the tokenizer's state carries over
// from one scan() to the next, like libvterm's parser.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "engine/term/dcs_header.hpp"

namespace backscroll::term {

class MirrorInput {
 public:
  // libvterm 0.1.4 stores at most 16 CSI arguments and writes past its array on the 17th.
  static constexpr int kMaxCsiArgs = 16;
  static constexpr std::uint32_t kArgMissing = 0x7fffffffu;  // CSI_ARG_MISSING
  static constexpr std::uint32_t kArgMore = 0x80000000u;     // CSI_ARG_FLAG_MORE (':' followed)

  // State libvterm keeps that snapshot_v1 does not reproduce; a snapshot falls back to
  // raw_replay while any is set (docs/snapshot.md lists each).
  enum Unmodelled : std::uint32_t {
    kGraphics = 1u << 0,  // a DCS that changes the terminal: sixel, ReGIS, DECUDK, ... (DcsHeader)
    kHiddenString = 1u << 1,    // SOS / PM / APC: libvterm prints their payload as text
    kProtectedCells = 1u << 2,  // DECSCA 1 was used: cells may be protected from DECSED/DECSEL
    kMargins = 1u << 3,         // DECLRMM on, or DECSLRM margins other than the full width
    kTabStops = 1u << 4,        // HTS or TBC changed the tab stops
    kNewlineMode = 1u << 5,     // LNM (CSI 20 h) is on
    kCharsets = 1u << 6,        // G2/G3 designated, or GL shifted to G2/G3 (LS2/LS3)
    kLineSize = 1u << 7,        // DECDWL / DECDHL (ESC # 3/4/6) was used
    kPalette = 1u << 8,         // OSC 4/5/10-19 changed a colour
    // The mirror had to move libvterm's cursor in a way a snapshot cannot re-create: a pending
    // wrap lost to a scroll region a resize left degenerate (MirrorScreen::resize)
    kCursorFixup = 1u << 9,
  };

  // A complete CSI sequence as libvterm's parser hands it to its state layer.
  struct Csi {
    std::array<char, 16> leader{};  // bytes 0x3c-0x3f after CSI (libvterm keeps 15)
    int leader_len = 0;
    std::array<std::uint32_t, kMaxCsiArgs> args{};  // each with kArgMore if ':' followed it
    int argcount = 0;                               // as libvterm counts (min(real, 16))
    bool overflowed = false;  // more than 16 arguments: never handed to libvterm as bytes
    std::array<char, 16> intermed{};
    int intermed_len = 0;
    char final = 0;
    // C0 controls inside the sequence after it overflowed: libvterm executes them in place.
    std::string controls_after_overflow;

    // libvterm's CSI_ARG / CSI_ARG_OR: the value without flags, or `def` when missing.
    std::uint32_t arg(int i, std::uint32_t def) const {
      if (i >= argcount) return def;
      const std::uint32_t v = args[i] & ~kArgMore;
      return v == kArgMissing ? def : v;
    }
    // A sequence libvterm's state layer dispatches: no or one leader byte (which must be '?'
    // or '>'), at most one intermediate byte (' ', '"', '$' or '\'').
    bool plain() const { return leader_len == 0 && intermed_len == 0; }
    bool dec_private() const { return leader_len == 1 && leader[0] == '?' && intermed_len == 0; }
  };

  // A complete escape sequence ESC [intermediates] final (final 0x30-0x7e).
  struct Esc {
    std::array<char, 16> intermed{};
    int intermed_len = 0;
    char final = 0;
  };

  class Sink {
   public:
    virtual ~Sink() = default;
    // A run of text bytes starts at `at` / ended at `end` (next byte not text). A run still
    // open when the buffer ends gets no text_end.
    virtual void text_begin(std::size_t at) = 0;
    virtual void text_end(std::size_t end) = 0;
    // Bytes [at, at + len) must not reach libvterm: of a text run (UTF-8 encoded
    // U+0080-U+009F, an unfinished character cut by a control), or the '$' of a DECRQSS.
    virtual void drop_text(std::size_t at, std::size_t len) = 0;
    // Bytes [at, at + len) decode to a value past U+10FFFF (libvterm accepts 5- and 6-byte
    // forms): libvterm gets U+FFFD instead, so every cell holds a Unicode scalar value.
    virtual void replace_text(std::size_t at, std::size_t len) = 0;
    // Bytes [at, at + len) are `c`, a zero-width character that directly follows six
    // characters of one glyph (a base and its zero-width characters, nothing between them).
    // libvterm keeps six per cell and, inside one write, would start a lone glyph with it:
    // they must not reach libvterm, and the mirror adds `c` to that glyph itself, as xterm.js
    // joins every such character.
    virtual void cluster_overflow(std::size_t at, std::size_t len, char32_t c) = 0;
    // Bytes [at, at + len) are `c`, a zero-width character that follows no glyph (after a
    // control or a sequence, or another such character): xterm.js gives it a column of its
    // own, libvterm a cell it does not advance past, or joins it to a glyph before a sequence.
    // They must not reach libvterm; the mirror prints `c` in a column itself. Returns whether
    // libvterm got text in its place (which takes a pending single shift: single_shift()).
    virtual bool lone_zero_width(std::size_t at, std::size_t len, char32_t c) = 0;
    // The 17th argument of a CSI starts at `at`: feed nothing of the sequence from here on.
    virtual void csi_overflow(std::size_t at) = 0;
    // An overflowed CSI ended without being dispatched: by CAN, SUB or ESC at `at`, or by an
    // invalid byte just before `at`, which it consumes. Cancel libvterm's truncated copy (the
    // bytes it has not seen may make the invalid byte valid there) and feed again from `at`.
    virtual void csi_abort(std::size_t at) = 0;
    // A complete CSI / escape sequence; `final_at` is the offset of its final byte. For an
    // overflowed CSI, `all_args` holds every argument (up to 256).
    virtual void csi(const Csi& csi, std::span<const std::uint32_t> all_args,
                     std::size_t final_at) = 0;
    virtual void esc(const Esc& esc, std::size_t final_at) = 0;
    // Parsing may stop before `at` without changing what libvterm shows (`at` is clean), or,
    // when `forced`, only at the cost of libvterm's string quirk (inside a huge string).
    virtual void split_point(std::size_t at, bool forced) = 0;
    // A write must end before `at`, inside a text run: GL holds a table charset (DEC graphics,
    // UK, an explicit US-ASCII) and the byte at `at` is ASCII after a non-ASCII one, or the
    // reverse. libvterm picks one decoder per piece of text by its first byte (state.c
    // on_text: a piece that starts non-ASCII is decoded as UTF-8 to its end, past the GL
    // table), so ending writes at every such switch makes the GL apply to every ASCII byte,
    // however the stream was split, as in xterm. Also right after the character a single
    // shift (SS2, SS3) applies to: libvterm decodes that one by G2 / G3 in a piece of its own
    // (state.c on_text), and a piece that starts with a combining mark joins it only with the
    // cursor past the glyph before (not at a pending wrap). A write that ends there makes a
    // mark after that character start a write wherever the stream was split.
    virtual void decoder_switch(std::size_t at) = 0;
  };

  MirrorInput() = default;

  // Tokenizes buf[from, size) (bytes before `from` were scanned by an earlier call and are
  // carried again by the caller).
  void scan(std::span<const unsigned char> buf, std::size_t from, Sink& sink);

  // The parser is in ground state and not inside a UTF-8 character.
  bool clean() const { return state_ == State::ground && utf8_remaining_ == 0; }
  bool in_csi() const {
    return state_ == State::csi_leader || state_ == State::csi_args ||
           state_ == State::csi_intermed;
  }
  bool in_string() const { return state_ == State::string || state_ == State::esc_in_string; }
  // Not inside an escape sequence, CSI or string (libvterm's parser in ground state, unless
  // it holds part of a UTF-8 character).
  bool in_ground() const { return state_ == State::ground; }
  // Inside a UTF-8 character in ground state (nothing else is pending).
  bool in_character() const { return state_ == State::ground && utf8_remaining_ > 0; }
  // When !clean(): where the unfinished sequence or character began in the last buffer
  // scanned, or npos if it began in an earlier buffer that the caller did not carry.
  std::size_t incomplete_from() const { return token_start_; }

  // DECAWM as libvterm has it after the bytes scanned so far.
  bool autowrap() const { return autowrap_; }
  bool insert() const { return insert_; }  // IRM, as libvterm has it
  // What libvterm clamps the cursor into at the end of every CSI (state.c on_csi), as of the
  // bytes scanned so far (which may run ahead of those libvterm has been given: a caller that
  // acts on libvterm's state keeps its own copy, MirrorScreen::vt_bounds_).
  struct CursorBounds {
    bool origin = false;  // DECOM (libvterm applies a DECSET's first parameter only)
    bool declrmm = false;
    int margin_left = 0;
    int margin_right = -1;   // exclusive, -1 for the last column
    int region_top = 0;      // DECSTBM as libvterm stores it: top row, bottom (exclusive) or
    int region_bottom = -1;  // -1 for the last row
    int cols = 80;
    int rows = 24;

    // DECOM on, and (row, col) outside the scroll region, or outside the left/right margins
    // while DECLRMM is on: a CSI that ends there (a CUF) takes the cursor inside them.
    bool clamps(int row, int col) const {
      if (!origin) return false;
      if (row < region_top || row >= (region_bottom > -1 ? region_bottom : rows)) return true;
      return declrmm && (col < margin_left || col >= (margin_right > -1 ? margin_right : cols));
    }
    // The screen's new size, with the region and margins clamped as libvterm clamps them;
    // kRegionReset / kMarginsReset (below) for those a resize left degenerate.
    int resize(int new_cols, int new_rows);
  };
  const CursorBounds& cursor_bounds() const { return bounds_; }
  // The glyph being printed is over: a zero-width character next follows no glyph.
  void end_glyph() { cluster_ = 0; }
  // A zero-width character next joins the glyph being printed. False after anything but
  // text, and inside text after a dropped C1 character, a byte a G2 / G3 table skips or a
  // lone zero-width character (Sink::lone_zero_width): the glyph ended without a sequence.
  bool glyph_open() const { return cluster_ != 0; }
  // Whole tokens of text, CR, LF, BS and CSIs that change no mode this tracks were
  // applied without a scan (MirrorScreen's fast path, grid_fast_path.hpp), from a clean state:
  // the state after them. `glyph_chars`: the last of them was text, a glyph of that many
  // characters (its base and the zero-width ones joined to it; 0: the last was not text);
  // `ascii_last`: the last character was printable ASCII.
  void skipped_plain(int glyph_chars, bool ascii_last) {
    in_text_ = false;
    cluster_ = glyph_chars;
    prev_ascii_ = ascii_last;
  }
  bool origin() const { return bounds_.origin; }  // DECOM, as libvterm has it
  // The scroll region as libvterm holds it: rows [region_top(), region_bottom()).
  int region_top() const { return bounds_.region_top; }
  // The region a DECSTBM that did not come through scan() left (the fast path's): `bottom` as
  // libvterm's scrollregion_bottom holds it (-1: the last row, following resizes).
  void set_region(int top, int bottom) {
    bounds_.region_top = top;
    bounds_.region_bottom = bottom;
  }
  int region_bottom() const {
    return bounds_.region_bottom > -1 ? bounds_.region_bottom : bounds_.rows;
  }
  // G0-G3 designations as libvterm holds them: 'u' for its initial UTF-8 decoder (which an
  // explicit ESC ( B replaces with a US-ASCII one that decodes differently), else '0', 'A'
  // or 'B'. gl_set(): which of them SO/SI/LS2/LS3 put in GL.
  char designation(int set) const { return set == 0 ? g0_ : set == 1 ? g1_ : set == 2 ? g2_ : g3_; }
  int gl_set() const { return gl_set_; }
  // GL holds a table (any designation but UTF-8's 'u'): libvterm decodes ASCII by it.
  bool gl_table() const { return designation(gl_set_) != 'u'; }
  // SS2 or SS3 (ESC N, ESC O) waits for its character: libvterm decodes the next text it gets
  // by G2 / G3, one character (state.c gsingle_set). Text that never reaches libvterm (dropped,
  // or a lone zero-width character at a pending wrap) leaves it waiting.
  bool single_shift() const { return single_shift_ != 0; }
  std::uint32_t unmodelled() const;

  // The screen size, for DECSTBM's and DECSLRM's clamping (libvterm clamps the bottom and right
  // edges to it on resize, not the top and left ones). Returns kRegionReset / kMarginsReset when
  // the resize left the scroll region / margins degenerate (top at or past the bottom): they are
  // then tracked as the full screen, and the caller must reset libvterm's (CSI r, CSI s).
  static constexpr int kRegionReset = 1;
  static constexpr int kMarginsReset = 2;
  int set_size(int cols, int rows);

  // Bytes that bring a parser in ground state into the state this one is in: the escape, CSI
  // (leader, arguments, intermediates as libvterm holds them) or string started so far, without
  // its C0 controls and string contents. Empty in ground state.
  std::string reenter() const;
  // libvterm's canonical bytes for a CSI: controls_after_overflow is not included.
  static std::string encode(const Csi& csi);
  // Whether libvterm 0.1.4 would read this SGR's arguments differently from xterm.js (a colour
  // given in another form than 38/48;5;n or 38/48;2;r;g;b, or 58), so encode_sgr() must rewrite it.
  static bool sgr_needs_rewrite(std::span<const std::uint32_t> args);
  // The colour attribute at args[i] (38 or 48): how many values follow its mode (1 for 5;n,
  // 3 for 2;r;g;b) when libvterm 0.1.4 reads it as xterm.js does (no sub-parameters, each of
  // them up to 255: a missing one is kArgMissing); 0 for any other form.
  static std::size_t xterm_colour_values(std::span<const std::uint32_t> args, std::size_t i) {
    const auto plain = [&](std::size_t k) { return k < args.size() && args[k] <= 255; };
    if (!plain(i) || !plain(i + 1)) return 0;
    const std::size_t values = args[i + 1] == 5 ? 1 : args[i + 1] == 2 ? 3 : 0;
    for (std::size_t k = i + 2; k < i + 2 + values; ++k)
      if (!plain(k)) return 0;
    return values;
  }
  // The SGR as several SGRs of at most 16 arguments each, split only between attributes, with
  // the colours in the forms libvterm reads as xterm.js does: libvterm then applies the pen
  // xterm.js applies (underline colour aside, which it lacks).
  static std::string encode_sgr(const Csi& csi, std::span<const std::uint32_t> args);
  // The pen attributes libvterm 0.1.4 ignores, as xterm.js sets them: faint (SGR 2, off by 22),
  // conceal (8, 28), overline (53, 55); SGR 0 clears them, colour attributes are skipped with
  // their arguments. `pen` and the result are kPen* bits.
  static constexpr std::uint32_t kPenFaint = 1;
  static constexpr std::uint32_t kPenConceal = 2;
  static constexpr std::uint32_t kPenOverline = 4;
  static std::uint32_t sgr_extras(std::uint32_t pen, std::span<const std::uint32_t> args);

 private:
  enum class State : std::uint8_t {
    ground,
    esc,
    csi_leader,
    csi_args,
    csi_intermed,
    string,
    esc_in_string
  };
  enum class StringType : std::uint8_t { osc, dcs };

  // scan() per state: each takes the byte at `pos` (text: the run from there) and reports to
  // `sink`.
  std::size_t scan_text(std::span<const unsigned char> buf, std::size_t pos, Sink& sink);
  void text_continuation(unsigned char c, std::size_t pos, Sink& sink);
  void text_lead(unsigned char c, std::size_t pos, Sink& sink);
  // sink.replace_text, which also writes the U+FFFD that takes a pending single shift.
  void replace(std::size_t at, std::size_t len, Sink& sink);
  // A character of a text run ended at `end` and reached libvterm; `byte` is its only byte
  // when it has one, else 0. Takes the pending single shift, if that character takes it.
  void shifted_character(std::size_t end, unsigned char byte, Sink& sink);
  void control_byte(unsigned char c, std::size_t pos, Sink& sink);
  void escape_byte(unsigned char c, std::size_t pos, Sink& sink);
  void string_byte(unsigned char c, std::size_t pos, Sink& sink);
  void control(unsigned char c);
  void csi_byte(unsigned char c, std::size_t at, Sink& sink);
  void dispatch_csi(std::size_t at, Sink& sink);
  void dispatch_esc(unsigned char final, std::size_t at, Sink& sink);
  void start_string(StringType type);
  void end_string(bool dispatched);

  State state_ = State::ground;
  // Escape sequence being parsed.
  Esc esc_;
  Csi csi_;
  std::uint64_t arg_accum_ = kArgMissing;  // the current argument, as libvterm's long
  int csi_argi_ = 0;                       // index of the current argument (may pass 16)
  // Every argument of an overflowed CSI (up to 256), for encode_sgr.
  std::array<std::uint32_t, 256> all_args_{};
  int all_argc_ = 0;
  // Strings.
  StringType string_type_ = StringType::osc;
  std::string string_prefix_;  // first bytes of an OSC, for classification
  DcsHeader dcs_header_;
  bool fragment_start_ = false;  // only '$' (dropped) seen of the string yet
  // Text.
  int utf8_remaining_ = 0;
  bool utf8_c2_ = false;          // the pending UTF-8 lead byte is 0xC2
  std::uint32_t utf8_cp_ = 0;     // code point being decoded
  std::size_t utf8_lead_at_ = 0;  // offset of that lead byte in the current buffer
  bool in_text_ = false;
  std::size_t text_start_ = 0;
  std::size_t last_split_ = 0;  // last split point reported in this buffer
  bool prev_ascii_ = false;     // previous text byte was printable ASCII
  // Characters of the glyph being printed: its base and the zero-width characters that
  // directly follow it; 0 after anything but text (a zero-width character then starts none).
  int cluster_ = 0;
  int utf8_length_ = 0;          // bytes of the pending UTF-8 character
  std::size_t token_start_ = 0;  // where the sequence being parsed began (see incomplete_from)

  // Modes and sticky flags (see Unmodelled).
  bool autowrap_ = true;
  bool insert_ = false;
  bool lnm_ = false;
  CursorBounds bounds_;
  int gl_set_ = 0;
  char g0_ = 'u';
  char g1_ = 'u';
  char g2_ = 'u';
  char g3_ = 'u';
  int single_shift_ = 0;  // 2 or 3 after SS2 / SS3 until its character (single_shift())
  std::uint32_t sticky_ = 0;
};

}  // namespace backscroll::term
