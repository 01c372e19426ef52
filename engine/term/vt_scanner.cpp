// VtScanner: follows Paul Williams' DEC ANSI parser state diagram
// (https://vt100.net/emu/dec_ansi_parser), as alacritty's vte does, with UTF-8 decoding in ground.
// It runs on the mirror thread, one per actor, and works on absolute stream positions (cursors).
// Its job is to agree with libvterm 0.1.4, the mirror's emulator, on where the parser is in ground
// state; so where libvterm's parser differs from the diagram, this file follows libvterm (every
// libvterm behaviour cited here was measured against the installed 0.1.4, see docs/vt-scanner.md):
//  - 8-bit C1 bytes (0x80-0x9F) are never controls (libvterm in UTF-8 mode): in ground they are
//    UTF-8 continuation bytes, inside a string they are content (0x9C is not ST), elsewhere below.
//  - C0 controls are executed in every state, strings included (libvterm executes them and drops
//    them from the string), except ESC, CAN, SUB, and BEL where BEL ends an OSC or DCS.
//    NUL and DEL are ignored everywhere.
//  - No csi_ignore state: a byte that cannot continue a CSI (a leader after a parameter, a
//    parameter after an intermediate, any byte >= 0x80) ends it at once without dispatch, and is
//    consumed.
//  - Bytes >= 0x80 in the escape states are ignored (libvterm stays in its escape state).
//  - ESC [, ESC ] and ESC P start CSI, OSC and DCS even after escape intermediates (ESC ( [).
//  - BEL ends a DCS as well as an OSC. The DCS sub-states collapse into one string state that
//    reads the header (parameters, intermediates, final byte) only to classify the DCS.
//  - An OSC is dispatched when BEL, ST or an ESC followed by anything ends it (xterm.js and the
//    diagram; libvterm needs exactly ST or BEL, but the title is ours, not libvterm's); CAN and
//    SUB abandon it.
//  - SOS, PM and APC are strings here as in the diagram; libvterm 0.1.4 has no such states and
//    prints their payload as text, which is why they are reported as unmodelled.
//  - UTF-8 uses libvterm's lead lengths (0xC0-0xDF: 2 bytes ... 0xFC-0xFD: 6), so a character
//    holds back at most 5 bytes; any byte that is not a continuation ends a partial character
//    (libvterm keeps it across controls and sequences; that would make the hold unbounded).
#include "engine/term/vt_scanner.hpp"

#include "engine/term/text_run.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

