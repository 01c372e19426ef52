// PlainScrollScan: the mirror's look ahead over bytes it has not parsed yet, to find how much
// of a flood of scrolling text can never be seen again (issue 5; docs/plain-scroll-skip.md).
//
// A plain run is a stretch of the stream made only of printable text (ASCII and UTF-8 bytes),
// CR, LF, TAB, BS (overstrike), SGR (CSI digits/';'/':' m, at most 16 parameters and
// sub-parameters: the mirror reads the colon forms whichever way they come, sgr_effect() models
// none of them), EL (CSI digits K), `ESC ( B` (G0 designated US-ASCII: ncurses' sgr0, `tput sgr0`
// in scripts), hyperlinks (OSC 8 with printable ASCII parameters and URI, ended by BEL or ST, at
// most kMaxOscBytes: gcc links each warning's option to its manual, `ls --hyperlink` each name)
// and settings (below). Such bytes change the screen's cells, the cursor's column and row, the
// pen, the last glyph and G0, and nothing else (no margin, tab stop, other charset, saved cursor
// or cell the mirror models: it keeps no link) but what the settings set; a target says whether
// G0 was designated before it (Target::designates_g0), for the jump to designate it too. On the
// main screen, with a full-screen scroll region and the cursor on the bottom row, every LF of a
// plain run scrolls one line into the history; once `keep` more LFs have followed a point L,
// nothing printed before L can be on the screen or within the last `keep - rows` history lines.
//
// Settings set what the scanner and libvterm keep beside the cells, and no cell, cursor or pen:
// window titles (OSC 0, 1, 2), the working directory (OSC 7), shell integration marks (OSC 133,
// 633), each with a payload of printable ASCII and UTF-8 characters from U+00A0, ended by BEL or
// ST; and input and cursor modes (CSI ? Pn h / l, one parameter of kSettingModes: cursor keys,
// cursor blink, cursor shown, numeric keypad, focus reporting, bracketed paste). A shell prompt
// sets a title and marks, a progress line hides the cursor: each ended the run until
// 2026-12-07. The scan keeps each whole (for_each_setting()) for the jump to replay
// (Mirror::skip_ahead).
//
// The scan finds the points L a jump may land on ("targets"): L is the start of a line (just after
// an LF, the column known to be 0 because a CR came after the last text), and the line begins with
// SGR/EL bytes and then one glyph g (printable ASCII, or a UTF-8 character from U+00A0 that
// libvterm does not join to the glyph before it), maybe the combining marks that join it (at
// most kMaxTargetMarks: `✔️` is a check mark and a variation selector), and then an ASCII byte,
// CR, LF or a character that cannot join them (docs/plain-scroll-skip.md). The mirror may then
// replace the bytes [its position, after g and its marks) by a short equivalent
// (Mirror::skip_ahead): the pen at L, CR, `rows` LFs (the cursor on the bottom row, as it is at
// L), and the line's bytes up to there (so the last glyph, what REP repeats and a later mark
// joins, is the same one at the same cell).
//
// The pen at L: SGR only ever overwrites attributes, so the pen at L is the pen at any earlier
// point of the run with every SGR of the run before L applied again in order; an earlier copy
// of the same SGR is redundant, a reset (CSI m, CSI 0 m, CSI 0;... m) makes everything before
// it redundant, and so does a later SGR that sets every part of the pen an earlier one set
// (sgr_effect.hpp: a new truecolor foreground makes the previous one redundant). Each target
// keeps that reduced list, as indices into the run's table of distinct SGRs; when the table is
// full, the entries no list refers to any more are dropped (kMaxDistinctSgrs).
//
// The list is only needed at the lines that may become targets (one per `target_spacing`
// bytes), so the scan reduces it lazily ("folds" it). Between two folds it only checks and
// counts SGRs. A fold (at such a line start, or after kMaxSgrsBetweenFolds SGRs) reads the piece
// backwards from there to the last reset (nothing before it matters) and applies the SGRs from
// it on; at the end of each piece, the SGRs after its last reset that no fold took are copied
// (carried) for the next fold. Colored output resets the pen several times per line, so most
// SGRs are never looked at again and hardly any is copied.
//
// Single-threaded (the mirror thread). Memory: one target per kTargetSpacing bytes of look
// ahead, each with its pen list and line prefix (at most kMaxPrefixBytes).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/byte_masks.hpp"
#include "engine/term/sgr_effect.hpp"
#include "engine/term/utf8.hpp"
#include "shm/cursor.hpp"

