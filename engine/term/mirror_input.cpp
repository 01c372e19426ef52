// MirrorInput: follows libvterm 0.1.4's src/parser.c byte for byte (UTF-8 mode), and the parts
// of src/state.c that decide which sequences its state layer acts on. Departures, all on input
// that would crash or hang libvterm 0.1.4 or that real terminals reject, are MirrorScreen's
// (it acts on the events raised here); this file only classifies.
#include "engine/term/mirror_input.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "engine/term/grid_cell.hpp"
#include "engine/term/zero_width.hpp"

namespace backscroll::term {
namespace {

// The smallest character each UTF-8 length encodes; libvterm decodes a longer form to U+FFFD.
constexpr char32_t kShortest[7] = {0, 0, 0x80, 0x800, 0x10000, 0x200000, 0x4000000};

// How often to offer a split point inside one long token (text run, string, CSI).
constexpr std::size_t kSplitEvery = 16 * 1024;
constexpr std::size_t kStringPrefix = 256;
constexpr std::size_t kMaxOverflowControls = 64;

bool is_intermed(unsigned char c) { return c >= 0x20 && c <= 0x2f; }

// A G0-G3 designation libvterm 0.1.4 knows (encoding.c): DEC drawing, UK, US-ASCII.
bool known_designation(char f) { return f == '0' || f == 'A' || f == 'B'; }

// True when an OSC 4/5/10-19 string sets a colour (any spec other than the query "?").
bool osc_sets_colour(const std::string& s, bool truncated) {
  std::size_t i = 0;
  int num = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && num < 1000) num = num * 10 + (s[i++] - '0');
  if (i == 0 || i >= s.size() || s[i] != ';') return false;
  const bool pairs = (num == 4 || num == 5);
  if (!pairs && !(num >= 10 && num <= 19)) return false;
  if (truncated) return true;
  ++i;
  int field = 0;
  std::size_t start = i;
  for (std::size_t j = i; j <= s.size(); ++j) {
    if (j == s.size() || s[j] == ';') {
      const std::string_view v(s.data() + start, j - start);
      const bool is_spec = pairs ? (field % 2 == 1) : true;
      if (is_spec && v != "?") return true;
      ++field;
      start = j + 1;
    }
  }
  return pairs && field % 2 == 1;  // "4;1" with no spec: malformed, treat as a change
}

void append_arg(std::string& out, std::uint32_t a) {
  const std::uint32_t v = a & ~MirrorInput::kArgMore;
  if (v != MirrorInput::kArgMissing) {
    char buf[16];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}

}  // namespace

int MirrorInput::set_size(int cols, int rows) { return bounds_.resize(cols, rows); }

int MirrorInput::CursorBounds::resize(int new_cols, int new_rows) {
  cols = std::max(new_cols, 1);
  rows = std::max(new_rows, 1);
  // state.c on_resize: UBOUND(scrollregion_bottom, rows), UBOUND(scrollregion_right, cols)
  // when set; the top and left edges stay.
  if (margin_right > -1) margin_right = std::min(margin_right, cols);
  if (region_bottom > -1) region_bottom = std::min(region_bottom, rows);
  int reset = 0;
  if (region_top >= (region_bottom > -1 ? region_bottom : rows)) {
    region_top = 0;
    region_bottom = -1;
    reset |= kRegionReset;
  }
  if (margin_left >= (margin_right > -1 ? margin_right : cols)) {
    margin_left = 0;
    margin_right = -1;
    reset |= kMarginsReset;
  }
  return reset;
}

std::uint32_t MirrorInput::unmodelled() const {
  std::uint32_t f = sticky_;
  if (lnm_) f |= kNewlineMode;
  if (bounds_.declrmm || bounds_.margin_left != 0 || bounds_.margin_right != -1) f |= kMargins;
  if ((g2_ != 'u' && g2_ != 'B') || (g3_ != 'u' && g3_ != 'B') || gl_set_ >= 2) f |= kCharsets;
  return f;
}

std::string MirrorInput::encode(const Csi& csi) {
  std::string out = "\x1b[";
  out.append(csi.leader.data(), static_cast<std::size_t>(csi.leader_len));
  for (int i = 0; i < csi.argcount; ++i) {
    append_arg(out, csi.args[i]);
    if (i + 1 < csi.argcount) out += (csi.args[i] & kArgMore) ? ':' : ';';
  }
  out.append(csi.intermed.data(), static_cast<std::size_t>(csi.intermed_len));
  out += csi.final;
  return out;
}

std::string MirrorInput::reenter() const {
  std::string out;
  switch (state_) {
    case State::ground: break;
    case State::esc:
      out = "\x1b";
      out.append(esc_.intermed.data(), static_cast<std::size_t>(esc_.intermed_len));
      break;
    case State::csi_leader:
    case State::csi_args:
    case State::csi_intermed: {
      const Csi& q = csi_;
      out = "\x1b[";
      out.append(q.leader.data(), static_cast<std::size_t>(q.leader_len));
      if (state_ == State::csi_leader) break;
      // The arguments libvterm holds: in the arguments, each one read with the separator after
      // it and the one being read; an overflowed CSI's copy stops before the 17th separator;
      // after them, all of them.
      const bool reading = state_ == State::csi_args && !q.overflowed;
      const int done = reading ? csi_argi_ : state_ == State::csi_args ? kMaxCsiArgs : q.argcount;
      for (int i = 0; i < done; ++i) {
        append_arg(out, q.args[i]);
        if (reading || i + 1 < done) out += (q.args[i] & kArgMore) ? ':' : ';';
      }
      if (reading && arg_accum_ != kArgMissing)
        append_arg(out, static_cast<std::uint32_t>(arg_accum_ & 0xffffffffu));
      if (state_ == State::csi_intermed)
        out.append(q.intermed.data(), static_cast<std::size_t>(q.intermed_len));
      break;
    }
    case State::string:
    case State::esc_in_string: out = string_type_ == StringType::osc ? "\x1b]" : "\x1bP"; break;
  }
  return out;
}

namespace {

// One SGR attribute as xterm.js reads it: a parameter and the ':' sub-parameters after it.
// Missing values are 0 for a parameter and -1 for a sub-parameter (xterm.js's Params).
struct SgrParam {
  std::int64_t value;
  std::size_t first;  // flat index of the parameter in the CSI's arguments
  std::size_t end;    // one past its last sub-parameter
};

std::int64_t arg_value(std::uint32_t a, std::int64_t missing) {
  const std::uint32_t v = a & ~MirrorInput::kArgMore;
  return v == MirrorInput::kArgMissing ? missing : v;
}

// Inline up to a CSI's 16 arguments: every coloured SGR a flood or a redraw prints comes here
// (malloc and free were ~8% of the mirror on an ncurses redraw workload).
using SgrParams = boost::container::small_vector<SgrParam, MirrorInput::kMaxCsiArgs>;

SgrParams sgr_params(std::span<const std::uint32_t> args) {
  SgrParams out;
  for (std::size_t i = 0; i < args.size();) {
    std::size_t end = i + 1;
    while (end < args.size() && (args[end - 1] & MirrorInput::kArgMore)) ++end;
    out.push_back(SgrParam{arg_value(args[i], 0), i, end});
    i = end;
  }
  return out;
}

// xterm.js's reading of the colour attribute (38, 48 or 58) at params[at] (InputHandler's
// _extractColor, 6.0): it lays the parameters, or the sub-parameters of the first one that has
// some, into [target, mode, colour space, v1, v2, v3] and stops as soon as the mode is known to
// be complete. Mode 2 is RGB (v1..v3), mode 5 an index (v1); any other mode changes nothing.
struct SgrColour {
  std::size_t advance;  // parameters taken after params[at]
  std::int64_t mode;
  std::array<std::int64_t, 3> v;
};

SgrColour xterm_colour(std::span<const std::uint32_t> args, const SgrParams& params,
                       std::size_t at) {
  std::array<std::int64_t, 6> accu = {0, 0, -1, 0, 0, 0};
  std::size_t space = 0;  // 1 once the colour-space slot is skipped
  std::size_t advance = 0;
  do {
    const SgrParam& p = params[at + advance];
    if (advance + space < accu.size()) accu[advance + space] = p.value;
    if (p.end > p.first + 1) {
      for (std::size_t o = 0; p.first + 1 + o < p.end; ++o) {
        if (accu[1] == 5) space = 1;
        const std::size_t slot = advance + o + 1 + space;
        if (slot < accu.size()) accu[slot] = arg_value(args[p.first + 1 + o], -1);
        if (o + 1 + advance + 1 + space >= accu.size()) break;
      }
      break;
    }
    if ((accu[1] == 5 && advance + space >= 2) || (accu[1] == 2 && advance + space >= 5)) break;
    if (accu[1] != 0) space = 1;
  } while (++advance + at < params.size() && advance + space < accu.size());
  for (std::size_t i = 2; i < accu.size(); ++i)
    if (accu[i] == -1) accu[i] = 0;
  return SgrColour{advance, accu[1], {accu[3], accu[4], accu[5]}};
}

}  // namespace

bool MirrorInput::sgr_needs_rewrite(std::span<const std::uint32_t> args) {
  // libvterm 0.1.4 reads 38/48 followed by 5;n or 2;r;g;b as xterm.js does; anything else of
  // theirs it misreads: it reads the arguments after the last one (stale values of an earlier
  // sequence) and sets a colour it never initialised from a short or unknown form, applies the
  // sub-parameters of 38:2:r:g:b without xterm.js's colour-space slot, and reads the arguments
  // of 58 (underline colour, which it lacks) as attributes of their own.
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i > 0 && (args[i - 1] & kArgMore)) continue;  // a sub-parameter
    const std::uint32_t v = args[i] & ~kArgMore;
    if (v == 58) return true;
    if (v != 38 && v != 48) continue;
    const std::size_t values = xterm_colour_values(args, i);
    if (values == 0) return true;
    i += 1 + values;
  }
  return false;
}

