// VtScanner: an incremental parser for the raw output stream of one actor, run by the mirror
// thread ahead of libvterm (docs/snapshot.md). It finds the clean boundaries where libvterm may be
// stopped and a snapshot tagged, tracks the modes libvterm 0.1.4 does not expose (TerminalModes),
// the title, and output a snapshot cannot reproduce. Every position is a Cursor: an absolute byte
// count in the actor's stream (the scanner starts at the cursor it is given). One scanner per
// actor, used by one thread. Pure C++, no libvterm: docs/vt-scanner.md has the rules, the
// measured libvterm facts and the departures.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/dcs_header.hpp"
#include "engine/term/terminal_modes.hpp"
#include "shm/cursor.hpp"

namespace backscroll::term {

// A point of interest the last scan() passed, in stream order. `end` is the position just after
// the sequence (where the mirror stops libvterm to look at it), `begin` the position of its first
// byte. `modes` are the modes in effect at `end`.
enum class MarkKind : std::uint8_t {
  save_cursor,          // ESC 7 (DECSC)
  restore_cursor,       // ESC 8 (DECRC)
  save_cursor_sco,      // CSI s while DECLRMM is off (SCOSC); libvterm 0.1.4 does not save here
  restore_cursor_sco,   // CSI u (SCORC); libvterm 0.1.4 ignores it
  save_cursor_1048,     // CSI ? 1048 h
  restore_cursor_1048,  // CSI ? 1048 l
  enter_alt_1049,       // CSI ? 1049 h: saves the cursor, then enters the alternate screen
  leave_alt_1049,       // CSI ? 1049 l
  soft_reset,           // DECSTR CSI ! p: libvterm 0.1.4 ignores it (measured)
  hard_reset,           // RIS ESC c: libvterm 0.1.4 keeps the alternate screen and mouse mode
  // SM/RM/DECSET/DECRST libvterm 0.1.4 applies differently from xterm: it applies only the first
  // parameter (measured; none at all if the CSI overflowed, below), and it ignores ?47.
  // Re-apply the parameters one by one.
  mode_fixup,
  // libvterm 0.1.4 writes past its 16-entry argument array, and crashes, on a CSI with 17 or more
  // parameters (measured). `begin == end` is the separator that would start the 17th: feed
  // libvterm the bytes before it, then one CAN (0x18), which returns its parser to ground.
  libvterm_overflow,
  // [begin, end): bytes of that CSI the mirror must not feed to libvterm. One CSI may give several
  // ranges: a C0 control inside it is executed by libvterm and stays outside the ranges.
  libvterm_skip,
};

struct Mark {
  Cursor begin;
  Cursor end;
  MarkKind kind;
  TerminalModes modes;

  bool operator==(const Mark&) const = default;
};

// What a scan() reports as it reads it, in stream order (as vte's Perform does): for a consumer
// that needs every title set and every bell, where the totals after a scan() call would merge
// two of them. `after` is the cursor just past the byte that caused the event. Handlers run
// inside scan(), which is noexcept: they must not throw.
class VtEvents {
 public:
  // A title set (OSC 0/2, CSI 23 t), also to the same text: the title it leaves (title()).
  virtual void on_title(std::string_view title, Cursor after) noexcept = 0;
  // BEL executed as a control (not one that ends an OSC or DCS).
  virtual void on_bell(Cursor after) noexcept = 0;
  // A shell integration mark: OSC 133 (FinalTerm) or OSC 633 (VS Code) with A (the prompt
  // starts), B (the prompt ends, the command line follows), C (the command runs: its output
  // follows) or D (it ended; `exit_status` when the shell gave one as "D;N").
  virtual void on_shell_mark(char /*mark*/, std::optional<int> /*exit_status*/,
                             Cursor /*after*/) noexcept {}
  // The terminal may have switched screens: DECSET or DECRST with 47, 1047 or 1049 among its
  // parameters, or RIS (which leaves the alternate screen in xterm). [begin, after) is the
  // sequence.
  virtual void on_screen_switch(Cursor /*begin*/, Cursor /*after*/) noexcept {}

