#include "engine/term/plain_scroll_scan.hpp"

#include <algorithm>
#include <cstring>

#include "engine/term/text_run.hpp"
#include "engine/term/zero_width.hpp"

namespace backscroll::term {
namespace {

constexpr std::uint8_t kEsc = 0x1b;

constexpr std::uint8_t kBel = 0x07;

bool printable_ascii(std::uint8_t b) { return b >= 0x20 && b < 0x7f; }

// Bits [0, n) of a block's mask.
constexpr std::uint64_t below(unsigned n) {
  return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
}
unsigned lowest_bit(std::uint64_t x) { return static_cast<unsigned>(__builtin_ctzll(x)); }
unsigned highest_bit(std::uint64_t x) { return 63 - static_cast<unsigned>(__builtin_clzll(x)); }
// Digits, and the separators of parameters (';') and of an SGR's sub-parameters (':', which
// libvterm 0.1.4 stores as arguments too: each counts against its 16).
bool csi_parameter_byte(std::uint8_t b) { return (b >= '0' && b <= '9') || b == ';' || b == ':'; }

// The parameter bytes of the CSI at p (ESC [ at p[0], p[1]) before `end`: `final`, the index of
// the first byte from p[2] on that is not one (`end` when there is none), and how many of them
// are separators (';' and ':').
struct CsiParameters {
  std::size_t final;
  std::size_t separators;
};
CsiParameters csi_parameters(const std::uint8_t* p, std::size_t end) {
  std::size_t separators = 0;
  std::size_t k = 2;
  for (; k < end && csi_parameter_byte(p[k]); ++k) separators += p[k] == ';' || p[k] == ':';
  return {k, separators};
}

// A hash of a sequence (SGRs are 3 to 64 bytes), from whole-word loads.
std::uint64_t sequence_hash(std::string_view s) {
  constexpr std::uint64_t kMultiplier = 0x9e3779b97f4a7c15ull;
  const auto load = [&s]<typename Word>(std::size_t at, Word) -> std::uint64_t {
    Word w;
    std::memcpy(&w, s.data() + at, sizeof w);
    return w;
  };
  std::uint64_t h = s.size() * kMultiplier;
  const auto mix = [&h](std::uint64_t word) { h = (h ^ word) * kMultiplier; };
  const std::size_t n = s.size();
  if (n >= 8) {
    for (std::size_t at = 0; at + 8 < n; at += 8) mix(load(at, std::uint64_t{}));
    mix(load(n - 8, std::uint64_t{}));  // the last 8, overlapping the previous word
  } else if (n >= 4) {
    mix(load(0, std::uint32_t{}) | load(n - 4, std::uint32_t{}) << 32);
  } else {
    for (const char c : s) mix(static_cast<std::uint8_t>(c));
  }
  return h ^ (h >> 32);
}

// a == b, for the short sequences SGRs are: two overlapping word compares instead of a call.
bool same_sequence(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  const auto equal_at = [&]<typename Word>(std::size_t at, Word) {
    Word x;
    Word y;
    std::memcpy(&x, a.data() + at, sizeof x);
    std::memcpy(&y, b.data() + at, sizeof y);
    return x == y;
  };
  if (n >= 8 && n <= 16) return equal_at(0, std::uint64_t{}) && equal_at(n - 8, std::uint64_t{});
  if (n >= 4 && n < 8) return equal_at(0, std::uint32_t{}) && equal_at(n - 4, std::uint32_t{});
  return a == b;
}

// What an OSC's number (the digits between `ESC ]` and ';') makes of it in a plain run.
enum class OscKind { other, hyperlink, setting };
OscKind osc_kind(std::string_view number) {
  if (number == "8") return OscKind::hyperlink;
  for (const std::string_view setting : {"0", "1", "2", "7", "133", "633"})
    if (number == setting) return OscKind::setting;
  return OscKind::other;
}

// Whether CSI ? `digits` h / l is a setting: one of PlainScrollScan::kSettingModes.
bool setting_mode(std::string_view digits) {
  if (digits.empty() || digits.size() > 5) return false;
  int mode = 0;
  for (const char c : digits) mode = mode * 10 + (c - '0');
  const auto& modes = PlainScrollScan::kSettingModes;
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

// CSI m whose first parameter is 0 (or missing): every attribute is set again. `sgr` is a
// whole SGR, ESC [ digits and ';' m: the loop stops at its final byte at the latest.
bool resets_pen(std::string_view sgr) {
  std::size_t k = 2;
  while (sgr[k] == '0') ++k;
  return sgr[k] == ';' || sgr[k] == 'm';
}
}  // namespace

void PlainScrollScan::restart(Cursor at) {
  run_start_ = at;
  scanned_ = at;
  broken_ = false;
  lfs_ = 0;
  state_ = State::ground;
  sequence_.clear();
  column0_ = false;
  designated_g0_ = false;
  line_ = Line::none;
  clear_sgrs();
  pen_.clear();
  carried_sgrs_.clear();
  carried_sizes_.clear();
  unfolded_from_ = at;
  unfolded_sgrs_ = 0;
  sgrs_since_fold_ = 0;
  targets_.clear();
  settings_.clear();
  setting_bytes_.clear();
  settings_dropped_ = 0;
}

void PlainScrollScan::scan(std::string_view bytes) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t size = bytes.size();
  piece_ = data;
  piece_start_ = scanned_;
  std::size_t i = 0;
  while (i < size && !broken_) {
    if (state_ == State::ground) {
      if (line_ == Line::none) {
        // Where nothing is tracked but the column and the LFs: the rest of a line's text, the
        // CR and LF that end it, and the SGRs between words (what byte() and
        // sequence_in_place() do with them then, without their calls). From an ESC on, blocks
        // of 64 bytes while they can: colored text has a sequence every few words, plain text
        // runs to its line's end faster alone.
        const std::uint8_t b = data[i];
        std::size_t used = b == kEsc && blocks_ ? blocks(data + i, size - i) : 0;
        if (used > 0) {
          // taken by the blocks
        } else if (is_text_byte(b)) {
          column0_ = false;
          used = text_run_length(data + i, size - i);
        } else if (b == '\r') {
          column0_ = true;
          used = 1;
        } else if (b == '\n' && !may_become_target(scanned_ + 1)) {
          ++lfs_;
          used = 1;
        } else if (b == kEsc) {
          used = sgr_in_place(data + i, size - i);
          if (broken_) break;
        }
        if (used > 0) {
          i += used;
          scanned_ = scanned_ + used;
          continue;
        }
      }
      if (data[i] == kEsc) {
        const std::size_t used = sequence_in_place(data + i, size - i);
        if (broken_) break;
        i += used;
        scanned_ = scanned_ + used;
        if (used > 0) continue;
      }
    }
    byte(data[i]);
    if (broken_) break;
    ++i;
    scanned_ = scanned_ + 1;
  }
  if (!broken_) carry_unfolded_sgrs();
  piece_ = nullptr;
}

namespace {

// The sequences blocks() takes among a block's ESCs before `stop` (the first byte it leaves to
// the byte loop for its class), given `since_fold` SGRs counted since the last fold: each ESC
// must start an SGR of up to kMaxSgrParams parameters, an EL of at most one, or `ESC ( B`,
// ending within the block; the first that does not is where the block stops.
struct BlockSequences {
  unsigned stop;         // that first ESC, else the `stop` given
  bool go_on;            // whether the next block may take the bytes from `stop` on
  std::uint64_t finals;  // the last byte of each sequence taken
  // A bit per SGR taken, at one of its bytes (its ESC or its final byte: the caller counts
  // them below a stop that lies inside no sequence taken, an ESC refused or an LF).
  std::uint64_t sgrs;
  std::uint64_t designations;  // the ESCs of the `ESC ( B`s taken
};

// One ESC at a time: the reference, and what blocks() does where a limit may be reached.
BACKSCROLL_WIDE_MASKS BlockSequences sequences_one_by_one(const std::uint8_t* block,
                                                          const ByteMasks& m, unsigned stop,
                                                          std::size_t since_fold) {
  BlockSequences s{stop, stop == 64, 0, 0, 0};
  // No sequence taken holds an ESC, so the next ESC is the next sequence's.
  for (std::uint64_t escs = m.esc & below(stop); escs != 0; escs &= escs - 1) {
    const unsigned e = lowest_bit(escs);
    // Bit j: byte e + 2 + j is no parameter byte (the shift brings in zeros past the block).
    const std::uint64_t not_param = e + 2 < 64 ? ~m.param >> (e + 2) : 0;
    if (not_param == 0) {  // the sequence may go on in the next block
      s.stop = e;
      s.go_on = true;
      return s;
    }
    unsigned last;  // the sequence's final byte
    if (block[e + 1] == '(' && block[e + 2] == 'B') {
      s.designations |= std::uint64_t{1} << e;
      last = e + 2;
    } else {
      last = e + 2 + lowest_bit(not_param);
      const unsigned params = last - e - 2;
      const std::uint64_t separators = m.separator >> (e + 2) & below(params);
      const bool sgr = block[last] == 'm';
      // An SGR of at most kMaxSgrParams parameters, or an EL of one; the SGR a fold follows
      // is the byte loop's (count_sgr()).
      const bool fits = sgr ? params < PlainScrollScan::kMaxSgrParams ||
                                  static_cast<std::size_t>(__builtin_popcountll(separators)) <
                                      PlainScrollScan::kMaxSgrParams
                            : block[last] == 'K' && separators == 0;
      if (block[e + 1] != '[' || !fits ||
          since_fold + sgr >= PlainScrollScan::kMaxSgrsBetweenFolds) {
        s.stop = e;
        s.go_on = false;
        return s;
      }
      s.sgrs |= static_cast<std::uint64_t>(sgr) << e;
      since_fold += sgr;
    }
    s.finals |= std::uint64_t{1} << last;
  }
  return s;
}

#if defined(__x86_64__)
// The bytes equal to c among 64.
BACKSCROLL_WIDE_MASKS inline std::uint64_t bytes_equal(const __m512i& bytes, char c) {
  return _mm512_cmpeq_epi8_mask(bytes, _mm512_set1_epi8(c));
}

// All ESCs of the block at once, in a few dozen mask operations instead of a turn per ESC
// (colored output has one every 8 to 10 bytes). Falls back to sequences_one_by_one where the
// block holds enough separators or SGRs that a limit may be reached.
BACKSCROLL_WIDE_MASKS BlockSequences sequences_at_once(const std::uint8_t* block,
                                                       const ByteMasks& m, unsigned stop,
                                                       std::size_t since_fold) {
  const std::uint64_t escs = m.esc & below(stop);
  if (escs == 0) return {stop, stop == 64, 0, 0, 0};
  const __m512i bytes = _mm512_loadu_si512(block);
  // Bytes [top, 64) are parameter bytes: an ESC from top - 2 on may go on in the next block.
  const unsigned top = highest_bit(~m.param) + 1;  // an ESC is no parameter byte
  const std::uint64_t open = escs & ~below(top >= 2 ? top - 2 : 0);
  const std::uint64_t closed = escs & ~open;
  const std::uint64_t designations =
      closed & bytes_equal(bytes, '(') >> 1 & bytes_equal(bytes, 'B') >> 2;
  const std::uint64_t csis = closed & bytes_equal(bytes, '[') >> 1;
  // Each CSI's final byte is the first byte from its third on that is no parameter byte: a 1
  // added at the third byte carries through the run of parameter bytes there and stops on
  // it. Runs of different CSIs are apart (an ESC is no parameter byte), and none reaches the
  // block's end (theirs are open), so neither carry reaches another run or bit 64.
  const std::uint64_t thirds = csis << 2;
  const std::uint64_t finals = (thirds + m.param) & ~m.param;
  // Each CSI's parameter bytes, [third, final): disjoint ranges, so one subtraction.
  const std::uint64_t separators = m.separator & (finals - thirds);
  const std::uint64_t sgrs = finals & bytes_equal(bytes, 'm');
  const std::uint64_t els = finals & bytes_equal(bytes, 'K');
  if (static_cast<std::size_t>(__builtin_popcountll(separators)) >=
          PlainScrollScan::kMaxSgrParams ||
      since_fold + static_cast<std::size_t>(__builtin_popcountll(sgrs)) >=
          PlainScrollScan::kMaxSgrsBetweenFolds) {
    return sequences_one_by_one(block, m, stop, since_fold);
  }
  // The finals of CSIs with a separator: the same carry, from each separator.
  const std::uint64_t separated = (separators + m.param) & ~m.param;
  const std::uint64_t refused_finals = (finals & ~sgrs & ~els) | (els & separated);
  std::uint64_t refused = open | (closed & ~designations & ~csis);
  if (refused_finals != 0) {
    refused |= std::uint64_t{1} << highest_bit(csis & below(lowest_bit(refused_finals)));
  }
  BlockSequences s{stop, stop == 64, 0, 0, 0};
  if (refused != 0) {
    s.stop = lowest_bit(refused);
    s.go_on = (open >> s.stop & 1) != 0;
  }
  // A sequence taken lies wholly below the first ESC refused.
  const std::uint64_t taken = below(s.stop);
  s.finals = (finals | designations << 2) & taken;
  s.sgrs = sgrs & taken;
  s.designations = designations & taken;
  return s;
}
#else
BlockSequences sequences_at_once(const std::uint8_t* block, const ByteMasks& m, unsigned stop,
                                 std::size_t since_fold) {
  return sequences_one_by_one(block, m, stop, since_fold);
}
#endif

}  // namespace

BACKSCROLL_WIDE_MASKS std::size_t PlainScrollScan::blocks(const std::uint8_t* p, std::size_t n) {
  // Every sequence a block takes is shorter than the limit.
  static_assert(kMaxSequenceBytes >= 64);
  std::size_t taken_bytes = 0;
  while (n - taken_bytes >= 64) {
    const std::uint8_t* const block = p + taken_bytes;
    const ByteMasks m = classify_64_wide(block);
    const unsigned first_stop = m.stop != 0 ? lowest_bit(m.stop) : 64;
    const BlockSequences sequences =
        escs_at_once_ ? sequences_at_once(block, m, first_stop, sgrs_since_fold_)
                      : sequences_one_by_one(block, m, first_stop, sgrs_since_fold_);
    unsigned stop = sequences.stop;
    bool go_on = sequences.go_on;
    const std::uint64_t finals = sequences.finals;
    // The sequences' bytes: each run from an ESC to its final byte is final * 2 - ESC (modulo
    // 2^64, which also holds for a final byte at bit 63).
    const std::uint64_t in_sequence = (finals << 1) - (m.esc & below(stop));
    // Whether a CR came after the last text byte before byte j (LF and BS keep the column).
    const std::uint64_t text = m.text & ~in_sequence;
    const auto column0_before = [&](unsigned j) {
      const std::uint64_t crs = m.cr & below(j);
      const std::uint64_t texts = text & below(j);
      if (crs == 0) return texts == 0 && column0_;
      return texts == 0 || highest_bit(crs) > highest_bit(texts);
    };
    // LFs from the first whose line is far enough from the last target: the first of them at
    // column 0 is the byte loop's (line_feed() starts its line there).
    unsigned spaced = 0;
    if (!targets_.empty()) {
      const Cursor due = targets_.back().line_start + target_spacing_;
      const Cursor first_line = scanned_ + (taken_bytes + 1);  // the line an LF at byte 0 starts
      if (due > first_line)
        spaced = static_cast<unsigned>(std::min<std::uint64_t>(due - first_line, 64));
    }
    for (std::uint64_t lfs = m.lf & below(stop) & ~below(spaced); lfs != 0; lfs &= lfs - 1) {
      if (const unsigned j = lowest_bit(lfs); column0_before(j)) {
        stop = j;
        go_on = false;
        break;
      }
    }
    const std::uint64_t taken = below(stop);
    lfs_ += static_cast<std::uint64_t>(__builtin_popcountll(m.lf & taken));
    column0_ = column0_before(stop);
    if ((sequences.designations & taken) != 0) designated_g0_ = true;
    const auto counted = static_cast<std::size_t>(__builtin_popcountll(sequences.sgrs & taken));
    unfolded_sgrs_ += counted;
    sgrs_since_fold_ += counted;
    taken_bytes += stop;
    if (!go_on || stop == 0) break;
  }
  block_bytes_ += taken_bytes;
  return taken_bytes;
}

std::size_t PlainScrollScan::sgr_in_place(const std::uint8_t* p, std::size_t n) {
  if (n < 3 || p[1] != '[') return 0;
  const auto [k, separators] = csi_parameters(p, std::min(n, kMaxSequenceBytes));
  if (k == n || k == kMaxSequenceBytes) return 0;  // sequence_in_place() decides
  // EL (CSI digits K: gcc sends one after every SGR) changes nothing the scan tracks.
  if (p[k] == 'K' && separators == 0) return k + 1;
  if (p[k] != 'm' || separators >= kMaxSgrParams) return 0;
  sgr_in_piece(scanned_ + (k + 1));
  return broken_ ? 0 : k + 1;
}

std::size_t PlainScrollScan::sequence_in_place(const std::uint8_t* p, std::size_t n) {
  text_ends();  // what byte() does at an ESC, done once
  if (n < 2) return 0;
  if (p[1] == '(') {
    if (n < 3) return 0;
    if (p[2] != 'B') {
      brk();
      return 0;
    }
    designation_end();
    return 3;
  }
  if (p[1] == ']') {
    // A hyperlink (`ESC ] 8 ;`, printable ASCII) or a setting (`ESC ] 0 ;`, 1, 2, 7, 133, 633:
    // printable ASCII and UTF-8 from U+00A0), then BEL or `ESC \`. Anything else inside (a
    // control libvterm would run, a C1 character, malformed UTF-8) ends the run at the ESC.
    std::size_t k = 2;
    while (k < n && k < 6 && p[k] >= '0' && p[k] <= '9') ++k;
    if (k == n) return 0;  // goes on in the next piece
    const OscKind kind = osc_kind(std::string_view(reinterpret_cast<const char*>(p) + 2, k - 2));
    if (p[k] != ';' || kind == OscKind::other) {
      brk();
      return 0;
    }
    Utf8Check payload;
    for (++k; k < n && p[k] != kBel && p[k] != kEsc; ++k) {
      if (k >= kMaxOscBytes ||
          (kind == OscKind::setting ? !payload.take(p[k]) : !printable_ascii(p[k]))) {
        brk();
        return 0;
      }
    }
    if (k == n) return 0;  // goes on in the next piece
    std::size_t end = 0;   // one past the terminator
    if (p[k] == kBel) {
      end = k + 1;
    } else {
      if (k + 1 == n) return 0;
      if (p[k + 1] == '\\') end = k + 2;
    }
    if (end == 0 || end > kMaxOscBytes || !payload.complete()) {
      brk();
      return 0;
    }
    const std::string_view sequence(reinterpret_cast<const char*>(p), end);
    if (kind == OscKind::hyperlink) hyperlink_end(sequence);
    else setting_end(sequence, scanned_);
    return broken_ ? 0 : end;
  }
  if (p[1] != '[') {
    brk();
    return 0;
  }
  if (n >= 3 && p[2] == '?') {
    // A setting: `ESC [ ?`, one mode of kSettingModes (up to five digits), h or l.
    std::size_t k = 3;
    while (k < n && k < 8 && p[k] >= '0' && p[k] <= '9') ++k;
    if (k == n) return 0;  // goes on in the next piece
    if ((p[k] != 'h' && p[k] != 'l') ||
        !setting_mode(std::string_view(reinterpret_cast<const char*>(p) + 3, k - 3))) {
      brk();
      return 0;
    }
    setting_end(std::string_view(reinterpret_cast<const char*>(p), k + 1), scanned_);
    return broken_ ? 0 : k + 1;
  }
  // The same limits as byte()'s: at most kMaxSequenceBytes, ESC and final byte included. One
  // pass: the separators are counted on the way.
  const auto [k, separators] = csi_parameters(p, std::min(n, kMaxSequenceBytes));
  if (k == n) return 0;  // goes on in the next piece
  if (k == kMaxSequenceBytes || (p[k] != 'm' && p[k] != 'K')) {
    brk();
    return 0;
  }
  sequence_end(std::string_view(reinterpret_cast<const char*>(p), k + 1), separators,
               /*in_piece=*/true);
  return broken_ ? 0 : k + 1;
}

// One byte at scanned_ (not counted yet).
void PlainScrollScan::byte(std::uint8_t b) {
  switch (state_) {
    case State::ground:
      if (is_text_byte(b)) {
        text(b);
      } else if (b == '\n') {
        text_ends();
        line_feed();
      } else if (b == '\r') {
        text_ends();
        if (line_ == Line::prefix) pending_.prefix += '\r';  // at column 0: no effect
        else line_ = Line::none;
        column0_ = true;
      } else if (b == '\t') {
        text_ends();
        line_ = Line::none;
        column0_ = false;
      } else if (b == '\b') {
        // Overstrike (`man` for a terminal without SGR: `N BS N` bold, `_ BS x` underlined).
        // BS moves the cursor left, and from column 0 nowhere (no wrap is pending there on the
        // screens a jump is made on), so the column stays known to be 0 where it was.
        text_ends();
        if (line_ == Line::prefix) pending_.prefix += '\b';
        else line_ = Line::none;
      } else if (b == kEsc) {
        text_ends();
        state_ = State::escape;
        sequence_.assign(1, static_cast<char>(b));
        sequence_start_ = scanned_;
      } else {
        brk();  // another control, or DEL
      }
      break;
    case State::escape:
      if (b != '[' && b != '(' && b != ']') return brk();
      sequence_ += static_cast<char>(b);
      state_ = b == '[' ? State::csi : b == '(' ? State::designation : State::osc;
      break;
    case State::osc:  // its number and ';' after `ESC ]`
      if (b >= '0' && b <= '9' && sequence_.size() < 6) {
        sequence_ += static_cast<char>(b);
        break;
      }
      if (b != ';') return brk();
      switch (osc_kind(std::string_view(sequence_).substr(2))) {
        case OscKind::other: return brk();
        case OscKind::hyperlink: osc_setting_ = false; break;
        case OscKind::setting: osc_setting_ = true; break;
      }
      osc_utf8_.reset();
      sequence_ += static_cast<char>(b);
      state_ = State::osc_body;
      break;
    case State::osc_body:
      if (sequence_.size() + 1 > kMaxOscBytes) return brk();
      if (b == kBel || b == kEsc) {
        if (!osc_utf8_.complete()) return brk();
        sequence_ += static_cast<char>(b);
        if (b == kEsc) state_ = State::osc_st;
        else osc_end();
        break;
      }
      if (osc_setting_ ? !osc_utf8_.take(b) : !printable_ascii(b)) return brk();
      sequence_ += static_cast<char>(b);
      break;
    case State::osc_st:
      if (sequence_.size() + 1 > kMaxOscBytes || b != '\\') return brk();
      sequence_ += static_cast<char>(b);
      osc_end();
      break;
    case State::dec_mode:  // after `ESC [ ?`
      sequence_ += static_cast<char>(b);
      if (b >= '0' && b <= '9' && sequence_.size() <= 8) break;
      if ((b == 'h' || b == 'l') &&
          setting_mode(std::string_view(sequence_).substr(3, sequence_.size() - 4)))
        return setting_end(sequence_, sequence_start_);
      brk();
      break;
    case State::designation:
      if (b != 'B') return brk();
      designation_end();
      break;
    case State::csi:
      if (b == '?' && sequence_.size() == 2) {
        sequence_ += static_cast<char>(b);
        state_ = State::dec_mode;
        break;
      }
      sequence_ += static_cast<char>(b);
      if (sequence_.size() > kMaxSequenceBytes) return brk();
      if (csi_parameter_byte(b)) return;
      if (b == 'm' || b == 'K') {
        return sequence_end(
            sequence_,
            static_cast<std::size_t>(std::count_if(sequence_.begin(), sequence_.end(),
                                                   [](char c) { return c == ';' || c == ':'; })),
            /*in_piece=*/false);
      }
      brk();  // another CSI, a private or sub-parameter form, a control inside it
      break;
  }
}

void PlainScrollScan::text(std::uint8_t b) {
  column0_ = false;
  switch (line_) {
    case Line::none: break;
    case Line::prefix:
      // The line's first glyph: printable ASCII, or a UTF-8 character (decoded next).
      pending_.prefix += static_cast<char>(b);
      marks_ = 0;
      if (printable_ascii(b)) {
        pending_.end = scanned_ + 1;
        line_ = Line::glyph;
      } else {
        line_ = start_character(b) ? Line::first : Line::none;
      }
      break;
    case Line::first:
      pending_.prefix += static_cast<char>(b);
      line_ = Line::none;
      if (const Decoded got = continue_character(b); got == Decoded::more) {
        line_ = Line::first;
      } else if (got == Decoded::glyph) {
        pending_.end = scanned_ + 1;
        line_ = Line::glyph;
      }
      break;
    case Line::glyph:
      // A combining mark after the glyph joins it within one libvterm write: the target ends
      // after the glyph and the marks that join it (at most kMaxTargetMarks), before an ASCII
      // byte or a character that cannot join them (decoded next, its bytes kept in the prefix
      // until it is known).
      line_ = Line::none;
      if (b < 0x80) {
        add_target();
      } else if (start_character(b)) {
        next_from_ = pending_.prefix.size();
        pending_.prefix += static_cast<char>(b);
        line_ = Line::next;
      }
      break;
    case Line::next:
      pending_.prefix += static_cast<char>(b);
      line_ = Line::none;
      switch (continue_character(b)) {
        case Decoded::more: line_ = Line::next; break;
        case Decoded::glyph:
          pending_.prefix.resize(next_from_);
          add_target();
          break;
        case Decoded::mark:
          if (++marks_ > kMaxTargetMarks) break;
          pending_.end = scanned_ + 1;
          line_ = Line::glyph;
          break;
        case Decoded::none: break;
      }
      break;
  }
}

bool PlainScrollScan::start_character(std::uint8_t lead) {
  if (lead < 0xc2 || lead > 0xf4) return false;
  const int length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
  next_ = static_cast<char32_t>(lead & (0x7f >> length));
  next_bytes_left_ = static_cast<std::uint8_t>(length - 1);
  next_min_ = length == 4 ? 0x10000 : length == 3 ? 0x800 : 0xa0;
  return true;
}

PlainScrollScan::Decoded PlainScrollScan::continue_character(std::uint8_t b) {
  if ((b & 0xc0) != 0x80) return Decoded::none;  // malformed
  next_ = next_ << 6 | (b & 0x3f);
  if (--next_bytes_left_ > 0) return Decoded::more;
  // U+0080-U+009F are C1 controls to libvterm; overlong forms and surrogates are no character.
  if (next_ < next_min_ || next_ > 0x10ffff || (next_ >= 0xd800 && next_ <= 0xdfff))
    return Decoded::none;
  // A zero-width character joins the glyph before it; U+302A-U+302F and U+3099-U+309A do too,
  // but widen it, by where libvterm's write starts: no target holds them.
  if (is_zero_width(next_)) return Decoded::mark;
  return joins_at_write_start(next_) ? Decoded::none : Decoded::glyph;
}

void PlainScrollScan::text_ends() {
  if (line_ == Line::glyph) add_target();  // nothing can join the glyph any more
  // A UTF-8 character cut short (the line's first glyph, or what follows it) is no character:
  // libvterm drops it, and no target may rebuild it.
  else if (line_ == Line::first || line_ == Line::next) line_ = Line::none;
}

bool PlainScrollScan::may_become_target(Cursor line_start) const {
  // A line too close to the last target can never become one (add_target() would drop it).
  return column0_ &&
         (targets_.empty() || line_start - targets_.back().line_start >= target_spacing_);
}

void PlainScrollScan::line_feed() {
  const Cursor line_start = scanned_ + 1;
  // Nothing is tracked about a line that cannot become a target, and the pen is folded at a
  // line that can.
  if (!may_become_target(line_start)) {
    ++lfs_;
    line_ = Line::none;
    return;
  }
  fold_pen(line_start);
  if (broken_) return;  // the run ends before this LF
  ++lfs_;
  line_ = Line::prefix;
  pending_.line_start = line_start;
  pending_.lfs = lfs_;
  pending_.prefix.clear();
  pending_.pen = pen_;
}

void PlainScrollScan::sequence_end(std::string_view sequence, std::size_t separators,
                                   bool in_piece) {
  if (sequence.back() == 'm') {
    if (separators >= kMaxSgrParams) return brk();
    if (in_piece) {
      sgr_in_piece(scanned_ + sequence.size());
    } else {
      // Its ESC lies in an earlier piece, and nothing of this piece came before it: carried
      // whole, after what is carried already.
      carry_sgr(sequence);
      unfolded_from_ = scanned_ + 1;
      count_sgr(scanned_ + 1);
    }
    if (broken_) return;
  } else if (separators > 0) {
    return brk();  // EL takes one parameter, and no sub-parameter
  }
  state_ = State::ground;
  // (A line in Line::glyph was settled at the ESC.)
  add_to_prefix(sequence);
}

void PlainScrollScan::designation_end() {
  state_ = State::ground;
  designated_g0_ = true;
  add_to_prefix("\x1b(B");
}

void PlainScrollScan::hyperlink_end(std::string_view sequence) {
  state_ = State::ground;
  // (A line in Line::glyph was settled at the ESC.) In a line's prefix the link goes to the
  // mirror with the jump, which ignores it as the stream's copy would have been.
  add_to_prefix(sequence);
}

void PlainScrollScan::osc_end() {
  if (osc_setting_) setting_end(sequence_, sequence_start_);
  else hyperlink_end(sequence_);
}

void PlainScrollScan::setting_end(std::string_view sequence, Cursor at) {
  if (setting_bytes_.size() + sequence.size() > kMaxSettingBytes) return brk();
  state_ = State::ground;
  // (A line in Line::glyph was settled at the ESC.) A setting in a line's prefix stays out of
  // the prefix: the jump replays every setting before the line it lands in.
  settings_.push_back(HeldSetting{at, settings_dropped_ + setting_bytes_.size(),
                                  static_cast<std::uint32_t>(sequence.size())});
  setting_bytes_ += sequence;
}

void PlainScrollScan::add_to_prefix(std::string_view sequence) {
  if (line_ != Line::prefix) return;
  if (pending_.prefix.size() + sequence.size() > kMaxPrefixBytes) line_ = Line::none;
  else pending_.prefix += sequence;
}

void PlainScrollScan::sgr_in_piece(Cursor after) {
  ++unfolded_sgrs_;
  count_sgr(after);
}

void PlainScrollScan::count_sgr(Cursor after) {
  if (++sgrs_since_fold_ == kMaxSgrsBetweenFolds) fold_pen(after);
}

void PlainScrollScan::carry_sgr(std::string_view sequence) {
  if (resets_pen(sequence)) {
    carried_sgrs_.clear();
    carried_sizes_.clear();
  }
  carried_sgrs_ += sequence;
  carried_sizes_.push_back(static_cast<std::uint8_t>(sequence.size()));
}

std::string_view PlainScrollScan::sgr_at(std::size_t at, std::size_t to) const {
  if (piece_[at + 1] != '[') return {};  // `ESC ( B`, an OSC's `ESC ]` or its ST
  const std::size_t last = csi_parameters(piece_ + at, to - at).final;
  if (piece_[at + last] != 'm') return {};  // EL, or a setting's `ESC [ ?`
  return std::string_view(reinterpret_cast<const char*>(piece_ + at), last + 1);
}

std::size_t PlainScrollScan::unfolded_start(std::size_t to) {
  const std::size_t from = unfolded_from_ > piece_start_ ? unfolded_from_ - piece_start_ : 0;
  // Backwards from `to` to the last reset: nothing before it matters.
  for (std::size_t end = to; end > from;) {
    const void* esc = ::memrchr(piece_ + from, kEsc, end - from);
    if (esc == nullptr) break;
    const auto at = static_cast<std::size_t>(static_cast<const std::uint8_t*>(esc) - piece_);
    if (const std::string_view sgr = sgr_at(at, to); !sgr.empty() && resets_pen(sgr)) {
      carried_sgrs_.clear();
      carried_sizes_.clear();
      return at;
    }
    end = at;
  }
  return from;
}

template <typename Use>
void PlainScrollScan::for_each_sgr(std::size_t from, std::size_t to, Use&& use) {
  for (std::size_t at = from; at < to;) {
    const void* esc = std::memchr(piece_ + at, kEsc, to - at);
    if (esc == nullptr) return;
    at = static_cast<std::size_t>(static_cast<const std::uint8_t*>(esc) - piece_);
    const std::string_view sgr = sgr_at(at, to);
    if (sgr.empty()) {
      ++at;  // no ESC inside any other sequence of a plain run but an OSC's ST
      continue;
    }
    use(sgr);
    if (broken_) return;
    at += sgr.size();
  }
}

void PlainScrollScan::carry_unfolded_sgrs() {
  // An unfinished sequence at the piece's end is carried once it ends (sequence_end()).
  const Cursor end = state_ == State::ground ? scanned_ : sequence_start_;
  if (unfolded_sgrs_ > 0 && end > piece_start_) {
    const std::size_t to = end - piece_start_;
    for_each_sgr(unfolded_start(to), to, [this](std::string_view sgr) { carry_sgr(sgr); });
  }
  unfolded_sgrs_ = 0;
  unfolded_from_ = std::max(unfolded_from_, end);
}

void PlainScrollScan::fold_pen(Cursor at) {
  sgrs_since_fold_ = 0;
  const std::size_t to = at - piece_start_;
  const std::size_t from = unfolded_sgrs_ > 0 ? unfolded_start(to) : to;
  std::size_t carried_at = 0;
  for (const std::uint8_t size : carried_sizes_) {
    apply_sgr(std::string_view(carried_sgrs_).substr(carried_at, size));
    if (broken_) return;
    carried_at += size;
  }
  carried_sgrs_.clear();
  carried_sizes_.clear();
  for_each_sgr(from, to, [this](std::string_view sgr) { apply_sgr(sgr); });
  unfolded_sgrs_ = 0;
  unfolded_from_ = at;
}

void PlainScrollScan::apply_sgr(std::string_view sequence) {
  // ESC [ m and ESC [ 0 m, the resets most programs send (half the SGRs of colored build
  // output), start the pen again without the table's hash and probe.
  if (sequence.size() == 3 || (sequence.size() == 4 && sequence[2] == '0')) {
    std::int16_t& cached = reset_index_[sequence.size() - 3];
    if (cached < 0) {
      const std::optional<SgrIndex> found = sgr_index(sequence);
      if (!found) return brk();
      cached = *found;
    }
    pen_.assign(1, static_cast<SgrIndex>(cached));
    return;
  }
  // The pen's last SGR again changes nothing: whatever it overrides is gone already.
  if (!pen_.empty() && same_sequence(sgrs_[pen_.back()], sequence)) return;
  const std::optional<SgrIndex> found = sgr_index(sequence);
  if (!found) return brk();
  const SgrIndex index = *found;
  if (resets_[index]) {
    pen_.assign(1, index);
    return;
  }
  const SgrEffect& effect = effects_[index];
  std::erase_if(pen_, [&](SgrIndex earlier) {
    return earlier == index || effects_[earlier].overridden_by(effect);
  });
  pen_.push_back(index);
}

std::optional<PlainScrollScan::SgrIndex> PlainScrollScan::sgr_index(std::string_view sequence) {
  constexpr std::size_t kMask = kSgrSlots - 1;
  const std::uint64_t hash = sequence_hash(sequence);
  const auto tag = static_cast<std::uint16_t>(hash >> 48);
  for (std::size_t slot = hash & kMask; sgr_slots_[slot].index_plus_1 != 0;
       slot = (slot + 1) & kMask) {
    if (sgr_slots_[slot].tag != tag) continue;
    const auto index = static_cast<SgrIndex>(sgr_slots_[slot].index_plus_1 - 1);
    if (same_sequence(sgrs_[index], sequence)) return index;
  }
  if (sgrs_.size() == kMaxDistinctSgrs && !compact_sgrs()) return std::nullopt;
  const auto index = static_cast<SgrIndex>(sgrs_.size());
  sgrs_.emplace_back(sequence);
  effects_.push_back(sgr_effect(sequence));
  resets_.push_back(resets_pen(sequence));
  index_sgr(index);
  return index;
}

void PlainScrollScan::index_sgr(SgrIndex index) {
  constexpr std::size_t kMask = kSgrSlots - 1;
  const std::uint64_t hash = sequence_hash(sgrs_[index]);
  std::size_t slot = hash & kMask;
  while (sgr_slots_[slot].index_plus_1 != 0) slot = (slot + 1) & kMask;
  sgr_slots_[slot] = {static_cast<std::uint16_t>(index + 1),
                      static_cast<std::uint16_t>(hash >> 48)};
}

void PlainScrollScan::clear_sgrs() {
  // A run that breaks early (full-screen output does at its first cursor move) holds a few
  // entries: their slots are cleared one by one, not the whole table (8 KiB) at every restart.
  // Each entry is found on its probe sequence, which clearing an earlier slot does not cut:
  // the walk looks for its index, not for a free slot.
  constexpr std::size_t kMask = kSgrSlots - 1;
  if (sgrs_.size() <= kSgrSlots / 64) {
    for (std::size_t index = 0; index < sgrs_.size(); ++index) {
      std::size_t slot = sequence_hash(sgrs_[index]) & kMask;
      while (sgr_slots_[slot].index_plus_1 != index + 1) slot = (slot + 1) & kMask;
      sgr_slots_[slot] = {};
    }
  } else {
    sgr_slots_.fill({});
  }
  sgrs_.clear();
  effects_.clear();
  resets_.clear();
  reset_index_.fill(-1);
}

bool PlainScrollScan::compact_sgrs() {
  std::vector<bool> used(sgrs_.size(), false);
  const auto mark = [&](const std::vector<SgrIndex>& pen) {
    for (const SgrIndex i : pen) used[i] = true;
  };
  mark(pen_);
  mark(pending_.pen);
  for (const Target& t : targets_) mark(t.pen);
  std::vector<SgrIndex> renumbered(sgrs_.size(), 0);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < sgrs_.size(); ++i) {
    if (!used[i]) continue;
    renumbered[i] = static_cast<SgrIndex>(kept);
    if (kept != i) {
      sgrs_[kept] = std::move(sgrs_[i]);
      effects_[kept] = effects_[i];
      resets_[kept] = resets_[i];
    }
    ++kept;
  }
  if (kept == sgrs_.size()) return false;
  sgrs_.resize(kept);
  effects_.resize(kept);
  resets_.resize(kept);
  sgr_slots_.fill({});
  reset_index_.fill(-1);  // found again (or added) at their next use
  for (std::size_t i = 0; i < kept; ++i) index_sgr(static_cast<SgrIndex>(i));
  const auto renumber = [&](std::vector<SgrIndex>& pen) {
    for (SgrIndex& i : pen) i = renumbered[i];
  };
  renumber(pen_);
  renumber(pending_.pen);
  for (Target& t : targets_) renumber(t.pen);
  return true;
}

