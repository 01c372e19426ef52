// PlainScrollScan: the mirror's look ahead over bytes it has not parsed yet, to find how much
// of a flood of scrolling text can never be seen again (issue 5; docs/plain-scroll-skip.md).
//
// A plain run is a stretch of the stream made only of printable text (ASCII and UTF-8 bytes),
// CR, LF, TAB, BS (overstrike), SGR (CSI digits/';'/':' m, at most 16 parameters and
// sub-parameters: the mirror reads the colon forms whichever way they come, sgr_effect() models
// none of them), EL (CSI digits K), `ESC ( B` (G0 designated US-ASCII: ncurses' sgr0, `tput sgr0`
// in scripts) and hyperlinks (OSC 8 with printable ASCII parameters and URI, ended by BEL or ST, at
// most kMaxOscBytes: gcc links each warning's option to its manual, `ls --hyperlink` each name).
// Such bytes change the screen's cells, the cursor's column and row, the pen, the last glyph and
// G0, and nothing else (no mode, margin, tab stop, other charset, title, saved cursor, event or
// cell the mirror models: it keeps no link); a target says whether G0 was designated before it
// (Target::designates_g0), for the jump to designate it too. On the main screen, with a full-screen
// scroll region and the cursor on the bottom row, every LF of a plain run scrolls one line into the
// history; once `keep` more LFs have followed a point L, nothing printed before L can be on the
// screen or within the last `keep - rows` history lines.
//
// The scan finds such points ("targets"): L is the start of a line (just after an LF, the
// column known to be 0 because a CR came after the last text), and the line begins with SGR/EL
// bytes and then one glyph g (printable ASCII, or a UTF-8 character from U+00A0 that libvterm
// does not join to the glyph before it) that an ASCII byte, CR, LF or such a character follows
// (a combining mark would join g: docs/plain-scroll-skip.md). The mirror
// may then replace the bytes [its position, after g) by a short equivalent (Mirror::skip_ahead):
// the pen at L, CR, `rows` LFs (the cursor on the bottom row, as it is at L), and the line's
// bytes up to g (so the last glyph, what REP repeats, is the same one at the same cell).
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
// bytes), so the scan reduces it lazily: an SGR is only copied to a queue (a reset empties the
// queue first: nothing before it matters), and the queue is applied to the list at a line start
// that may become a target, or when it grows past kMaxQueuedSgrs. Colored output resets the pen
// several times per line, so most SGRs never reach the table.
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

#include "engine/term/sgr_effect.hpp"
#include "shm/cursor.hpp"

namespace backscroll::term {

class PlainScrollScan {
 public:
  static constexpr std::size_t kMaxSequenceBytes = 64;  // a longer SGR/EL ends the run
  static constexpr std::size_t kMaxOscBytes = 2048;     // a longer hyperlink ends the run
  static constexpr std::size_t kMaxSgrParams = 16;      // libvterm 0.1.4's limit
  // Distinct SGRs a run's pens may refer to at once; more end the run. The table also keeps
  // those no pen refers to until it is full: a palette of up to this many SGRs (syntax
  // highlighting, ls --color) is parsed once per run. 255 until 2026-12-04: colored build output
  // with ~400 distinct SGRs dropped and parsed them again all the time (~10% of the mirror).
  static constexpr std::size_t kMaxDistinctSgrs = 1023;
  using SgrIndex = std::uint16_t;
  static constexpr std::size_t kMaxPrefixBytes = 256;  // SGR/EL bytes before a line's glyph
  // SGRs queued before they are applied to the pen (see above): bounds the queue's memory.
  static constexpr std::size_t kMaxQueuedSgrs = 4096;

  struct Target {
    Cursor line_start;           // L: just after an LF, the column 0
    Cursor end;                  // just after the line's first glyph
    std::uint64_t lfs = 0;       // LFs of the run before line_start
    std::string prefix;          // bytes [line_start, end): SGR/EL (and CR) bytes, then the glyph
    std::vector<SgrIndex> pen;   // SGRs (indices into sgr()) that rebuild the pen at L
    bool designates_g0 = false;  // an `ESC ( B` of the run came before `end`
  };

  // `target_spacing`: at most one target per this many bytes (0: every line).
  explicit PlainScrollScan(std::uint64_t target_spacing = 16 * 1024)
      : target_spacing_(target_spacing) {}

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
  // The SGR sequence (whole, ESC [ ... m) of a pen entry.
  std::string_view sgr(SgrIndex index) const { return sgrs_[index]; }