namespace backscroll::term {

class PlainScrollScan {
 public:
  static constexpr std::size_t kMaxSequenceBytes = 64;  // a longer SGR/EL ends the run
  static constexpr std::size_t kMaxOscBytes = 2048;  // a longer hyperlink or setting ends the run
  // Bytes of the settings held (from the first not forgotten on); one that would pass it ends
  // the run.
  static constexpr std::size_t kMaxSettingBytes = 1u << 20;
  // The DEC private modes a setting may set: each an independent flag (mouse tracking modes
  // replace one another, so they end the run).
  static constexpr std::array<int, 6> kSettingModes = {1, 12, 25, 66, 1004, 2004};
  static constexpr std::size_t kMaxSgrParams = 16;  // libvterm 0.1.4's limit
  // Distinct SGRs a run's pens may refer to at once; more end the run. The table also keeps
  // those no pen refers to until it is full: a palette of up to this many SGRs (syntax
  // highlighting, ls --color) is parsed once per run. 255 until 2026-12-04: colored build output
  // with ~400 distinct SGRs dropped and parsed them again all the time (~10% of the mirror).
  static constexpr std::size_t kMaxDistinctSgrs = 1023;
  using SgrIndex = std::uint16_t;
  static constexpr std::size_t kMaxPrefixBytes = 256;  // SGR/EL bytes before a line's glyph
  // Combining marks a target's glyph may carry (a check mark and its emoji presentation
  // selector, a letter and its accents): well within the 6 characters libvterm keeps a cell.
  static constexpr int kMaxTargetMarks = 4;
  // SGRs between two folds of the pen at most (see above): bounds the carried copies' memory.
  // Folds happen at the same stream positions however the bytes are split into pieces, so the
  // pens, the table and where a full table ends the run do not depend on the split either.
  static constexpr std::size_t kMaxSgrsBetweenFolds = 4096;

  struct Target {
    Cursor line_start;           // L: just after an LF, the column 0
    Cursor end;                  // just after the line's first glyph (and the marks joining it)
    std::uint64_t lfs = 0;       // LFs of the run before line_start
    std::string prefix;          // bytes [line_start, end): SGR/EL (and CR) bytes, the glyph,
                                 // then the marks that join it
    std::vector<SgrIndex> pen;   // SGRs (indices into sgr()) that rebuild the pen at L
    bool designates_g0 = false;  // an `ESC ( B` of the run came before `end`
  };

  // `target_spacing`: at most one target per this many bytes (0: every line).
  explicit PlainScrollScan(std::uint64_t target_spacing = 16 * 1024)
      : target_spacing_(target_spacing) {}

  // Whether scan() reads 64 bytes at a time where it can (ByteMasks; the default where
  // wide_masks_available()). Off, it reads byte by byte: the reference the tests hold it to.
  void read_in_blocks(bool on) noexcept { blocks_ = on && wide_masks_available(); }
  bool reads_in_blocks() const noexcept { return blocks_; }
  // Whether a block reads all its ESCs at once (the default) or one at a time, the reference
  // the tests hold the first to: both take the same bytes.
  void read_escs_at_once(bool on) noexcept { escs_at_once_ = on; }
  // Bytes the blocks took since the scan was made (the rest went through the byte loop).
  std::uint64_t block_bytes() const noexcept { return block_bytes_; }

