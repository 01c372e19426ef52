// GridFastPath: the bytes full-screen programs redraw with, applied straight to a ScreenGrid as
// libvterm 0.1.4's parser and state layer apply them through MirrorScreen's callbacks
// (docs/fast-path.md). A redraw is almost only printable ASCII, CR, LF, BS, SGR, cursor
// addressing (CUU CUD CUF CUB CNL CPL CHA CUP HVP VPA HPA HPR VPR), HT, erasing (EL, ED 0-2,
// ECH) and scrolling (DECSTBM, IL, DL, SU, SD, RI):
// libvterm spends tens of nanoseconds per byte on them, this a few. UTF-8 characters (box
// drawing, bullets, accented letters, CJK, emoji) are text too, with their widths from
// wide_chars.hpp; so are `ESC ( B` while G0 holds US-ASCII already, EL 0 at a pending wrap
// (which erases nothing: State::elided_erases), the cursor's visibility (DECTCEM), its
// blink (mode 12) and synchronized output (mode 2026) that TUIs set around every frame,
// DECSC / DECRC around a status line (apt's progress bar; State::Save), and hyperlinks (OSC 8,
// which change nothing libvterm or the mirror keeps).
//
// A glyph and the zero-width characters after it (combining accents, U+FE0F after an emoji,
// ZWJ, the vowel signs of Indic scripts) go into its cell together, as libvterm joins them
// within a write: up to kVtermCellChars characters a cell.
//
// run() applies the longest prefix of whole such tokens it can apply exactly and stops before
// anything else: another control or sequence, a zero-width character that follows no glyph of
// the run, a C1 control, malformed or unfinished UTF-8, a glyph that libvterm or the mirror
// would join otherwise (more than kVtermCellChars - 1 zero-width characters after it, whose
// cell the mirror extends beyond libvterm's; U+302A-F and U+3099-A, which libvterm joins
// differently at a write's start than within one; marks after an ASCII glyph where GL holds a
// table, which libvterm decodes in two pieces; the start of a character not complete yet),
// a sequence with a leader, an
// intermediate, a sub-parameter, more than 16 arguments or a value past 65535, an SGR attribute
// it does not know or a colour form libvterm reads otherwise than xterm.js (the mirror rewrites
// those), a pending wrap before an LF, BS or erase, an unfinished sequence at the end, and
// anything that depends on the pending wrap while that is not known. What it stopped before
// goes to libvterm, whose own state (cursor, pending wrap, pen, the glyph REP repeats)
// MirrorScreen::feed_fast first brings to where the fast path left it.
//
// Preconditions (MirrorScreen::fast_path_modes and fast_path_ready): DECOM, IRM, LNM, DECLRMM
// and margins off; no line attributes (DECDWL/DECDHL) nor DECSCA ever used; GL holds UTF-8 or
// US-ASCII (both read printable ASCII as itself, and libvterm decodes bytes from 0x80 by its
// own UTF-8 decoder under either); libvterm in ground state with nothing held.
// Single-threaded, no state between runs: everything it needs and changes is in State.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/term/grid_cell.hpp"

namespace backscroll::term {

class ScreenGrid;

class GridFastPath {
 public:
  // The parts of libvterm's pen an SGR may set, each whole (the value an SGR gives a part does
  // not depend on the pen before it: libvterm's bold_is_highbright, which ties bold to the
  // foreground, stays off in the mirror).
  enum PenPart : std::uint16_t {
    kPartBold = 1u << 0,
    kPartItalic = 1u << 1,
    kPartUnderline = 1u << 2,
    kPartBlink = 1u << 3,
    kPartReverse = 1u << 4,
    kPartStrike = 1u << 5,
    kPartFont = 1u << 6,
    kPartForeground = 1u << 7,
    kPartBackground = 1u << 8,
    kAllPenParts = (1u << 9) - 1,
  };