 private:
  // osc: after `ESC ]`, reading "8;"; osc_body: the link's parameters and URI; osc_st: after
  // an ESC inside it (ST is `ESC \`).
  enum class State : std::uint8_t { ground, escape, csi, designation, osc, osc_body, osc_st };
  // Where the current line stands as a target.
  enum class Line : std::uint8_t {
    none,    // not a candidate (text before, or the column is not known to be 0)
    prefix,  // after an LF at column 0: collecting SGR/EL bytes before the glyph
    glyph,   // the glyph was the last byte: waiting for the byte after it
    first,   // the glyph is a UTF-8 character: decoding it (next_, next_bytes_left_)
    next,    // after the glyph, a UTF-8 character: decoding it (next_, next_bytes_left_)
  };

  void byte(std::uint8_t b);
  // At an ESC in the ground state: the whole sequence when it lies within [p, p + n) (the
  // common case), without copying it; returns the bytes it used, 0 when it goes on past n
  // (byte() then reads it) or ended the run.
  std::size_t sequence_in_place(const std::uint8_t* p, std::size_t n);
  // At an ESC in the ground state with no line tracked: a whole SGR (queued) or EL within
  // [p, p + n) and within the limits; returns its size, or 0 for anything else or when the
  // SGR ended the run (sequence_in_place() then reads it, unless broken()).
  std::size_t sgr_in_place(const std::uint8_t* p, std::size_t n);
  void text(std::uint8_t b);
  // At a control or an ESC after text: settles the line's state (a glyph is a target, a UTF-8
  // character cut short makes none).
  void text_ends();
  // UTF-8 decoding into next_ (Line::first, Line::next): start_character() takes a lead byte
  // (false for one that starts no character); continue_character() a continuation byte: 0 while
  // more must come, 1 for a character that is a glyph of its own (from U+00A0, none libvterm
  // joins to the glyph before), -1 otherwise.
  bool start_character(std::uint8_t lead);
  int continue_character(std::uint8_t b);
  void line_feed();
  // A whole SGR or EL sequence, ESC to final byte, with its count of ';' separators.
  void sequence_end(std::string_view sequence, std::size_t separators);
  // A whole `ESC ( B`.
  void designation_end();
  // A whole hyperlink, ESC to its terminator.
  void hyperlink_end(std::string_view sequence);
  // A sequence of the line's prefix, while the line may become a target (kMaxPrefixBytes).
  void add_to_prefix(std::string_view sequence);
  // An SGR of the run: queued for the pen (see the header comment).
  void queue_sgr(std::string_view sequence);
  // Applies the queued SGRs to pen_, in order, and empties the queue.
  void apply_queued_sgrs();
  // Applies one SGR to pen_ (the reduction the header comment describes).
  void apply_sgr(std::string_view sequence);
  void add_target();
  void brk();

  std::uint64_t target_spacing_;
  Cursor run_start_{0};
  Cursor scanned_{0};
  bool broken_ = false;
  std::uint64_t lfs_ = 0;

  State state_ = State::ground;
  std::string sequence_;  // the SGR/EL/hyperlink being read, from its ESC
  Cursor sequence_start_{0};

  bool column0_ = false;        // a CR came after the last text byte (LF keeps the column)
  bool designated_g0_ = false;  // an `ESC ( B` since run_start_
  Line line_ = Line::none;
  Target pending_;                    // the current line's target while line_ != none
  char32_t next_ = 0;                 // Line::next: the character decoded so far
  std::uint8_t next_bytes_left_ = 0;  // its continuation bytes still to come
  char32_t next_min_ = 0;             // the least code point its length may encode

  // Drops the table entries no pen refers to and renumbers the pens; false when none is free.
  bool compact_sgrs();
  // The table index of `sequence`, added if new; nullopt when the table is full.
  std::optional<SgrIndex> sgr_index(std::string_view sequence);
  // Puts sgrs_[index] in the first free slot of its probe sequence.
  void index_sgr(SgrIndex index);

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
  // The reduced SGR list: with the queue applied, the pen at the scan position.
  std::vector<SgrIndex> pen_;
  // The queue: a reset first when it starts with ESC [ m (0) or ESC [ 0 m (1), else -1; then
  // the sequences after it, back to back.
  std::int8_t queued_reset_ = -1;
  std::string queued_sgrs_;
  std::vector<std::uint8_t> queued_sizes_;  // each one's size (at most kMaxSequenceBytes)
  std::deque<Target> targets_;              // in stream order
};

}  // namespace backscroll::term