  // Starts a run at `at`, which must be a clean boundary of the stream (the parser in ground).
  void restart(Cursor at);
  // Scans the next bytes, [scanned(), scanned() + bytes.size()). Stops at the first byte that
  // ends the run (broken() is then true and further bytes are ignored).
  void scan(std::string_view bytes);

  Cursor run_start() const noexcept { return run_start_; }
  // End of the bytes scanned; once broken(), the end of the run: the byte (or the start of the
  // sequence) that is not plain.
  Cursor scanned() const noexcept { return scanned_; }
  bool broken() const noexcept { return broken_; }
  // LFs seen since run_start().
  std::uint64_t lfs() const noexcept { return lfs_; }

  // The latest target whose line at least `keep` LFs follow within the run and before which at
  // least `rows_before` LFs come after `from` (so the cursor is on the bottom row at L).
  // Targets are only those with line_start >= from.
  const Target* best(Cursor from, std::uint64_t keep, std::uint64_t rows_before) const;
  // Drops targets that start before `at` (the mirror has parsed past them).
  void forget_before(Cursor at);
  // SGRs copied from earlier pieces for the next fold of the pen (at most
  // kMaxSgrsBetweenFolds).
  std::size_t carried_sgrs() const noexcept { return carried_sizes_.size(); }
  // A setting of the run (see the header comment), whole: ESC to its final byte or terminator.
  struct Setting {
    Cursor at;               // its ESC
    std::string_view bytes;  // valid until the next scan(), restart() or forget_before()
  };
  // Calls visit(Setting) for each setting whose ESC lies in [from, to), in stream order.
  template <typename Visit>
  void for_each_setting(Cursor from, Cursor to, Visit&& visit) const {
    for (const HeldSetting& s : settings_) {
      if (s.at >= to) return;
      if (s.at >= from)
        visit(Setting{s.at,
                      std::string_view(setting_bytes_)
                          .substr(static_cast<std::size_t>(s.offset - settings_dropped_), s.size)});
    }
  }

  // The SGR sequence (whole, ESC [ ... m) of a pen entry.
  std::string_view sgr(SgrIndex index) const { return sgrs_[index]; }
  // How many distinct SGRs the run holds now.
  std::size_t distinct_sgrs() const noexcept { return sgrs_.size(); }

 private:
  // osc: after `ESC ]`, reading its number and ';'; osc_body: a link's parameters and URI or a
  // setting's payload (osc_setting_); osc_st: after an ESC inside it (ST is `ESC \`);
  // dec_mode: after `ESC [ ?`.
  enum class State : std::uint8_t {
    ground,
    escape,
    csi,
    dec_mode,
    designation,
    osc,
    osc_body,
    osc_st
  };
  // Where the current line stands as a target.
  enum class Line : std::uint8_t {
    none,    // not a candidate (text before, or the column is not known to be 0)
    prefix,  // after an LF at column 0: collecting SGR/EL bytes before the glyph
    glyph,   // the glyph (or a mark joining it) was the last byte: waiting for the byte after it
    first,   // the glyph is a UTF-8 character: decoding it (next_, next_bytes_left_)
    next,    // after the glyph, a UTF-8 character: decoding it (next_, next_bytes_left_), its
             // bytes in the prefix from next_from_ (a mark stays there)
  };