namespace {

// One SGR attribute's effect on the pen attributes libvterm lacks (MirrorInput::kPen* bits).
std::uint32_t with_extra(std::uint32_t pen, std::int64_t attribute) {
  switch (attribute) {
    case 0: return 0;
    case 2: return pen | MirrorInput::kPenFaint;
    case 22: return pen & ~MirrorInput::kPenFaint;
    case 8: return pen | MirrorInput::kPenConceal;
    case 28: return pen & ~MirrorInput::kPenConceal;
    case 53: return pen | MirrorInput::kPenOverline;
    case 55: return pen & ~MirrorInput::kPenOverline;
    default: return pen;
  }
}

}  // namespace

std::uint32_t MirrorInput::sgr_extras(std::uint32_t pen, std::span<const std::uint32_t> args) {
  // Every SGR of a coloured flood comes here: only one with a colour attribute (whose
  // arguments xterm.js skips) pays for the parameter list.
  const bool colour = std::any_of(args.begin(), args.end(), [](std::uint32_t a) {
    const std::uint32_t v = a & ~kArgMore;
    return v == 38 || v == 48 || v == 58;
  });
  if (!colour) {
    for (std::size_t i = 0; i < args.size(); ++i)
      if (i == 0 || !(args[i - 1] & kArgMore)) pen = with_extra(pen, arg_value(args[i], 0));
    return pen;
  }
  const SgrParams params = sgr_params(args);
  for (std::size_t r = 0; r < params.size(); ++r) {
    const std::int64_t v = params[r].value;
    if (v == 38 || v == 48 || v == 58) r += xterm_colour(args, params, r).advance;
    else pen = with_extra(pen, v);
  }
  return pen;
}