namespace backscroll::term {
namespace {

constexpr std::uint8_t kBel = 0x07;
constexpr std::uint8_t kSo = 0x0e;
constexpr std::uint8_t kSi = 0x0f;
constexpr std::uint8_t kCan = 0x18;
constexpr std::uint8_t kSub = 0x1a;
constexpr std::uint8_t kEsc = 0x1b;
constexpr std::uint8_t kDel = 0x7f;
constexpr std::int32_t kMissing = -1;
// Parameters saturate here: above any screen size or mode number (xterm clamps likewise).
constexpr std::int32_t kParamMax = 65535;
constexpr std::int32_t kOscNumberMax = 1'000'000;
constexpr std::uint32_t kReplacement = 0xFFFD;

// OSC numbers a snapshot may ignore: they draw nothing into cells and change neither how later
// bytes are drawn nor how keys are encoded. Titles (0/1/2) are tracked; colours (4, 5, 10-19 and
// their resets) change the palette, not the cells; 7/8/9/133/633/777/1337 are shell integration,
// hyperlinks and notifications; 22 is the pointer shape; 52 the clipboard (never replayed).
bool harmless_osc(std::int32_t n) noexcept {
  switch (n) {
    case 0:
    case 1:
    case 2:
    case 4:
    case 5:
    case 7:
    case 8:
    case 9:
    case 22:
    case 52:
    case 104:
    case 105:
    case 133:
    case 633:
    case 777:
    case 1337: return true;
    default: return (n >= 10 && n <= 19) || (n >= 110 && n <= 119);
  }
}

bool starts_with(std::string_view text, std::string_view prefix) noexcept {
  return text.substr(0, prefix.size()) == prefix;
}

// Not allowed in a title: C0, DEL, C1, bidirectional overrides and isolates, line separators.
bool title_control(std::uint32_t cp) noexcept {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

std::uint8_t utf8_continuations(std::uint8_t lead) noexcept {
  if (lead < 0xc0) return 0;
  if (lead < 0xe0) return 1;
  if (lead < 0xf0) return 2;
  if (lead < 0xf8) return 3;
  if (lead < 0xfc) return 4;
  if (lead < 0xfe) return 5;
  return 0;  // 0xFE, 0xFF: invalid on their own
}

std::uint16_t at_least_one(std::uint16_t n) noexcept { return n == 0 ? 1 : n; }

// libvterm 0.1.4's DECSTBM / DECSLRM rule (measured): `first`, `second` are the raw arguments
// (kMissing when absent), `size` the rows or columns. Returns {start, end} with end exclusive
// and 0 meaning "to the edge": a full-screen region is stored as 0 only when given as exactly
// 1;size, an invalid one (end <= start) resets to the full screen.
std::pair<std::uint16_t, std::uint16_t> libvterm_region(std::int32_t first, std::int32_t second,
                                                        std::int32_t size) noexcept {
  std::int32_t start = (first == kMissing ? 1 : first) - 1;
  std::int32_t end = second == kMissing ? -1 : second;
  start = std::clamp(start, 0, size);
  end = std::max(end, -1);
  if (start == 0 && end == size) {
    end = -1;
  } else if (end > -1) {
    end = std::min(end, size);
  }
  const std::int32_t effective_end = end > -1 ? end : size;
  if (effective_end <= start) {
    start = 0;
    end = -1;
  }
  return {static_cast<std::uint16_t>(start), static_cast<std::uint16_t>(end < 0 ? 0 : end)};
}

}  // namespace

VtScanner::VtScanner(Cursor start, std::uint16_t cols, std::uint16_t rows)
    : position_(start),
      clean_position_(start),
      oversized_counted_for_(Cursor{~std::uint64_t{0}}),
      cols_(at_least_one(cols)),
      rows_(at_least_one(rows)),
      seq_begin_(start),
      skip_from_(start) {
  // Titles never outgrow this, so setting or pushing one never allocates.
  title_.reserve(kMaxTitleBytes);
  settled_title_.reserve(kMaxTitleBytes);
  for (std::string& pushed : title_stack_) pushed.reserve(kMaxTitleBytes);
  marks_.reserve(64);
  pending_marks_.reserve(64);
}

bool VtScanner::rebase(Cursor at) noexcept {
  if (!at_clean_boundary() || state_ != State::ground || !pending_marks_.empty()) return false;
  position_ = clean_position_ = seq_begin_ = skip_from_ = at;
  oversized_counted_for_ = Cursor{~std::uint64_t{0}};
  marks_.clear();
  return true;
}

std::optional<std::string_view> VtScanner::unmodelled_reason() const noexcept {
  if (unmodelled_ == nullptr) return std::nullopt;
  return std::string_view(unmodelled_);
}

Cursor VtScanner::feed_limit() const noexcept {
  if (clean_position_ == position_) return position_;
  if (position_ - clean_position_ <= kMaxHoldBytes) return clean_position_;
  // Keep an ESC inside a string together with the byte after it. In the libvterm source, a write
  // that begins with the backslash of an ST computes a string length of -1; 0.1.4 survived it
  // under valgrind, but holding one byte costs nothing.
  if (state_ == State::string_escape) return position_ - 1;
  return position_;
}

namespace {

// The length of the CSI at p (ESC [, digits and ';', a final byte) when it is whole and
// csi_dispatch() ignores it: no leader, no intermediate, no ':', at most libvterm's 16
// arguments, and a final other than the ones it reads (h l r s t u). 0 otherwise.
std::size_t inert_csi_length(const std::uint8_t* p, std::size_t n) noexcept {
  if (n < 3 || p[0] != 0x1b || p[1] != '[') return 0;
  std::uint32_t separators = 0;
  for (std::size_t i = 2; i < n; ++i) {
    const std::uint8_t b = p[i];
    if (b >= '0' && b <= '9') continue;
    if (b == ';') {
      if (++separators == VtScanner::kLibvtermMaxArgs) return 0;
      continue;
    }
    if (b < 0x40 || b > 0x7e) return 0;
    switch (b) {
      case 'h':
      case 'l':
      case 'r':
      case 's':
      case 't':
      case 'u': return 0;
      default: return i + 1;
    }
  }
  return 0;
}

}  // namespace

void VtScanner::scan(std::string_view bytes) noexcept {
  marks_.clear();
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t size = bytes.size();
  std::size_t i = 0;
  while (i < size) {
    if (state_ == State::ground) {
      // Fast path: a run of text (printable ASCII and UTF-8 bytes), as ground_byte() does it.
      std::size_t j = i;
      std::size_t clean_end = 0;  // offset just after the last complete character, 0 if none
      std::uint8_t remaining = utf8_remaining_;
      while (j < size && data[j] >= 0x20 && data[j] != kDel) {
        if (data[j] < 0x80) {
          j += ascii_run_length(data + j, size - j);
          remaining = 0;
          clean_end = j;
          continue;
        }
        const std::uint8_t byte = data[j++];
        if (byte < 0xc0) {
          if (remaining > 0) --remaining;
        } else {
          remaining = utf8_continuations(byte);
        }
        if (remaining == 0) clean_end = j;
      }
      if (j > i) {
        shift_waiting_ = false;
        utf8_remaining_ = remaining;
        if (clean_end != 0) set_clean_position(position_ + (clean_end - i));
        position_ = position_ + (j - i);
        i = j;
        continue;
      }
      // Fast path: a whole CSI that changes nothing the scanner keeps (SGR, cursor moves,
      // erases...), as step() would end it: parsed, dispatched to nothing, back in ground.
      if (const std::size_t n = inert_csi_length(data + i, size - i); n > 0) {
        utf8_remaining_ = 0;
        seq_begin_ = position_;
        position_ = position_ + n;
        set_clean_position(position_);
        i += n;
        continue;
      }
      // Fast path: `ESC ( B` (G0 designated US-ASCII), which ncurses prints with every sgr0, as
      // step() would take its three bytes: escape, one intermediate, esc_dispatch().
      if (size - i >= 3 && data[i] == kEsc && data[i + 1] == '(' && data[i + 2] == 'B') {
        enter_escape(position_);
        intermediate_ = '(';
        intermediate_count_ = 1;
        position_ = position_ + 2;  // at the final byte, as step() dispatches it
        esc_dispatch('B');
        to_ground();
        position_ = position_ + 1;
        set_clean_position(position_);
        i += 3;
        continue;
      }
    }
    step(data[i]);
    position_ = position_ + 1;
    if (state_ == State::ground && utf8_remaining_ == 0) set_clean_position(position_);
    ++i;
  }

  const Cursor limit = feed_limit();
  if (limit != clean_position_) {
    // Forced feed: a held sequence outgrew kMaxHoldBytes. Count it once, and hand out the
    // skipped part of an overflowing CSI scanned so far.
    if (oversized_counted_for_ != clean_position_) {
      ++oversized_sequences_;
      oversized_counted_for_ = clean_position_;
    }
    if (libvterm_overflowed_) flush_skip(position_);
  }
  // Release the marks libvterm may now be fed up to; the rest wait inside the held sequence.
  std::size_t released = 0;
  while (released < pending_marks_.size() && pending_marks_[released].end <= limit) {
    marks_.push_back(pending_marks_[released]);
    ++released;
  }
  pending_marks_.erase(pending_marks_.begin(),
                       pending_marks_.begin() + static_cast<std::ptrdiff_t>(released));
}

void VtScanner::resize(std::uint16_t cols, std::uint16_t rows) noexcept {
  cols_ = at_least_one(cols);
  rows_ = at_least_one(rows);
  // libvterm 0.1.4 (measured): only an explicit end is clamped; the start is left alone, so a
  // region can become degenerate (start >= end). The mirror resets such a region (and such
  // margins) to the full screen, since libvterm crashes scrolling it (MirrorScreen::resize).
  if (modes_.scroll_bottom != 0) modes_.scroll_bottom = std::min(modes_.scroll_bottom, rows_);
  if (modes_.scroll_right != 0) modes_.scroll_right = std::min(modes_.scroll_right, cols_);
  if (modes_.scroll_top >= (modes_.scroll_bottom != 0 ? modes_.scroll_bottom : rows_)) {
    modes_.scroll_top = 0;
    modes_.scroll_bottom = 0;
  }
  if (modes_.scroll_left >= (modes_.scroll_right != 0 ? modes_.scroll_right : cols_)) {
    modes_.scroll_left = 0;
    modes_.scroll_right = 0;
  }
}

void VtScanner::step(std::uint8_t byte) noexcept {
  const bool in_csi =
      state_ == State::csi_entry || state_ == State::csi_param || state_ == State::csi_intermediate;
  if (byte == 0x00 || byte == kDel) {
    if (state_ == State::ground) utf8_remaining_ = 0;
    return;
  }
  if (byte == kCan || byte == kSub) {
    // Abandons any sequence without dispatch. An ESC inside a string had already ended it.
    utf8_remaining_ = 0;
    if (in_csi) csi_end(position_);
    if (state_ == State::string_escape) {
      end_string(Terminator::esc_other);
    } else if (state_ == State::osc || state_ == State::dcs || state_ == State::sos_pm_apc) {
      drop_string();
    }
    to_ground();
    return;
  }
  if (byte == kEsc) {
    switch (state_) {
      case State::osc:
      case State::dcs:
      case State::sos_pm_apc: state_ = State::string_escape; return;
      case State::string_escape: end_string(Terminator::esc_other); break;
      default:
        if (in_csi) csi_end(position_);
        break;
    }
    enter_escape(position_);
    return;
  }
  if (byte < 0x20) {
    if (byte == kBel && (state_ == State::osc || state_ == State::dcs)) {
      end_string(Terminator::bel);
      to_ground();
      return;
    }
    if (in_csi && libvterm_overflowed_) {
      // libvterm executes this control: keep it out of the skipped bytes.
      flush_skip(position_);
      skip_from_ = position_ + 1;
    }
    execute(byte);
    return;
  }
  switch (state_) {
    case State::ground: ground_byte(byte); return;
    case State::escape: escape_byte(byte); return;
    case State::csi_entry:
    case State::csi_param:
    case State::csi_intermediate: csi_byte(byte); return;
    case State::osc:
    case State::dcs:
    case State::sos_pm_apc: string_byte(byte); return;
    case State::string_escape:
      if (byte == '\\') {
        end_string(Terminator::st);
        to_ground();
        return;
      }
      // The string ends here; the byte continues the escape sequence the ESC began.
      end_string(Terminator::esc_other);
      enter_escape(position_ - 1);
      escape_byte(byte);
      return;
  }
}

void VtScanner::ground_byte(std::uint8_t byte) noexcept {
  shift_waiting_ = false;
  if (byte < 0x80) {
    utf8_remaining_ = 0;
  } else if (byte < 0xc0) {
    if (utf8_remaining_ > 0) --utf8_remaining_;  // else a stray continuation: U+FFFD
  } else {
    utf8_remaining_ = utf8_continuations(byte);  // a new lead also ends a partial character
  }
}

void VtScanner::execute(std::uint8_t control) noexcept {
  if (state_ == State::ground) utf8_remaining_ = 0;
  switch (control) {
    case kBel:
      ++bells_;
      if (events_) events_->on_bell(position_ + 1);  // inside step(): position_ is the BEL's
      break;
    case kSo:
      gl_ = 1;
      modes_.shift_out = true;
      check_waiting_shift();
      break;
    case kSi:
      gl_ = 0;
      modes_.shift_out = false;
      check_waiting_shift();
      break;
    default: break;
  }
}

void VtScanner::enter_escape(Cursor esc_position) noexcept {
  state_ = State::escape;
  utf8_remaining_ = 0;
  intermediate_ = 0;
  intermediate_count_ = 0;
  seq_begin_ = esc_position;
}

void VtScanner::escape_byte(std::uint8_t byte) noexcept {
  if (byte >= 0x80) return;
  if (byte <= 0x2f) {
    if (intermediate_count_ == 0) intermediate_ = byte;
    if (intermediate_count_ != ~std::uint32_t{0}) ++intermediate_count_;
    return;
  }
  switch (byte) {
    case '[':
      state_ = State::csi_entry;
      leader_ = 0;
      leader_count_ = 0;
      intermediate_ = 0;
      intermediate_count_ = 0;
      params_[0] = kMissing;
      libvterm_params_[0] = 0;
      sub_params_ = 0;
      param_count_ = 1;
      libvterm_overflowed_ = false;
      return;
    case ']': enter_string(StringKind::osc); return;
    case 'P': enter_string(StringKind::dcs); return;
    default: break;
  }
  if (intermediate_count_ == 0) {
    switch (byte) {
      case 'X': enter_string(StringKind::sos); return;
      case '^': enter_string(StringKind::pm); return;
      case '_': enter_string(StringKind::apc); return;
      default: break;
    }
  }
  esc_dispatch(byte);
  to_ground();
}

void VtScanner::esc_dispatch(std::uint8_t final) noexcept {
  const Cursor end = position_ + 1;
  if (intermediate_count_ == 0) {
    switch (final) {
      case '7': mark(MarkKind::save_cursor, seq_begin_, end); break;
      case '8': mark(MarkKind::restore_cursor, seq_begin_, end); break;
      case '=': modes_.keypad_application = true; break;
      case '>': modes_.keypad_application = false; break;
      case 'c':
        hard_reset();
        mark(MarkKind::hard_reset, seq_begin_, end);
        if (events_) events_->on_screen_switch(seq_begin_, end);
        break;
      case 'n':  // LS2, LS3: GL from G2 / G3, which TerminalModes cannot express
      case 'o':
        gl_ = final == 'n' ? 2 : 3;
        modes_.shift_out = false;
        unmodelled("charset_shift");
        break;
      case 'N':  // SS2, SS3: harmless while G2 / G3 hold the default set and GL no table
        if (g2_ != 'B') unmodelled("charset_shift");
        shift_waiting_ = true;
        check_waiting_shift();
        break;
      case 'O':
        if (g3_ != 'B') unmodelled("charset_shift");
        shift_waiting_ = true;
        check_waiting_shift();
        break;
      default: break;
    }
    return;
  }
  // SCS: libvterm 0.1.4 knows '0' (DEC special graphics), 'A' (UK) and 'B' (US-ASCII) and leaves
  // the set unchanged for any other final byte.
  if (intermediate_count_ != 1 || (final != '0' && final != 'A' && final != 'B')) return;
  const char set = static_cast<char>(final);
  switch (intermediate_) {
    case '(': modes_.g0 = set; break;
    case ')': modes_.g1 = set; break;
    case '*': g2_ = set; break;
    case '+': g3_ = set; break;
    default: break;
  }
  check_waiting_shift();
}

void VtScanner::csi_byte(std::uint8_t byte) noexcept {
  if (state_ == State::csi_entry) {
    if (byte >= 0x3c && byte <= 0x3f) {
      if (leader_count_ == 0) leader_ = byte;
      if (leader_count_ != ~std::uint32_t{0}) ++leader_count_;
      return;
    }
    state_ = State::csi_param;
  }
  if (state_ == State::csi_param) {
    const std::uint32_t index = param_count_ - 1;
    if (byte >= '0' && byte <= '9') {
      if (index < kMaxParams) {
        const std::int32_t old = params_[index] == kMissing ? 0 : params_[index];
        params_[index] = std::min(old * 10 + (byte - '0'), kParamMax);
      }
      if (index < libvterm_params_.size())
        libvterm_params_[index] = libvterm_params_[index] * 10 + (byte - '0');  // wraps
      return;
    }
    if (byte == ';' || byte == ':') {
      if (param_count_ != ~std::uint32_t{0}) ++param_count_;
      const std::uint32_t next = param_count_ - 1;
      if (next < libvterm_params_.size()) libvterm_params_[next] = 0;
      if (next < kMaxParams) {
        params_[next] = kMissing;
        if (byte == ':') sub_params_ |= std::uint32_t{1} << next;
      }
      if (param_count_ == kLibvtermMaxArgs + 1 && !libvterm_overflowed_) {
        libvterm_overflowed_ = true;
        mark(MarkKind::libvterm_overflow, position_, position_);
        skip_from_ = position_;
        unmodelled("csi_overflow");
      }
      return;
    }
    state_ = State::csi_intermediate;
  }
  if (byte >= 0x20 && byte <= 0x2f) {
    if (intermediate_count_ == 0) intermediate_ = byte;
    if (intermediate_count_ != ~std::uint32_t{0}) ++intermediate_count_;
    return;
  }
  // The skipped range (if any) is marked before what the dispatch marks at the same position.
  csi_end(position_ + 1);
  if (byte >= 0x40 && byte <= 0x7e) csi_dispatch(byte);
  // Else an invalid byte: the CSI ends without dispatch and the byte is consumed (libvterm).
  to_ground();
}

void VtScanner::csi_end(Cursor skip_until) noexcept {
  if (libvterm_overflowed_) flush_skip(skip_until);
  libvterm_overflowed_ = false;
}

void VtScanner::csi_dispatch(std::uint8_t final) noexcept {
  // libvterm 0.1.4 ignores sequences with two leaders or two intermediates; so do we.
  if (leader_count_ > 1 || intermediate_count_ > 1) return;
  const std::uint8_t leader = leader_count_ == 0 ? 0 : leader_;
  const std::uint8_t intermediate = intermediate_count_ == 0 ? 0 : intermediate_;
  const Cursor end = position_ + 1;
  const std::uint32_t kept = std::min<std::uint32_t>(param_count_, kMaxParams);

  if (intermediate == '!' && leader == 0 && final == 'p') {
    soft_reset();
    mark(MarkKind::soft_reset, seq_begin_, end);
    return;
  }
  if (intermediate == ' ' && leader == 0 && final == 'q') {  // DECSCUSR
    const bool style = kept > 0 && params_[0] != kMissing && params_[0] >= 1;
    modes_.cursor_style_source = style ? CursorStyleSource::decscusr : CursorStyleSource::none;
    return;
  }
  if (intermediate != 0) return;

  if (leader == '?' && (final == 'h' || final == 'l')) {
    // Every parameter applies, as in xterm and xterm.js (libvterm 0.1.4 applies the first only);
    // sub-parameters are not modes. Marks come after all parameters, with the final modes.
    std::array<MarkKind, kMaxParams> kinds{};
    std::size_t nkinds = 0;
    bool fixup = param_count_ > 1;
    bool screen = false;
    for (std::uint32_t i = 0; i < kept; ++i) {
      if ((sub_params_ >> i) & 1u || params_[i] == kMissing) continue;
      const std::int32_t mode = params_[i];
      const bool on = final == 'h';
      if (mode == 47) fixup = true;
      if (mode == 47 || mode == 1047 || mode == 1049) screen = true;
      if (mode == 1048)
        kinds[nkinds++] = on ? MarkKind::save_cursor_1048 : MarkKind::restore_cursor_1048;
      if (mode == 1049) kinds[nkinds++] = on ? MarkKind::enter_alt_1049 : MarkKind::leave_alt_1049;
      set_dec_mode(mode, on);
    }
    for (std::size_t k = 0; k < nkinds; ++k) mark(kinds[k], seq_begin_, end);
    if (fixup) mark(MarkKind::mode_fixup, seq_begin_, end);
    if (screen && events_) events_->on_screen_switch(seq_begin_, end);
    return;
  }
  if (leader != 0) return;

  switch (final) {
    case 'h':
    case 'l':
      for (std::uint32_t i = 0; i < kept; ++i) {
        if ((sub_params_ >> i) & 1u || params_[i] == kMissing) continue;
        set_mode(params_[i], final == 'h');
      }
      if (param_count_ > 1) mark(MarkKind::mode_fixup, seq_begin_, end);
      return;
    case 'r': set_scroll_region(); return;
    case 's':
      // xterm: SCOSC unless DECLRMM is set. libvterm 0.1.4: DECSLRM, stored in either case.
      if (!modes_.left_right_margin_mode) mark(MarkKind::save_cursor_sco, seq_begin_, end);
      set_margins();
      return;
    case 'u': mark(MarkKind::restore_cursor_sco, seq_begin_, end); return;
    case 't': {
      // XTWINOPS title stack (xterm.js): 22 pushes, 23 pops; the second parameter 0 or 2 (or
      // none) selects the window title.
      const std::int32_t which = kept > 1 && params_[1] != kMissing ? params_[1] : 0;
      if (which != 0 && which != 2) return;
      if (params_[0] == 22) {
        if (title_stack_size_ == kTitleStackDepth) {
          std::rotate(title_stack_.begin(), title_stack_.begin() + 1, title_stack_.end());
          --title_stack_size_;
        }
        title_stack_[title_stack_size_++].assign(title_);
      } else if (params_[0] == 23 && title_stack_size_ > 0) {
        --title_stack_size_;
        set_title(title_stack_[title_stack_size_]);
      }
      return;
    }
    default: return;
  }
}

void VtScanner::set_mode(std::int32_t mode, bool on) noexcept {
  switch (mode) {
    case 4: modes_.insert = on; break;
    case 20: modes_.linefeed_newline = on; break;
    default: break;
  }
}

void VtScanner::set_dec_mode(std::int32_t mode, bool on) noexcept {
  switch (mode) {
    case 1: modes_.cursor_keys_application = on; break;
    case 5: modes_.reverse_video = on; break;
    case 6: modes_.origin = on; break;
    case 7: modes_.autowrap = on; break;
    case 12:  // cursor blink; xterm.js ignores it under a DECSCUSR style
      if (modes_.cursor_style_source == CursorStyleSource::none)
        modes_.cursor_style_source = CursorStyleSource::blink_mode;
      break;
    case 25: modes_.cursor_visible = on; break;
    case 47:
    case 1047:
    case 1049: modes_.alternate_screen = on; break;
    case 66:  // DECNKM: the keypad mode as a DEC mode (xterm, xterm.js)
      modes_.keypad_application = on;
      break;
    case 69: modes_.left_right_margin_mode = on; break;
    case 9:
    case 1000:
    case 1002:
    case 1003:
      // xterm: setting one tracking mode replaces the others; resetting any of them ends
      // tracking (libvterm and xterm.js agree).
      modes_.mouse_tracking = on ? static_cast<MouseTracking>(mode) : MouseTracking::off;
      break;
    case 1005:
    case 1006:
    case 1015:
      // xterm: one encoding at a time; a reset only undoes the encoding in effect.
      if (on) {
        modes_.mouse_encoding = static_cast<MouseEncoding>(mode);
      } else if (modes_.mouse_encoding == static_cast<MouseEncoding>(mode)) {
        modes_.mouse_encoding = MouseEncoding::x10;
      }
      break;
    case 1004: modes_.focus_reporting = on; break;
    case 2004: modes_.bracketed_paste = on; break;
    default: break;
  }
}

// Parameter i (0 or 1) as libvterm 0.1.4 reads it: its long, wrapping, then its 31-bit argument
// mask (CSI_ARG; all ones reads as missing): 2^32 + 25 is 25 there. DECSTBM and DECSLRM take
// it, so the region the snapshot restores is the one libvterm draws with.
std::int32_t VtScanner::libvterm_param(std::uint32_t i) const noexcept {
  if (i >= param_count_ || params_[i] == kMissing) return kMissing;
  const auto v = static_cast<std::int32_t>(libvterm_params_[i] & 0x7fffffffu);
  return v == 0x7fffffff ? kMissing : v;  // CSI_ARG_MISSING
}

void VtScanner::set_scroll_region() noexcept {
  const std::int32_t first = libvterm_param(0);
  const std::int32_t second = libvterm_param(1);
  const auto [top, bottom] = libvterm_region(first, second, rows_);
  modes_.scroll_top = top;
  modes_.scroll_bottom = bottom;
}

void VtScanner::set_margins() noexcept {
  const std::int32_t first = libvterm_param(0);
  const std::int32_t second = libvterm_param(1);
  const auto [left, right] = libvterm_region(first, second, cols_);
  modes_.scroll_left = left;
  modes_.scroll_right = right;
}

void VtScanner::soft_reset() noexcept {
  // DECSTR as xterm.js does it (libvterm 0.1.4 ignores DECSTR): cursor shown, margins and
  // charsets reset, IRM, DECOM, DECCKM, DECKPAM, bracketed paste and focus reporting off,
  // autowrap on. Mouse modes, the alternate screen, LNM, DECSCNM and DECLRMM stay.
  modes_.cursor_visible = true;
  modes_.scroll_top = 0;
  modes_.scroll_bottom = 0;
  modes_.scroll_left = 0;
  modes_.scroll_right = 0;
  modes_.insert = false;
  modes_.origin = false;
  modes_.cursor_keys_application = false;
  modes_.keypad_application = false;
  modes_.bracketed_paste = false;
  modes_.focus_reporting = false;
  modes_.autowrap = true;
  modes_.g0 = 'B';
  modes_.g1 = 'B';
  modes_.shift_out = false;
  g2_ = 'B';
  g3_ = 'B';
  gl_ = 0;
}

void VtScanner::hard_reset() noexcept {
  // RIS as xterm does it: every mode to its default, including mouse modes and the alternate
  // screen (which libvterm 0.1.4 keeps: see MarkKind::hard_reset). The title stays.
  modes_ = TerminalModes{};
  g2_ = 'B';
  g3_ = 'B';
  gl_ = 0;
  shift_waiting_ = false;
  title_stack_size_ = 0;
  unmodelled_ = nullptr;
}

void VtScanner::enter_string(StringKind kind) noexcept {
  state_ = kind == StringKind::osc   ? State::osc
           : kind == StringKind::dcs ? State::dcs
                                     : State::sos_pm_apc;
  string_kind_ = kind;
  string_has_payload_ = false;
  switch (kind) {
    case StringKind::osc:
      osc_number_ = kMissing;
      osc_in_number_ = true;
      osc_semicolon_ = false;
      osc_prefix_len_ = 0;
      title_len_ = 0;
      title_full_ = false;
      title_need_ = 0;
      break;
    case StringKind::dcs: dcs_header_.reset(); break;
    case StringKind::sos:
      unmodelled("sos");  // libvterm 0.1.4 prints the payload as text
      break;
    case StringKind::pm: unmodelled("pm"); break;
    case StringKind::apc: break;  // classified by its first byte
  }
}

void VtScanner::string_byte(std::uint8_t byte) noexcept {
  switch (string_kind_) {
    case StringKind::osc:
      if (osc_in_number_) {
        if (byte >= '0' && byte <= '9') {
          const std::int32_t old = osc_number_ == kMissing ? 0 : osc_number_;
          osc_number_ = std::min(old * 10 + (byte - '0'), kOscNumberMax);
          return;
        }
        osc_in_number_ = false;
        if (byte == ';') {
          osc_semicolon_ = true;
        } else {
          osc_number_ = kMissing;  // "OSC L..." and the like: not a numbered command
        }
        return;
      }
      if (!osc_semicolon_) return;
      if (osc_number_ == 0 || osc_number_ == 2) title_byte(byte);
      if ((osc_number_ == 1337 || osc_number_ == 133 || osc_number_ == 633) &&
          osc_prefix_len_ < kOscPrefixBytes) {
        osc_prefix_[osc_prefix_len_++] = static_cast<char>(byte);
      }
      return;
    case StringKind::dcs: dcs_header_.byte(byte); return;
    case StringKind::apc:
      if (!string_has_payload_) unmodelled(byte == 'G' ? "apc_graphics" : "apc");
      string_has_payload_ = true;
      return;
    case StringKind::sos:
    case StringKind::pm: return;
  }
}

void VtScanner::end_string(Terminator how) noexcept {
  switch (string_kind_) {
    case StringKind::osc: osc_dispatch(); break;
    case StringKind::dcs: dcs_dispatch(how); break;
    case StringKind::apc:
      if (!string_has_payload_) unmodelled("apc");
      break;
    case StringKind::sos:
    case StringKind::pm: break;
  }
  drop_string();
}

void VtScanner::drop_string() noexcept {
  osc_prefix_len_ = 0;
  title_len_ = 0;
  title_need_ = 0;
}

void VtScanner::osc_dispatch() noexcept {
  const std::string_view prefix(osc_prefix_.data(), osc_prefix_len_);
  if (!harmless_osc(osc_number_)) {
    unmodelled("osc_unknown");
  } else if (osc_number_ == 1337 &&
             (starts_with(prefix, "File=") || starts_with(prefix, "MultipartFile=") ||
              starts_with(prefix, "FilePart="))) {
    unmodelled("osc_image");  // iTerm2 inline images
  }
  if ((osc_number_ == 133 || osc_number_ == 633) && osc_semicolon_ && events_) shell_mark(prefix);
  if ((osc_number_ == 0 || osc_number_ == 2) && osc_semicolon_) {
    if (title_need_ > 0) {
      title_need_ = 0;
      title_codepoint(kReplacement);  // a character cut by the terminator
    }
    set_title(std::string_view(title_buf_.data(), title_len_));
  }
}

void VtScanner::shell_mark(std::string_view payload) noexcept {
  // "A", "B", "C", "D", "D;N", each possibly followed by ";key=value" options (kitty, VS Code).
  if (payload.empty() || payload[0] < 'A' || payload[0] > 'D') return;
  if (payload.size() > 1 && payload[1] != ';') return;
  std::optional<int> exit_status;
  if (payload[0] == 'D' && payload.size() > 2) {
    int n = 0;
    std::size_t i = 2;
    bool negative = false;
    if (payload[i] == '-') {
      negative = true;
      ++i;
    }
    const std::size_t digits_from = i;
    while (i < payload.size() && payload[i] >= '0' && payload[i] <= '9' && n < 1'000'000) {
      n = n * 10 + (payload[i] - '0');
      ++i;
    }
    if (i > digits_from && (i == payload.size() || payload[i] == ';')) {
      exit_status = negative ? -n : n;
    }
  }
  events_->on_shell_mark(payload[0], exit_status, position_ + 1);
}

void VtScanner::dcs_dispatch(Terminator how) noexcept {
  const DcsEffect effect = dcs_header_.effect();
  if (effect == DcsEffect::sixel) unmodelled("dcs_sixel");
  // Only a DCS ended by ST reads the same everywhere: xterm.js does not end one at BEL,
  // libvterm does.
  else if (effect == DcsEffect::stateful || how != Terminator::st) unmodelled("dcs");
}

void VtScanner::title_byte(std::uint8_t byte) noexcept {
  // Strict UTF-8 decoding (overlong forms, surrogates and code points above U+10FFFF become
  // U+FFFD); C0 controls never get here (they are executed).
  if (title_need_ > 0) {
    if (byte >= 0x80 && byte < 0xc0) {
      title_cp_ = (title_cp_ << 6) | (byte & 0x3fu);
      if (--title_need_ > 0) return;
      const std::uint32_t cp = title_cp_;
      const bool overlong =
          (title_total_ == 3 && cp < 0x800) || (title_total_ == 4 && cp < 0x10000);
      const bool invalid = (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff;
      title_codepoint(overlong || invalid ? kReplacement : cp);
      return;
    }
    title_need_ = 0;
    title_codepoint(kReplacement);
  }
  if (byte < 0x80) {
    title_codepoint(byte);
  } else if (byte >= 0xc2 && byte <= 0xdf) {
    title_cp_ = byte & 0x1fu;
    title_need_ = 1;
    title_total_ = 2;
  } else if (byte >= 0xe0 && byte <= 0xef) {
    title_cp_ = byte & 0x0fu;
    title_need_ = 2;
    title_total_ = 3;
  } else if (byte >= 0xf0 && byte <= 0xf4) {
    title_cp_ = byte & 0x07u;
    title_need_ = 3;
    title_total_ = 4;
  } else {
    title_codepoint(kReplacement);
  }
}

void VtScanner::title_codepoint(std::uint32_t cp) noexcept {
  if (title_full_ || title_control(cp)) return;
  char encoded[4];
  std::size_t n = 0;
  if (cp < 0x80) {
    encoded[n++] = static_cast<char>(cp);
  } else if (cp < 0x800) {
    encoded[n++] = static_cast<char>(0xc0 | (cp >> 6));
    encoded[n++] = static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    encoded[n++] = static_cast<char>(0xe0 | (cp >> 12));
    encoded[n++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    encoded[n++] = static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    encoded[n++] = static_cast<char>(0xf0 | (cp >> 18));
    encoded[n++] = static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    encoded[n++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    encoded[n++] = static_cast<char>(0x80 | (cp & 0x3f));
  }
  if (title_len_ + n > kMaxTitleBytes) {
    title_full_ = true;  // the title is a prefix cut at a character boundary
    return;
  }
  std::memcpy(title_buf_.data() + title_len_, encoded, n);
  title_len_ += n;
}

// Called from step() only, so position_ is the byte that completed the sequence.
void VtScanner::set_title(std::string_view title) noexcept {
  // Capacities reserved: no allocation.
  if (!title_unsettled_) {
    settled_title_.assign(title_);
    title_unsettled_ = true;
  }
  title_.assign(title);
  ++title_changes_;
  if (events_) events_->on_title(title_, position_ + 1);
}

void VtScanner::to_ground() noexcept { state_ = State::ground; }

void VtScanner::skip_plain(Cursor to, bool designates_g0) noexcept {
  if (designates_g0) modes_.g0 = 'B';
  marks_.clear();
  pending_marks_.clear();  // none: a plain run has no sequence that marks
  state_ = State::ground;
  utf8_remaining_ = 0;
  shift_waiting_ = false;  // the run's text took it
  position_ = to;
  set_clean_position(to);
  seq_begin_ = to;
  skip_from_ = to;
}

void VtScanner::skip_fast(Cursor to, std::string_view settings, bool text,
                          bool restored_cursor) noexcept {
  assert(state_ == State::ground && at_clean_boundary());
  marks_.clear();
  // The fast path does not start while a single shift waits, so no setting can meet one; the
  // text is taken first all the same, as it would be wherever it came.
  if (text) shift_waiting_ = false;
  for (const char c : settings) step(static_cast<std::uint8_t>(c));  // at position_: no mark
  if (restored_cursor) modes_.cursor_style_source = CursorStyleSource::none;
  assert(state_ == State::ground && pending_marks_.empty() && marks_.empty());
  utf8_remaining_ = 0;
  position_ = to;
  set_clean_position(to);
  seq_begin_ = to;
  skip_from_ = to;
}

void VtScanner::check_waiting_shift() noexcept {
  if (shift_waiting_ && gl_draws_a_table()) unmodelled("charset_shift");
}

void VtScanner::unmodelled(const char* reason) noexcept {
  if (unmodelled_ == nullptr) unmodelled_ = reason;
}

void VtScanner::mark(MarkKind kind, Cursor begin, Cursor end) noexcept {
  // libvterm's cursor restores bring back the saved blink and shape, xterm.js's do not: the
  // style is libvterm's reading again (TerminalModes::cursor_style_source).
  if (kind == MarkKind::restore_cursor || kind == MarkKind::restore_cursor_1048 ||
      kind == MarkKind::leave_alt_1049)
    modes_.cursor_style_source = CursorStyleSource::none;
  pending_marks_.push_back(Mark{begin, end, kind, modes_});
}

void VtScanner::flush_skip(Cursor up_to) noexcept {
  if (skip_from_ < up_to) mark(MarkKind::libvterm_skip, skip_from_, up_to);
  skip_from_ = std::max(skip_from_, up_to);
}

}  // namespace backscroll::term