  void byte(std::uint8_t b);
  // At an ESC in the ground state: the whole sequence when it lies within [p, p + n) (the
  // common case), without copying it; returns the bytes it used, 0 when it goes on past n
  // (byte() then reads it) or ended the run.
  std::size_t sequence_in_place(const std::uint8_t* p, std::size_t n);
  // At an ESC in the ground state with no line tracked: a whole SGR (counted) or EL within
  // [p, p + n) and within the limits; returns its size, or 0 for anything else or when the
  // SGR ended the run (sequence_in_place() then reads it, unless broken()).
  std::size_t sgr_in_place(const std::uint8_t* p, std::size_t n);
  // In the ground state with no line tracked: the bytes at p read 64 at a time (ByteMasks), as
  // the byte loop would read them, up to the first one it leaves to that loop (a control or
  // sequence of another kind, an LF whose line may become a target, the SGR a fold follows,
  // the last bytes short of a block); returns the bytes taken. Only where
  // wide_masks_available().
  std::size_t blocks(const std::uint8_t* p, std::size_t n);
  void text(std::uint8_t b);
  // At a control or an ESC after text: settles the line's state (a glyph is a target, a UTF-8
  // character cut short makes none).
  void text_ends();
  // UTF-8 decoding into next_ (Line::first, Line::next): start_character() takes a lead byte
  // (false for one that starts no character); continue_character() a continuation byte: more
  // while more must come, then glyph for a character that is a glyph of its own (from U+00A0,
  // none libvterm joins to the glyph before), mark for a zero-width character (libvterm joins
  // it to the glyph before), none for anything else.
  enum class Decoded : std::uint8_t { more, glyph, mark, none };
  bool start_character(std::uint8_t lead);
  Decoded continue_character(std::uint8_t b);
  // Whether the line starting at `line_start` (just after an LF) may become a target: the
  // column is known to be 0 there, and it is far enough from the last target.
  bool may_become_target(Cursor line_start) const;
  void line_feed();
  // A whole SGR or EL sequence, ESC to final byte, with its count of ';' separators;
  // `in_piece`: its ESC lies in the piece being scanned (else it was read byte by byte).
  void sequence_end(std::string_view sequence, std::size_t separators, bool in_piece);
  // A whole `ESC ( B`.
  void designation_end();
  // A whole hyperlink, ESC to its terminator.
  void hyperlink_end(std::string_view sequence);
  // A whole setting whose ESC is at `at` (kMaxSettingBytes may end the run there).
  void setting_end(std::string_view sequence, Cursor at);
  // The OSC in sequence_ ended: a setting's or a hyperlink's end.
  void osc_end();
  // A sequence of the line's prefix, while the line may become a target (kMaxPrefixBytes).
  void add_to_prefix(std::string_view sequence);
  // An SGR of the run whose ESC lies in the piece, ending just before `after`: counted.
  void sgr_in_piece(Cursor after);
  // Counts an SGR ending just before `after`, and folds the pen there every
  // kMaxSgrsBetweenFolds.
  void count_sgr(Cursor after);
  // Copies an SGR to the carried ones (a reset drops those first).
  void carry_sgr(std::string_view sequence);
  // Where the SGRs that matter to the pen at piece offset `to` start among those not folded
  // or carried yet: the last reset before `to` (the carried SGRs are then dropped), else the
  // first byte not folded or carried.
  std::size_t unfolded_start(std::size_t to);
  // The whole SGR whose ESC is at piece offset `at`, within [at, to) (a sequence of the bytes
  // for_each_sgr() reads); empty for any other sequence.
  std::string_view sgr_at(std::size_t at, std::size_t to) const;
  // Calls use(sgr) for each whole SGR with its ESC in piece offsets [from, to), in order,
  // until the run breaks. [from, to) holds only what the scan took for plain, its sequences
  // whole: an ESC there starts a sequence or is an OSC's ST (a hyperlink's or a setting's).
  template <typename Use>
  void for_each_sgr(std::size_t from, std::size_t to, Use&& use);
  // At the end of a piece: carries the SGRs no fold took, up to the piece's end (or the start
  // of a sequence that goes on in the next piece).
  void carry_unfolded_sgrs();
  // Applies to pen_ the carried SGRs, then those of the piece before `at` not folded yet: pen_
  // becomes the pen at `at`.
  void fold_pen(Cursor at);
  // Applies one SGR to pen_ (the reduction the header comment describes).
  void apply_sgr(std::string_view sequence);
  void add_target();
  void brk();