std::string MirrorInput::encode_sgr(const Csi& csi, std::span<const std::uint32_t> args) {
  // Attributes as xterm.js reads them, each one whole in one SGR of at most 16 arguments:
  // colours as 38/48;5;n or 38/48;2;r;g;b (the forms libvterm reads the same way), dropped
  // where xterm.js changes nothing, 58 left out; every other attribute as it came, with its
  // sub-parameters (libvterm skips them, but 4:n's).
  std::string out;
  std::string cur;
  int cur_count = 0;
  auto flush = [&] {
    if (cur_count == 0) return;
    out += "\x1b[";
    out += cur;
    out += csi.final;
    cur.clear();
    cur_count = 0;
  };
  auto add = [&](const std::string& token, int n) {
    if (cur_count + n > kMaxCsiArgs) flush();
    if (cur_count > 0) cur += ';';
    cur += token;
    cur_count += n;
  };
  const SgrParams params = sgr_params(args);
  for (std::size_t r = 0; r < params.size(); ++r) {
    const SgrParam& p = params[r];
    if (p.value == 38 || p.value == 48 || p.value == 58) {
      const SgrColour c = xterm_colour(args, params, r);
      r += c.advance;
      if (p.value == 58 || (c.mode != 2 && c.mode != 5)) continue;
      std::string token = p.value == 38 ? "38" : "48";
      if (c.mode == 5) {
        token += ";5;" + std::to_string(c.v[0] & 0xff);
        add(token, 3);
      } else {
        for (std::int64_t x : {std::int64_t{2}, c.v[0] & 0xff, c.v[1] & 0xff, c.v[2] & 0xff})
          token += ';' + std::to_string(x);
        add(token, 5);
      }
      continue;
    }
    // libvterm reads at most 16 arguments: sub-parameters past them change nothing it reads.
    const std::size_t end = std::min(p.end, p.first + static_cast<std::size_t>(kMaxCsiArgs));
    std::string token;
    for (std::size_t k = p.first; k < end; ++k) {
      append_arg(token, args[k]);
      if (k + 1 < end) token += ':';
    }
    add(token, static_cast<int>(end - p.first));
  }
  flush();
  // Nothing left (colours that change nothing): nothing to write. `CSI m` has one missing
  // argument, which stays (SGR 0).
  return out;
}