 protected:
  ~VtEvents() = default;
};

class VtScanner {
 public:
  // A partial sequence longer than this stops being held back: feed_limit() moves past it.
  // 4 KiB covers every ordinary control sequence and title; longer ones are clipboard (OSC 52),
  // graphics or garbage, none of which libvterm 0.1.4 draws from (docs/vt-scanner.md).
  static constexpr std::uint64_t kMaxHoldBytes = 4096;
  static constexpr std::size_t kMaxTitleBytes = 256;
  // Parameters kept per CSI (xterm.js keeps 32); further ones are parsed and dropped.
  static constexpr std::size_t kMaxParams = 32;
  // libvterm 0.1.4's CSI_ARGS_MAX.
  static constexpr std::uint32_t kLibvtermMaxArgs = 16;
  // Titles pushed with CSI 22 t (xterm.js's limit).
  static constexpr std::size_t kTitleStackDepth = 10;
  // Upper bound of buffered_bytes(): the title being collected and the OSC prefix kept to classify
  // it. Constant however long the input.
  static constexpr std::size_t kOscPrefixBytes = 32;
  static constexpr std::size_t kMaxBufferedBytes = kMaxTitleBytes + kOscPrefixBytes;

  // `start`: the cursor of the first byte scan() will see. `cols`, `rows`: the screen size
  // (clamped to at least 1), needed for DECSTBM and DECSLRM.
  VtScanner(Cursor start, std::uint16_t cols, std::uint16_t rows);

  // Scans the next bytes of the stream. Any split of the stream into scan() calls gives the same
  // state, the same clean_position() at equal positions and the same marks (libvterm_skip ranges
  // may be cut at scan boundaries). Forgets the marks of the previous call.
  void scan(std::string_view bytes) noexcept;

  // The PTY was resized after the bytes scanned so far (libvterm's rule: an explicit scroll
  // region or margin is clamped to the new size; a full-screen one stays full-screen).
  void resize(std::uint16_t cols, std::uint16_t rows) noexcept;

  // Moves to `to` as if it had scanned [position(), to): bytes of a plain run that ends just
  // after a printable ASCII character (PlainScrollScan), which change nothing the scanner
  // tracks but G0 (`designates_g0`: an `ESC ( B` among them). A sequence of the run left
  // unfinished at position() ends inside those bytes.
  void skip_plain(Cursor to, bool designates_g0 = false) noexcept;
  // Moves to `to` as if it had scanned [position(), to) from a clean boundary: whole tokens of
  // the mirror's fast path (grid_fast_path.hpp), of which only `settings` change what the
  // scanner keeps (DECSTBM, DECTCEM, the cursor's blink, `ESC ( B`, each whole; none marks or
  // reports an event, and each kind sets what it sets whatever the others did, so their order
  // does not matter); `text`: a character was among them; `restored_cursor`: a DECRC was (the
  // cursor's style is then libvterm's reading again, as mark() notes). Forgets the marks of the
  // last scan().
  void skip_fast(Cursor to, std::string_view settings, bool text,
                 bool restored_cursor = false) noexcept;

  // Continues at `at` as if the stream so far had ended there: every position moves, the
  // state (modes, title, bells) stays. Only at a clean boundary with nothing held (false,
  // unchanged, otherwise): a mirror rebuilt elsewhere takes over an actor's stream.
  bool rebase(Cursor at) noexcept;

  // Events from now on go to `events` (null: none). The scanner does not own it.
  void set_events(VtEvents* events) noexcept { events_ = events; }

  // Forgets the unmodelled reason (the engine cleared the actor's history).
  void clear_unmodelled() noexcept { unmodelled_ = nullptr; }

  // End of the bytes scanned so far.
  Cursor position() const noexcept { return position_; }
  // The latest position p <= position() where the stream is at a clean boundary: the parser in
  // ground state and no UTF-8 character pending. Snapshots are tagged only with such positions.
  Cursor clean_position() const noexcept { return clean_position_; }
  bool at_clean_boundary() const noexcept { return clean_position_ == position_; }
  // How far the mirror may feed libvterm: clean_position() while the pending partial sequence is
  // at most kMaxHoldBytes long, else (nearly) everything scanned, so an endless string never
  // stalls the engine. libvterm is then inside a sequence: no snapshot may be taken until it has
  // been fed up to a later clean_position(). The mirror feeds [fed, feed_limit()) except the
  // libvterm_skip ranges, and adds a CAN at each libvterm_overflow mark.
  Cursor feed_limit() const noexcept;
  // How many held sequences had outgrown kMaxHoldBytes when a scan() ended.
  std::uint64_t oversized_sequences() const noexcept { return oversized_sequences_; }