  // The SGRs of a run that libvterm needs, in the order they came: reading them leaves
  // libvterm's pen where the grid's is. A reset (attribute 0 or missing) sets every part and
  // empties the log; one that sets no part of libvterm's pen (faint, conceal, overline: the
  // mirror's own extras) never enters it; and an SGR is dropped once later ones set every part
  // of libvterm's pen it set (the pen is then the same without it), when the log fills and
  // when it is written out. So output that ends each span with `CSI 39 m` or `CSI 22 m`
  // instead of a reset (chalk, Node's util.inspect, pygments) runs on: until 2026-12-07 a full
  // log ended the run and libvterm read all 256 SGRs again (pygments' output cost the mirror 4.6
  // ms/MB in process, 2.1 now). Views of the run's bytes, valid while those are (a run meets an
  // SGR every few bytes of a redraw: nothing is copied until the caller writes them out).
  class SgrLog {
   public:
    static constexpr std::size_t kMaxEntries = 256;
    void clear() { count_ = 0; }
    // `parts`: the PenPart bits the SGR sets.
    void append(std::span<const unsigned char> sgr, std::uint16_t parts) {
      if (parts == 0) return;
      if (parts == kAllPenParts) count_ = 0;  // a reset: redraws print one every few bytes
      if (count_ == kMaxEntries) compact();   // leaves at most one entry per part
      entries_[count_++] = {sgr.data(), static_cast<std::uint32_t>(sgr.size()), parts};
    }
    // Appends another log's SGRs, which come after this one's.
    void append(const SgrLog& later) {
      for (std::size_t i = 0; i < later.count_; ++i)
        append({later.entries_[i].data, later.entries_[i].size}, later.entries_[i].parts);
    }
    std::size_t size() const noexcept { return count_; }
    // Drops the entries whose every part a later one sets.
    void compact() {
      std::uint16_t later = 0;  // the parts set by the entries after the one looked at
      std::size_t kept = count_;
      for (std::size_t i = count_; i-- > 0;) {
        if ((entries_[i].parts & ~later) == 0) continue;
        later |= entries_[i].parts;
        entries_[--kept] = entries_[i];
      }
      std::copy(entries_.begin() + static_cast<std::ptrdiff_t>(kept),
                entries_.begin() + static_cast<std::ptrdiff_t>(count_), entries_.begin());
      count_ -= kept;
    }
    void write_to(std::string& out) {
      compact();
      for (std::size_t i = 0; i < count_; ++i)
        out.append(reinterpret_cast<const char*>(entries_[i].data), entries_[i].size);
    }

   private:
    struct Entry {  // no initializers: a run's state is made for every run, left unset
      const unsigned char* data;
      std::uint32_t size;
      std::uint16_t parts;
    };
    std::array<Entry, kMaxEntries> entries_;  // [0, count_) set
    std::size_t count_ = 0;
  };