void MirrorInput::control(unsigned char c) {
  // state.c on_control: only the shifts matter here.
  if (c == 0x0e) gl_set_ = 1;       // SO / LS1
  else if (c == 0x0f) gl_set_ = 0;  // SI / LS0
}

void MirrorInput::start_string(StringType type) {
  string_type_ = type;
  string_prefix_.clear();
  dcs_header_.reset();
  fragment_start_ = true;
  state_ = State::string;
}

void MirrorInput::end_string(bool dispatched) {
  const bool truncated = string_prefix_.size() >= kStringPrefix;
  if (string_type_ == StringType::dcs) {
    if (dcs_header_.effect() != DcsEffect::none) sticky_ |= kGraphics;  // even cancelled
  } else if (dispatched && osc_sets_colour(string_prefix_, truncated)) {
    sticky_ |= kPalette;
  }
  string_prefix_.clear();
}

void MirrorInput::dispatch_esc(unsigned char final, std::size_t at, Sink& sink) {
  esc_.final = static_cast<char>(final);
  const char i0 = esc_.intermed_len > 0 ? esc_.intermed[0] : 0;
  if (esc_.intermed_len == 0) {
    switch (final) {
      case 'c':  // RIS: vterm_state_reset(state, 1)
        autowrap_ = true;
        insert_ = false;
        bounds_.origin = false;
        lnm_ = false;
        bounds_.declrmm = false;
        bounds_.margin_left = 0;
        bounds_.margin_right = -1;
        bounds_.region_top = 0;
        bounds_.region_bottom = -1;
        gl_set_ = 0;
        single_shift_ = 0;
        g0_ = g1_ = g2_ = g3_ = 'u';
        sticky_ &= ~kTabStops;
        break;
      case 'n': gl_set_ = 2; break;  // LS2
      case 'o': gl_set_ = 3; break;  // LS3
      default: break;
    }
  } else if (esc_.intermed_len == 1) {
    if (i0 == '#' && (final == '3' || final == '4' || final == '6')) sticky_ |= kLineSize;
    if (i0 == '(' && known_designation(static_cast<char>(final))) g0_ = static_cast<char>(final);
    if (i0 == ')' && known_designation(static_cast<char>(final))) g1_ = static_cast<char>(final);
    if (i0 == '*' && known_designation(static_cast<char>(final))) g2_ = static_cast<char>(final);
    if (i0 == '+' && known_designation(static_cast<char>(final))) g3_ = static_cast<char>(final);
  }
  sink.esc(esc_, at);
}

void MirrorInput::dispatch_csi(std::size_t at, Sink& sink) {
  Csi& c = csi_;
  const char cmd = c.final;
  if (c.plain()) {
    switch (cmd) {
      case 'h':
      case 'l':
        if (c.argcount > 0 && (c.args[0] & ~kArgMore) == 20) lnm_ = (cmd == 'h');
        if (c.argcount > 0 && (c.args[0] & ~kArgMore) == 4) insert_ = (cmd == 'h');
        break;
      case 's': {  // DECSLRM, state.c
        std::int64_t left = static_cast<std::int64_t>(c.arg(0, 1)) - 1;
        std::int64_t right =
            c.arg(1, kArgMissing) == kArgMissing ? -1 : static_cast<std::int64_t>(c.arg(1, 0));
        left = std::clamp<std::int64_t>(left, 0, bounds_.cols);
        right = std::max<std::int64_t>(right, -1);
        if (left == 0 && right == bounds_.cols) right = -1;
        else right = std::min<std::int64_t>(right, bounds_.cols);
        if (right > -1 && right <= left) {
          left = 0;
          right = -1;
        }
        bounds_.margin_left = static_cast<int>(left);
        bounds_.margin_right = static_cast<int>(right);
        break;
      }
      case 'r': {  // DECSTBM, state.c: DECSLRM's clamping in rows, but a region without a
                   // bottom is degenerate too when its top is past the last row
        std::int64_t top = static_cast<std::int64_t>(c.arg(0, 1)) - 1;
        std::int64_t bottom =
            c.arg(1, kArgMissing) == kArgMissing ? -1 : static_cast<std::int64_t>(c.arg(1, 0));
        top = std::clamp<std::int64_t>(top, 0, bounds_.rows);
        bottom = std::max<std::int64_t>(bottom, -1);
        if (top == 0 && bottom == bounds_.rows) bottom = -1;
        else bottom = std::min<std::int64_t>(bottom, bounds_.rows);
        if ((bottom > -1 ? bottom : bounds_.rows) <= top) {
          top = 0;
          bottom = -1;
        }
        bounds_.region_top = static_cast<int>(top);
        bounds_.region_bottom = static_cast<int>(bottom);
        break;
      }
      case 'g': {  // TBC
        const std::uint32_t v = c.arg(0, 0);
        if (v == 0 || v == 3 || v == 5) sticky_ |= kTabStops;
        break;
      }
      default: break;
    }
  } else if (c.dec_private() && (cmd == 'h' || cmd == 'l') && c.argcount > 0) {
    const std::uint32_t mode = c.args[0] & ~kArgMore;
    if (mode == 6) bounds_.origin = (cmd == 'h');
    if (mode == 7) autowrap_ = (cmd == 'h');
    if (mode == 69) bounds_.declrmm = (cmd == 'h');
  } else if (c.leader_len == 0 && c.intermed_len == 1 && c.intermed[0] == '"' && cmd == 'q') {
    if (c.arg(0, 0) == 1) sticky_ |= kProtectedCells;  // DECSCA
  }
  sink.csi(c,
           std::span<const std::uint32_t>(all_args_.data(),
                                          static_cast<std::size_t>(c.overflowed ? all_argc_ : 0)),
           at);
}