  // The marks of the last scan(), in stream order; each `end` is <= feed_limit().
  std::span<const Mark> marks() const noexcept { return marks_; }

  const TerminalModes& modes() const noexcept { return modes_; }
  // The window title from OSC 0/2 (and CSI 23 t) as of clean_position(): valid UTF-8, no
  // control characters, at most kMaxTitleBytes. Kept across RIS. A title set past the clean
  // position (an OSC ended by the ESC of a sequence not complete yet) counts from the next
  // clean boundary on, as libvterm, held back to the clean position, has not seen it either.
  std::string_view title() const noexcept { return title_unsettled_ ? settled_title_ : title_; }
  // Titles pushed with CSI 22 t and not popped yet (at most kTitleStackDepth). A snapshot does
  // not carry them (docs/snapshot.md, "Known limitations").
  std::size_t title_stack_depth() const noexcept { return title_stack_size_; }
  // Counts every title set, also to the same text.
  std::uint64_t title_changes() const noexcept { return title_changes_; }
  // A single shift (SS2, SS3) came and no character since: the next one is decoded by G2 or G3,
  // whatever they hold by then. A snapshot cannot carry that (Mirror::snapshot falls back).
  bool single_shift_waiting() const noexcept { return shift_waiting_; }
  // BEL executed as a control (not the BEL that ends an OSC or DCS).
  std::uint64_t bells() const noexcept { return bells_; }

  // Why a snapshot cannot reproduce the stream ("dcs", "apc_graphics", ...: the list is in
  // docs/vt-scanner.md). The first reason stays until RIS or clear_unmodelled().
  std::optional<std::string_view> unmodelled_reason() const noexcept;

  // Bytes held inside the scanner; never more than kMaxBufferedBytes.
  std::size_t buffered_bytes() const noexcept { return title_len_ + osc_prefix_len_; }

 private:
  enum class State : std::uint8_t {
    ground,
    escape,
    csi_entry,
    csi_param,
    csi_intermediate,
    osc,
    dcs,
    sos_pm_apc,
    string_escape,  // ESC inside a string: ST if a backslash follows
  };
  enum class StringKind : std::uint8_t { osc, dcs, sos, pm, apc };
  enum class Terminator : std::uint8_t { st, bel, esc_other };

  void step(std::uint8_t byte) noexcept;
  void ground_byte(std::uint8_t byte) noexcept;
  void escape_byte(std::uint8_t byte) noexcept;
  void csi_byte(std::uint8_t byte) noexcept;
  void string_byte(std::uint8_t byte) noexcept;
  void execute(std::uint8_t control) noexcept;
  void enter_escape(Cursor esc_position) noexcept;
  void enter_string(StringKind kind) noexcept;
  void end_string(Terminator how) noexcept;
  void drop_string() noexcept;
  void to_ground() noexcept;

  void esc_dispatch(std::uint8_t final) noexcept;
  void csi_dispatch(std::uint8_t final) noexcept;
  void csi_end(Cursor skip_until) noexcept;
  void set_mode(std::int32_t mode, bool on) noexcept;
  void set_dec_mode(std::int32_t mode, bool on) noexcept;
  void set_scroll_region() noexcept;
  std::int32_t libvterm_param(std::uint32_t i) const noexcept;
  void set_margins() noexcept;
  void soft_reset() noexcept;
  void hard_reset() noexcept;
  void osc_dispatch() noexcept;
  void shell_mark(std::string_view payload) noexcept;
  void dcs_dispatch(Terminator how) noexcept;
  void title_byte(std::uint8_t byte) noexcept;
  void title_codepoint(std::uint32_t cp) noexcept;
  void set_title(std::string_view title) noexcept;
  void unmodelled(const char* reason) noexcept;
  void mark(MarkKind kind, Cursor begin, Cursor end) noexcept;
  void flush_skip(Cursor up_to) noexcept;