  struct State {
    // The terminal, as libvterm has it (a run changes only the region, with DECSTBM).
    int rows = 0;
    int cols = 0;
    int region_top = 0;     // scroll region: rows [region_top, region_bottom)
    int region_bottom = 0;  // exclusive
    // The last DECSTBM the run took, as it came (empty: none), for libvterm to read again (the
    // normalised region would not do: `CSI 1 ; rows r` is the whole screen to libvterm, whose
    // bottom then follows resizes, while `CSI 1 ; rows + 1 r` keeps an explicit bottom), and
    // the bottom it left as libvterm's scrollregion_bottom holds it (-1: the last row, whatever
    // the size), for the caller to set where it keeps the region.
    std::string_view region_sequence;
    int region_bottom_set = -1;
    bool autowrap = true;
    // GL holds libvterm's UTF-8 decoder, which reads printable ASCII and the zero-width
    // characters after it in one piece (a table hands the UTF-8 decoder the marks apart).
    bool gl_utf8 = false;
    // G0 holds libvterm's US-ASCII table: `ESC ( B` designates it again, which changes nothing
    // (the table has no state), so a run goes on past it. ncurses prints one with every sgr0.
    bool g0_ascii = false;
    bool designated_g0 = false;  // the run took an `ESC ( B`
    // The tab stops are libvterm's first ones, every eighth column (no HTS or TBC since the
    // last reset): HT is then a move the run can make.
    bool default_tabs = false;
    // The cursor, changed by a run.
    int row = 0;
    int col = 0;
    bool pending_wrap = false;  // libvterm's at_phantom, when wrap_known
    // Whether the caller knows at_phantom (libvterm keeps it to itself, and keeps it through a
    // DECAWM reset, a REP that does not move, a resize). Until a cursor move sets it, a run
    // takes only sequences that leave the cursor (SGRs, `ESC ( B`, DECTCEM, modes 12 and 2026).
    bool wrap_known = true;
    std::uint32_t pen_extras = 0;  // MirrorInput::kPen* bits (also in the grid's pen)
    // What the run did, for the caller to bring libvterm up to date.
    bool text_last = false;  // the last token applied was text
    // It printed a glyph: the last one is last_char, last_width columns at (last_row, last_col).
    bool printed = false;
    int last_row = 0;
    int last_col = 0;
    int last_width = 1;
    char32_t last_char = 0;  // its base character
    // The zero-width characters libvterm joined to it in its cell: [0, last_mark_count).
    int last_mark_count = 0;
    std::array<char32_t, kVtermCellChars - 1> last_marks;
    SgrLog sgr_log;
    // The byte ranges [begin, end) of the EL 0s it took at a pending wrap. The mirror follows
    // xterm.js there (MirrorScreen: the cursor is one past the last column, so nothing is
    // erased and the wrap stays pending) and libvterm never reads them (where it would, the
    // mirror writes CAN instead).
    std::vector<std::pair<std::size_t, std::size_t>> elided_erases;
    // The last DECTCEM it took (`CSI ? 25 h` 1, `CSI ? 25 l` 0; -1 none): libvterm reads it
    // again. It also takes `CSI ? 2026 h` / `l` (synchronized output), which libvterm 0.1.4
    // ignores.
    int cursor_visible = -1;
    // The last `CSI ? 12 h/l` (the cursor's blink) it took, the same way (-1 none).
    int cursor_blink = -1;
    // DECSC (`ESC 7`) saves, and DECRC (`ESC 8`) restores, the cursor's place, the pen and the
    // cursor's visibility and blink (and shape, which no run changes), in libvterm's one slot.
    // A run takes every DECSC; a DECRC only after its own DECSC (libvterm's slot holds what an
    // earlier save left otherwise), with the pending wrap known, and with no DECTCEM or blink
    // change between the two (what the scanner keeps of those does not follow a restore).
    struct Save {
      int row;
      int col;
      GridPen pen;               // the grid's, extras included
      std::uint32_t pen_extras;  // MirrorInput::kPen* bits
      int cursor_visible;        // as in State: the run's last DECTCEM before it, or -1
      int cursor_blink;
    };
    bool saved = false;  // the run took a DECSC: `save` holds the last one
    Save save;
    // The SGRs that rebuild the saved pen from libvterm's at the run's start (sgr_log goes on
    // from the saved pen): the caller brings libvterm to the save and saves there first.
    SgrLog saved_sgrs;
    bool modes_since_save = false;  // a DECTCEM or blink change came after the last DECSC
    // The run took a DECRC (or the caller says one came before it, with nothing between that
    // the scanner has read): it takes no blink change after it.
    bool restored = false;
  };

  // The grid's pen attribute bits for MirrorInput::kPen* extras (faint, conceal, overline).
  static std::uint32_t extra_attrs(std::uint32_t extras);

  // Applies the longest prefix of `bytes` made of whole tokens of the subset to `grid` and
  // `state`; returns its length.
  static std::size_t run(ScreenGrid& grid, std::span<const unsigned char> bytes, State& state);
};

}  // namespace backscroll::term