// One byte in CSI_LEADER / CSI_ARGS / CSI_INTERMED state (parser.c), C0 already handled.
void MirrorInput::csi_byte(unsigned char c, std::size_t at, Sink& sink) {
  Csi& q = csi_;
  if (state_ == State::csi_leader) {
    if (c >= 0x3c && c <= 0x3f) {
      if (q.leader_len < 15) q.leader[q.leader_len++] = static_cast<char>(c);
      return;
    }
    csi_argi_ = 0;
    arg_accum_ = kArgMissing;
    state_ = State::csi_args;
  }
  if (state_ == State::csi_args) {
    if (c >= '0' && c <= '9') {
      if (arg_accum_ == kArgMissing) arg_accum_ = 0;
      arg_accum_ = arg_accum_ * 10 + (c - '0');  // libvterm's long, wrapping
      return;
    }
    if (c == ':' || c == ';') {
      std::uint64_t a = arg_accum_;
      if (c == ':') a |= kArgMore;
      const auto stored = static_cast<std::uint32_t>(a & 0xffffffffu);
      if (csi_argi_ < kMaxCsiArgs) q.args[csi_argi_] = stored;
      if (all_argc_ < static_cast<int>(all_args_.size())) all_args_[all_argc_++] = stored;
      ++csi_argi_;
      arg_accum_ = kArgMissing;
      if (csi_argi_ == kMaxCsiArgs && !q.overflowed) {
        // libvterm would now write csi_args[16]: from this separator on it sees nothing.
        q.overflowed = true;
        sink.csi_overflow(at);
      }
      return;
    }
    // End of arguments.
    const auto stored = static_cast<std::uint32_t>(arg_accum_ & 0xffffffffu);
    if (csi_argi_ < kMaxCsiArgs) q.args[csi_argi_] = stored;
    if (all_argc_ < static_cast<int>(all_args_.size())) all_args_[all_argc_++] = stored;
    ++csi_argi_;
    q.argcount = std::min(csi_argi_, kMaxCsiArgs);
    state_ = State::csi_intermed;
  }
  // CSI_INTERMED
  if (is_intermed(c)) {
    if (q.intermed_len < 15) q.intermed[q.intermed_len++] = static_cast<char>(c);
    return;
  }
  if (c >= 0x40 && c <= 0x7e) {
    q.final = static_cast<char>(c);
    state_ = State::ground;
    dispatch_csi(at, sink);
  } else {
    state_ = State::ground;  // invalid CSI: dropped without dispatch, the byte consumed
    if (q.overflowed) sink.csi_abort(at + 1);
  }
}