  std::uint64_t target_spacing_;
  bool blocks_ = wide_masks_available();
  bool escs_at_once_ = true;
  std::uint64_t block_bytes_ = 0;
  Cursor run_start_{0};
  Cursor scanned_{0};
  bool broken_ = false;
  std::uint64_t lfs_ = 0;

  State state_ = State::ground;
  std::string sequence_;  // the SGR/EL/hyperlink/setting being read, from its ESC
  Cursor sequence_start_{0};
  bool osc_setting_ = false;  // the OSC being read is a setting (else a hyperlink)
  Utf8Check osc_utf8_;        // a setting's payload so far

  // The settings held, in stream order: each one's bytes at [offset - settings_dropped_, + size)
  // of setting_bytes_.
  struct HeldSetting {
    Cursor at;
    std::uint64_t offset;
    std::uint32_t size;
  };
  std::deque<HeldSetting> settings_;
  std::string setting_bytes_;
  std::uint64_t settings_dropped_ = 0;  // bytes dropped from setting_bytes_'s front

  bool column0_ = false;        // a CR came after the last text byte (LF keeps the column)
  bool designated_g0_ = false;  // an `ESC ( B` since run_start_
  Line line_ = Line::none;
  Target pending_;                    // the current line's target while line_ != none
  char32_t next_ = 0;                 // Line::next: the character decoded so far
  std::uint8_t next_bytes_left_ = 0;  // its continuation bytes still to come
  std::size_t next_from_ = 0;         // Line::next: where its bytes start in pending_.prefix
  int marks_ = 0;                     // marks joined to the line's glyph so far
  char32_t next_min_ = 0;             // the least code point its length may encode

  // Drops the table entries no pen refers to and renumbers the pens; false when none is free.
  bool compact_sgrs();
  // The table index of `sequence`, added if new; nullopt when the table is full.
  std::optional<SgrIndex> sgr_index(std::string_view sequence);
  // Puts sgrs_[index] in the first free slot of its probe sequence.
  void index_sgr(SgrIndex index);
  // Empties the table and its slots.
  void clear_sgrs();

  std::vector<std::string> sgrs_;     // distinct SGR sequences of the run
  std::vector<SgrEffect> effects_;    // sgr_effect() of each
  std::vector<std::uint8_t> resets_;  // of each: whether it sets the whole pen again
  // sgrs_'s entries by sequence: open addressing with linear probing over a power-of-two
  // table at most half full (entries are only added, or all rebuilt by compact_sgrs()).
  struct SgrSlot {
    std::uint16_t index_plus_1 = 0;  // 0: free
    std::uint16_t tag = 0;           // the hash's top bits: most mismatches need no compare
  };
  static constexpr std::size_t kSgrSlots = 2048;
  static_assert(kSgrSlots >= 2 * kMaxDistinctSgrs && (kSgrSlots & (kSgrSlots - 1)) == 0);
  std::array<SgrSlot, kSgrSlots> sgr_slots_{};
  // The table indices of ESC [ m and ESC [ 0 m once looked up (-1: not yet, or renumbered).
  std::array<std::int16_t, 2> reset_index_{-1, -1};
  // The reduced SGR list. Invariant: pen_, then the carried SGRs, then the SGRs whose ESC lies
  // in [unfolded_from_, the scan position) applied in order give the pen at the scan position;
  // unfolded_sgrs_ counts the last ones, all in the current piece.
  std::vector<SgrIndex> pen_;
  std::string carried_sgrs_;                 // back to back
  std::vector<std::uint8_t> carried_sizes_;  // each one's size (at most kMaxSequenceBytes)
  Cursor unfolded_from_{0};
  std::size_t unfolded_sgrs_ = 0;
  std::size_t sgrs_since_fold_ = 0;
  // The piece scan() is reading (only during the call) and its position in the stream.
  const std::uint8_t* piece_ = nullptr;
  Cursor piece_start_{0};
  std::deque<Target> targets_;  // in stream order
};

}  // namespace backscroll::term