  // Stream positions. `position_` is the position of the byte being stepped while inside scan().
  Cursor position_;
  Cursor clean_position_;
  // Moves clean_position_; a title set before it now counts (title()).
  void set_clean_position(Cursor at) noexcept {
    clean_position_ = at;
    title_unsettled_ = false;
  }
  std::uint64_t oversized_sequences_ = 0;
  Cursor oversized_counted_for_;  // the clean_position_ whose hold was last counted

  std::uint16_t cols_;
  std::uint16_t rows_;
  TerminalModes modes_;
  char g2_ = 'B';
  char g3_ = 'B';
  std::uint8_t gl_ = 0;  // locking shift: GL = G0..G3 (shift_out is gl_ == 1)
  // SS2 or SS3 came and no text since: libvterm decodes the next character by G2 / G3.
  bool shift_waiting_ = false;
  // GL holds DEC graphics or UK (G0 or G1 in it): ASCII draws otherwise than by G2 / G3's set.
  bool gl_draws_a_table() const noexcept {
    const char set = gl_ == 1 ? modes_.g1 : modes_.g0;
    return gl_ <= 1 && (set == '0' || set == 'A');
  }
  // A single shift waiting while GL holds such a table: a snapshot (which has no single shift)
  // would draw the shifted character by the table.
  void check_waiting_shift() noexcept;

  State state_ = State::ground;
  std::uint8_t utf8_remaining_ = 0;  // continuation bytes still expected (libvterm's lengths)
  Cursor seq_begin_;                 // first byte (ESC) of the sequence being parsed

  // ESC and CSI intermediates: the first one and how many (only single ones are dispatched).
  std::uint8_t intermediate_ = 0;
  std::uint32_t intermediate_count_ = 0;
  // CSI: leader byte (< = > ?) and count, parameters (-1 = missing), which ones follow a ':'.
  std::uint8_t leader_ = 0;
  std::uint32_t leader_count_ = 0;
  std::array<std::int32_t, kMaxParams> params_{};
  std::array<std::uint64_t, 2> libvterm_params_{};  // libvterm's value of parameters 0 and 1
  std::uint32_t sub_params_ = 0;                    // bit i: parameter i was introduced by ':'
  std::uint32_t param_count_ = 0;     // parameters started, saturating; libvterm's argument count
  bool libvterm_overflowed_ = false;  // this CSI passed libvterm's 16 arguments
  Cursor skip_from_;                  // start of the pending libvterm_skip range

  // Strings.
  StringKind string_kind_ = StringKind::osc;
  bool string_has_payload_ = false;
  // OSC: the number before ';' (-1 = none or not a number) and whether ';' was seen.
  std::int32_t osc_number_ = -1;
  bool osc_in_number_ = false;
  bool osc_semicolon_ = false;
  std::array<char, kOscPrefixBytes> osc_prefix_{};
  std::size_t osc_prefix_len_ = 0;
  DcsHeader dcs_header_;

  // The title being collected from an OSC 0/2 payload: sanitized UTF-8, decoded on the fly.
  // While a title set after clean_position_ is not settled: the one before it (title()).
  std::string settled_title_;
  bool title_unsettled_ = false;
  std::array<char, kMaxTitleBytes> title_buf_{};
  std::size_t title_len_ = 0;
  bool title_full_ = false;
  std::uint32_t title_cp_ = 0;
  std::uint8_t title_need_ = 0;
  std::uint8_t title_total_ = 0;

  std::string title_;
  std::uint64_t title_changes_ = 0;
  std::array<std::string, kTitleStackDepth> title_stack_;
  std::size_t title_stack_size_ = 0;
  std::uint64_t bells_ = 0;
  VtEvents* events_ = nullptr;

  const char* unmodelled_ = nullptr;
  std::vector<Mark> marks_;  // released by the last scan()
  // Marks past feed_limit() (inside a held sequence), released once feed_limit() passes them.
  // Bounded: a held sequence is at most kMaxHoldBytes long.
  std::vector<Mark> pending_marks_;
};

}  // namespace backscroll::term