void MirrorInput::scan(std::span<const unsigned char> buf, std::size_t from, Sink& sink) {
  const std::size_t n = buf.size();
  std::size_t pos = from;
  last_split_ = from;
  if (!clean()) token_start_ = from > 0 ? 0 : std::string_view::npos;
  // A text run open at the end of the last buffer continues here; its unfinished UTF-8
  // character, if any, was carried to [0, from).
  const bool continuing = in_text_ && state_ == State::ground;
  in_text_ = false;
  if (utf8_remaining_ > 0) {
    if (from == 0) {
      utf8_remaining_ = 0;  // not carried: libvterm already has it; nothing to track
    } else {
      utf8_lead_at_ = 0;
      if (from < n && (buf[from] < 0x20 || buf[from] == 0x7f)) {
        sink.drop_text(0, from);  // the character ends unfinished (see scan_text)
        utf8_remaining_ = 0;
      }
    }
  }
  while (pos < n) {
    const unsigned char c = buf[pos];
    if (state_ == State::ground && c >= 0x20 && c != 0x7f) {
      if (!in_text_) {
        in_text_ = true;
        text_start_ = (continuing && pos == from) ? 0 : pos;
        prev_ascii_ = false;
        sink.text_begin(text_start_);
      }
      pos = scan_text(buf, pos, sink);
      continue;
    }
    // Everything else, one byte at a time (parser.c vterm_input_write). Any of it but DEL
    // ends the glyph being printed (xterm.js: every parser action but "ignore").
    if (c != 0x7f) cluster_ = 0;
    if (c < 0x20 || c == 0x7f) {
      control_byte(c, pos, sink);
    } else if (state_ == State::esc || state_ == State::esc_in_string) {
      escape_byte(c, pos, sink);
    } else if (in_csi()) {
      csi_byte(c, pos, sink);
      if (state_ == State::ground) {
        sink.split_point(pos + 1, false);
      } else if (pos + 1 - last_split_ >= kSplitEvery) {
        last_split_ = pos + 1;  // libvterm keeps CSI state across writes
        if (!csi_.overflowed) sink.split_point(pos + 1, false);
      }
    } else {
      string_byte(c, pos, sink);
    }
    ++pos;
  }
}

// Text from `pos` (a printable byte in ground state) up to the next control, ESC, NUL or DEL,
// or the end of `buf`: the hot loop. libvterm decodes it as UTF-8 (GL charsets apply to runs
// that start with ASCII; they never change where a character ends). Returns where it stopped.
std::size_t MirrorInput::scan_text(std::span<const unsigned char> buf, std::size_t pos,
                                   Sink& sink) {
  const std::size_t n = buf.size();
  // A write starts here anyway (a new buffer or run), so no decoder switch is due at pos;
  // unless part of a character carried from the last buffer comes first (it is written with
  // the run): ASCII at pos breaks it, and the table must decode pos as it does in one buffer.
  const bool gl_table = this->gl_table();
  const std::size_t switch_from = utf8_remaining_ > 0 ? pos : pos + 1;
  // single_shift_ != 0, kept in a register: only an ESC sets a shift (it ends the run), and
  // the non-ASCII branch below reloads it after the calls that may take it.
  bool shift = single_shift_ != 0;
  for (; pos < n; ++pos) {
    const unsigned char c = buf[pos];
    if (c < 0x20 || c == 0x7f) break;
    if (c < 0x80) {
      if (gl_table && !prev_ascii_ && pos >= switch_from) {
        // Invariant: libvterm is never left holding part of a character (see text_lead):
        // a broken one becomes U+FFFD before the write ends.
        if (utf8_remaining_ > 0) replace(utf8_lead_at_, pos - utf8_lead_at_, sink);
        sink.decoder_switch(pos);
        shift = single_shift_ != 0;
      }
      // A broken sequence before it decodes to U+FFFD inside this run, as in libvterm (G2's
      // UTF-8 decoder, after a single shift, gives both in one call: the piece ends after it).
      utf8_remaining_ = 0;
      if (shift) {
        shifted_character(pos + 1, c, sink);
        shift = single_shift_ != 0;
      }
      if (prev_ascii_ && pos - last_split_ >= kSplitEvery) {
        last_split_ = pos;
        sink.split_point(pos, false);
      }
      prev_ascii_ = true;
      cluster_ = 1;
      continue;
    }
    if (gl_table && prev_ascii_ && pos >= switch_from) sink.decoder_switch(pos);
    prev_ascii_ = false;
    if (c < 0xc0) {
      text_continuation(c, pos, sink);
    } else {
      text_lead(c, pos, sink);
    }
    shift = single_shift_ != 0;
  }
  if (pos < n) {
    // The run ends at a control, ESC, NUL or DEL. An unfinished UTF-8 sequence never reaches
    // libvterm: its decoders would carry it into a later run (see docs/snapshot.md).
    if (utf8_remaining_ > 0) {
      sink.drop_text(utf8_lead_at_, pos - utf8_lead_at_);
      utf8_remaining_ = 0;
    }
    in_text_ = false;
    sink.text_end(pos);
  }
  return pos;
}