void PlainScrollScan::add_target() {
  line_ = Line::none;
  if (!targets_.empty() && pending_.line_start - targets_.back().line_start < target_spacing_)
    return;
  pending_.designates_g0 = designated_g0_;
  targets_.push_back(pending_);
}

void PlainScrollScan::brk() {
  if (state_ != State::ground) scanned_ = sequence_start_;
  broken_ = true;
  line_ = Line::none;
  state_ = State::ground;
}

const PlainScrollScan::Target* PlainScrollScan::best(Cursor from, std::uint64_t keep,
                                                     std::uint64_t rows_before) const {
  if (from < run_start_) return nullptr;
  // LFs of the run before `from`, at most: the first target at or after it bounds them.
  std::uint64_t lfs_before_from = 0;
  if (from > run_start_) {
    auto first = std::find_if(targets_.begin(), targets_.end(),
                              [&](const Target& t) { return t.line_start >= from; });
    if (first == targets_.end()) return nullptr;
    lfs_before_from = first->lfs;
  }
  for (auto it = targets_.rbegin(); it != targets_.rend(); ++it) {
    if (it->line_start < from) break;
    if (lfs_ - it->lfs < keep) continue;
    if (it->lfs - lfs_before_from < rows_before) return nullptr;
    return &*it;
  }
  return nullptr;
}

void PlainScrollScan::forget_before(Cursor at) {
  while (!targets_.empty() && targets_.front().line_start < at) targets_.pop_front();
  while (!settings_.empty() && settings_.front().at < at) settings_.pop_front();
  // The bytes of forgotten settings go once they are half of what is kept.
  const std::uint64_t kept_from =
      settings_.empty() ? settings_dropped_ + setting_bytes_.size() : settings_.front().offset;
  const auto forgotten = static_cast<std::size_t>(kept_from - settings_dropped_);
  if (forgotten > 0 && forgotten >= setting_bytes_.size() / 2) {
    setting_bytes_.erase(0, forgotten);
    settings_dropped_ = kept_from;
  }
}

}  // namespace backscroll::term