// A UTF-8 continuation byte inside a text run: it may complete a character, which either
// starts a glyph or joins the one being printed (cluster_ counts its characters).
void MirrorInput::text_continuation(unsigned char c, std::size_t pos, Sink& sink) {
  if (utf8_remaining_ == 0) {
    cluster_ = 1;  // a stray continuation byte: U+FFFD
    if (single_shift_ != 0) shifted_character(pos + 1, c, sink);
    return;
  }
  utf8_cp_ = (utf8_cp_ << 6) | (c & 0x3fu);
  if (--utf8_remaining_ > 0) return;
  if (utf8_c2_ && c <= 0x9f) {
    // U+0080-U+009F: libvterm 0.1.4 gives it width -1 and moves the cursor left of column 0;
    // the next erase then dereferences a null cell. (A C1 control in xterm.js: the glyph ends.)
    sink.drop_text(utf8_lead_at_, pos + 1 - utf8_lead_at_);
    cluster_ = 0;
  } else if (utf8_cp_ > 0x10ffff) {
    replace(utf8_lead_at_, pos + 1 - utf8_lead_at_, sink);
    cluster_ = 1;
  } else if (!is_zero_width(utf8_cp_) || utf8_cp_ < kShortest[utf8_length_]) {
    cluster_ = 1;  // a glyph, or U+FFFD for an overlong form (encoding.c)
    if (single_shift_ != 0) shifted_character(pos + 1, 0, sink);
  } else if (cluster_ == 0) {
    if (sink.lone_zero_width(utf8_lead_at_, pos + 1 - utf8_lead_at_, utf8_cp_))
      single_shift_ = 0;  // taken by the text written in its place, a write of its own
  } else if (++cluster_ > static_cast<int>(kVtermCellChars)) {
    sink.cluster_overflow(utf8_lead_at_, pos + 1 - utf8_lead_at_, utf8_cp_);
  }
}

// A UTF-8 lead byte inside a text run (libvterm also accepts 5- and 6-byte forms).
void MirrorInput::text_lead(unsigned char c, std::size_t pos, Sink& sink) {
  if (pos - last_split_ >= 3 * kSplitEvery && utf8_remaining_ == 0) {
    last_split_ = pos;
    sink.split_point(pos, false);  // no ASCII for 48 KiB: split between characters
  }
  if (utf8_remaining_ > 0) {
    // A lead byte cuts the character before it short: libvterm decodes that to U+FFFD when it
    // sees this byte in the same write. Written as U+FFFD instead, since this byte may not
    // reach libvterm (a dropped C1 or unfinished character): invariant, libvterm is never left
    // holding part of a character the tokenizer has ended.
    replace(utf8_lead_at_, pos - utf8_lead_at_, sink);
    cluster_ = 1;
  }
  utf8_c2_ = (c == 0xc2);
  utf8_lead_at_ = pos;
  utf8_remaining_ = c < 0xe0 ? 1 : c < 0xf0 ? 2 : c < 0xf8 ? 3 : c < 0xfc ? 4 : c < 0xfe ? 5 : 0;
  utf8_length_ = utf8_remaining_ + 1;
  if (utf8_remaining_ == 0) {
    cluster_ = 1;  // 0xFE, 0xFF: U+FFFD
    if (single_shift_ != 0) shifted_character(pos + 1, c, sink);
  }
  utf8_cp_ = c & (c < 0xe0   ? 0x1fu
                  : c < 0xf0 ? 0x0fu
                  : c < 0xf8 ? 0x07u
                  : c < 0xfc ? 0x03u
                             : 0x01u);
  if (utf8_remaining_ > 0) token_start_ = pos;
}

void MirrorInput::replace(std::size_t at, std::size_t len, Sink& sink) {
  sink.replace_text(at, len);
  single_shift_ = 0;  // U+FFFD is written to libvterm in a write of its own: it takes the shift
}

void MirrorInput::shifted_character(std::size_t end, unsigned char byte, Sink& sink) {
  // G2 / G3 decode by a table ('0', 'A', 'B' designated) or as UTF-8 ('u', its own decoder):
  // a table reads a byte >= 0x80 as its GR half and skips one whose low seven bits are a C0
  // control or DEL (encoding.c decode_table: the parser then moves past it, the shift still
  // waiting). The character itself may go on as U+FFFD glyphs in the next piece (a lead byte
  // read by the table): none of them is a mark, so that piece joins as any other.
  const char set = designation(single_shift_);
  if (set != 'u' && byte >= 0x80 && ((byte & 0x7f) < 0x20 || (byte & 0x7f) == 0x7f)) {
    // Invariant: every text write libvterm gets prints a glyph. The mirror reads the last
    // glyph and the pending wrap from the last write that printed one, and a text write that
    // printed nothing would hide an earlier one written with it. So the byte libvterm skips
    // never reaches it; it prints nothing, and a zero-width character next follows no glyph.
    sink.drop_text(end - 1, 1);
    cluster_ = 0;
    return;
  }
  single_shift_ = 0;
  sink.decoder_switch(end);
}

// A C0 control, NUL or DEL outside text: acted on in every state.
void MirrorInput::control_byte(unsigned char c, std::size_t pos, Sink& sink) {
  if (c == 0x00 || c == 0x7f) {  // NUL, DEL: ignored everywhere
    if (state_ == State::ground) sink.split_point(pos + 1, false);
    return;
  }
  if (c == 0x18 || c == 0x1a) {  // CAN, SUB
    if (in_csi() && csi_.overflowed) sink.csi_abort(pos);
    if (in_string()) end_string(false);
    state_ = State::ground;
    sink.split_point(pos + 1, false);
    return;
  }
  if (c == 0x1b) {
    if (state_ == State::string) {
      state_ = State::esc_in_string;
      return;
    }
    if (in_csi() && csi_.overflowed) sink.csi_abort(pos);
    if (state_ == State::esc_in_string) end_string(false);
    else token_start_ = pos;  // an abandoned string keeps its start: carried whole
    state_ = State::esc;
    esc_ = Esc{};
    return;
  }
  if (c == 0x07 && state_ == State::string) {
    end_string(true);  // BEL terminates OSC / DCS
    state_ = State::ground;
    sink.split_point(pos + 1, false);
    return;
  }
  control(c);  // other C0: executed in every state
  if (in_csi() && csi_.overflowed && csi_.controls_after_overflow.size() < kMaxOverflowControls)
    csi_.controls_after_overflow += static_cast<char>(c);
  if (state_ == State::ground) sink.split_point(pos + 1, false);
}

// A byte after ESC (also the ESC that may end a string as ST).
void MirrorInput::escape_byte(unsigned char c, std::size_t pos, Sink& sink) {
  if (state_ == State::esc_in_string) {
    if (c == 0x5c) {  // ST
      end_string(true);
      state_ = State::ground;
      sink.split_point(pos + 1, false);
      return;
    }
    end_string(false);
    state_ = State::esc;
    esc_ = Esc{};
  }
  if (c == 0x50) {  // DCS
    start_string(StringType::dcs);
  } else if (c == 0x5b) {  // CSI
    csi_ = Csi{};
    all_argc_ = 0;
    state_ = State::csi_leader;
  } else if (c == 0x5d) {  // OSC
    start_string(StringType::osc);
  } else if (is_intermed(c)) {
    if (esc_.intermed_len < 15) esc_.intermed[esc_.intermed_len++] = static_cast<char>(c);
  } else if (esc_.intermed_len == 0 && c >= 0x40 && c < 0x60) {
    // A C1 control spelled ESC Fe (state.c on_control).
    switch (c + 0x40) {
      case 0x88: sticky_ |= kTabStops; break;  // HTS
      case 0x8e: single_shift_ = 2; break;     // SS2
      case 0x8f: single_shift_ = 3; break;     // SS3
      case 0x98:
      case 0x9e:
      case 0x9f: sticky_ |= kHiddenString; break;  // SOS PM APC
      default: break;
    }
    state_ = State::ground;
    sink.split_point(pos + 1, false);
  } else if (c >= 0x30 && c < 0x7f) {
    state_ = State::ground;
    dispatch_esc(c, pos, sink);
    sink.split_point(pos + 1, false);
  }
  // else: libvterm stays in ESC state
}

// A byte of an OSC or DCS string.
void MirrorInput::string_byte(unsigned char c, std::size_t pos, Sink& sink) {
  if (string_type_ == StringType::dcs && c == '$' && fragment_start_) {
    // A DCS starting "$q" is DECRQSS, and libvterm 0.1.4 answers a request it does not know
    // (DCS $ q ST, DCS $ q " p ST) with sprintf("0$r%.s", len, request): undefined behaviour,
    // the length read as a string pointer (glibc prints nothing at precision 0; ASan's printf
    // check reads it: SIGSEGV). Replies are dropped anyway, so libvterm does not see the
    // leading '$'s of a DCS and never answers a DECRQSS. (It keeps only the last write of a
    // split string: a split at 16 KiB inside a huge DCS can still hand it one starting "$q".)
    sink.drop_text(pos, 1);
  } else {
    fragment_start_ = false;
  }
  if (string_type_ == StringType::dcs) dcs_header_.byte(c);
  else if (string_prefix_.size() < kStringPrefix) string_prefix_ += static_cast<char>(c);
  if (pos + 1 - last_split_ >= kSplitEvery) {
    last_split_ = pos + 1;
    sink.split_point(pos + 1, true);
  }
}

}  // namespace backscroll::term
