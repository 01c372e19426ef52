#include "engine/term/mirror.hpp"
#include "engine/term/plain_text.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>

namespace backscroll::term {
namespace {

constexpr char kEsc = 0x1b;

std::string csi_cursor_position(const CursorState& c) {
  return "\x1b[" + std::to_string(c.row + 1) + ';' + std::to_string(c.col + 1) + 'H';
}

// DECSTR as xterm.js applies it (VtScanner::soft_reset lists the modes), for libvterm 0.1.4,
// which ignores DECSTR: the pen, cursor visibility, IRM, DECAWM, DECCKM, DECKPAM, bracketed
// paste and focus reporting, DECOM and the scroll region (both home libvterm's cursor, so it is
// put back), the charsets, and the saved cursor (home, default pen). The cursor keeps its cell.
std::string soft_reset_equivalent(const MirrorScreen& screen) {
  std::string out = "\x1b[0m\x1b[?25h\x1b[4l\x1b[?7h\x1b[?1l\x1b>\x1b[?2004l\x1b[?1004l";
  // libvterm's initial G0/G1 ('u', its UTF-8 decoder) stands for US-ASCII; an explicit ESC ( B
  // would replace that decoder, so only a designation to something else is undone.
  if (screen.g0() != 'u' && screen.g0() != 'B') out += "\x1b(B";
  if (screen.g1() != 'u' && screen.g1() != 'B') out += "\x1b)B";
  if (screen.shift_out()) out += '\x0f';
  out +=
      "\x1b[?6l\x1b[r\x1b[H\x1b"
      "7";
  out += csi_cursor_position(screen.cursor());
  return out;
}

// What libvterm must be given for the settings `scan` holds in [from, to) to be left as they
// leave it: the last of each DEC mode, and the last title (OSC 0 or 2). Icon names, directories
// and marks set nothing libvterm keeps.
std::string settings_equivalent(const PlainScrollScan& scan, Cursor from, Cursor to) {
  constexpr auto& kModes = PlainScrollScan::kSettingModes;
  std::array<std::string_view, kModes.size()> last_mode{};  // by index in kModes
  std::string_view title;
  scan.for_each_setting(from, to, [&](const PlainScrollScan::Setting& setting) {
    const std::string_view bytes = setting.bytes;
    if (bytes[1] == '[') {  // ESC [ ? digits h/l, a mode of kModes
      int mode = 0;
      for (const char c : bytes.substr(3, bytes.size() - 4)) mode = mode * 10 + (c - '0');
      last_mode[static_cast<std::size_t>(std::find(kModes.begin(), kModes.end(), mode) -
                                         kModes.begin())] = bytes;
    } else if (bytes.starts_with("\x1b]0;") || bytes.starts_with("\x1b]2;")) {
      title = bytes;
    }
  });
  std::string out(title);
  for (const std::string_view mode : last_mode) out += mode;
  return out;
}

}  // namespace

std::string split_mode_sequence(std::string_view seq, bool with_controls) {
  if (seq.size() < 3 || seq[0] != kEsc) return {};
  const char final = seq.back();
  if (final != 'h' && final != 'l') return {};
  // Between ESC and '[' libvterm executes C0 controls and ignores intermediates and bytes from
  // 0x80 (docs/vt-scanner.md): the scanner's mark spans them.
  const std::size_t open = seq.find('[', 1);
  if (open == std::string_view::npos || open + 1 >= seq.size()) return {};
  std::string controls;
  for (char c : seq.substr(1, open - 1)) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20) controls += c;
    else if (b < 0x7f && b > 0x2f) return {};  // DEL is ignored there too
  }
  std::string params;  // the bytes between '[' and the final, controls and DEL removed
  for (char c : seq.substr(open + 1, seq.size() - open - 2)) {
    if (static_cast<unsigned char>(c) < 0x20) controls += c;
    else if (c != '\x7f') params += c;  // DEL is ignored inside a sequence, as the scanner does
  }
  const bool dec = !params.empty() && params[0] == '?';
  if (dec) params.erase(0, 1);
  if (params.find_first_not_of("0123456789;:") != std::string::npos) return {};

  std::string out = with_controls ? std::move(controls) : std::string();
  std::size_t at = 0;
  bool sub = false;  // the parameter was introduced by ':' (a sub-parameter, not a mode)
  while (at <= params.size()) {
    const std::size_t end = std::min(params.find_first_of(";:", at), params.size());
    const std::string_view digits = std::string_view(params).substr(at, end - at);
    if (!sub && !digits.empty() && digits.size() <= 9) {
      const std::string mode = dec && digits == "47" ? std::string("1047") : std::string(digits);
      out += "\x1b[";
      if (dec) out += '?';
      out += mode;
      out += final;
    }
    if (end == params.size()) break;
    sub = params[end] == ':';
    at = end + 1;
  }
  return out;
}

Mirror::Mirror(Cursor start, std::uint16_t cols, std::uint16_t rows, ScrollbackLimits limits,
               LookAheadOptions look_ahead)
    : scanner_(start, cols, rows),
      screen_(cols, rows, limits),
      unfed_base_(start),
      parsed_(start),
      scan_(look_ahead.target_spacing),
      look_ahead_options_(look_ahead),
      history_lines_(limits.max_lines),
      cols_(cols),
      rows_(rows) {}

std::string_view Mirror::unfed(Cursor begin, Cursor end) const {
  assert(begin >= unfed_base_ && end >= begin && end - unfed_base_ <= unfed_.size());
  return std::string_view(unfed_).substr(begin - unfed_base_, end - begin);
}

void Mirror::feed_to(Cursor end) {
  if (end <= parsed_) return;
  screen_.feed(unfed(parsed_, end));
  parsed_ = end;
}

void Mirror::skip_to(Cursor end) { parsed_ = std::max(parsed_, end); }

void Mirror::synthesize(std::string_view bytes) { screen_.feed(bytes); }

void Mirror::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    bytes.remove_prefix(feed_fast(bytes));
    if (bytes.empty()) break;
    // The fast path stopped before a token it does not take, or may not start: the scanner and
    // MirrorScreen read the bytes up to where it is tried again (MirrorScreen::libvterm_share).
    const std::size_t next = screen_.libvterm_share(bytes);
    feed_scanned(bytes.substr(0, next));
    bytes.remove_prefix(next);
  }
  // The landing window closes once the screen and every history line held are exact.
  if (landing_ && screen_exact() && exact_history_lines() >= screen_.scrollback_lines())
    landing_.reset();
}

std::size_t Mirror::feed_fast(std::string_view bytes) {
  // Only where libvterm has parsed everything scanned and the stream is at a clean boundary:
  // then nothing is held (unfed_ is empty) and no mark is pending.
  if (parsed_ != scanner_.position() || !scanner_.at_clean_boundary()) return 0;
  screen_.feed_fast_only(std::as_bytes(std::span(bytes.data(), bytes.size())), fast_run_);
  if (fast_run_.bytes == 0) return 0;
  parsed_ = parsed_ + fast_run_.bytes;
  scanner_.skip_fast(parsed_, fast_run_.settings, fast_run_.text, fast_run_.restored_cursor);
  unfed_base_ = parsed_;
  parsed_clean_ = true;
  return fast_run_.bytes;
}

void Mirror::feed_scanned(std::string_view bytes) {
  scanner_.scan(bytes);
  unfed_.append(bytes);
  apply_marks();
  // Up to the last clean boundary, or past an oversized sequence (libvterm parses it across
  // writes): nothing else is held back. MirrorScreen makes libvterm's result independent of
  // where its writes end, so the mirror's cursor reaches every clean boundary it is fed.
  settle_to(scanner_.feed_limit());
}

// Marks end at or before feed_limit(). A mark whose sequence libvterm already started to parse
// (a forced feed of an oversized sequence, a resize inside it) is left to libvterm as it is.
void Mirror::apply_marks() {
  for (const Mark& mark : scanner_.marks()) {
    const bool whole = mark.begin >= parsed_;
    switch (mark.kind) {
      case MarkKind::mode_fixup: {
        // libvterm applies only the first parameter and ignores ?47: one sequence per mode.
        if (!whole) {
          // A resize fed its start raw (controls inside had to act before it): libvterm reads
          // the whole sequence as it is, then every mode again, one by one (setting a mode
          // twice is setting it once). Its start is kept in cut_sequence_.
          if (mark.begin < cut_sequence_at_ || cut_sequence_at_ + cut_sequence_.size() != parsed_)
            break;
          const std::string whole_sequence = cut_sequence_.substr(mark.begin - cut_sequence_at_) +
                                             std::string(unfed(parsed_, mark.end));
          const std::string split = split_mode_sequence(whole_sequence, /*with_controls=*/false);
          feed_to(mark.end);
          if (!split.empty()) synthesize(split);
          break;
        }
        // Invariant: the bytes skipped are fed in another form (controls inside included).
        const std::string split = split_mode_sequence(unfed(mark.begin, mark.end));
        if (split.empty()) break;  // not one this recognizes: libvterm reads it as it is
        feed_to(mark.begin);
        synthesize(split);
        skip_to(mark.end);
        break;
      }
      case MarkKind::hard_reset:
        // libvterm's RIS keeps the alternate screen; xterm's leaves it (without restoring).
        feed_to(mark.begin);
        if (screen_.alt_screen()) synthesize("\x1b[?1047l");
        break;
      case MarkKind::soft_reset:
        feed_to(mark.end);
        synthesize(soft_reset_equivalent(screen_));
        break;
      case MarkKind::save_cursor_sco:
        // xterm: CSI s saves like DECSC while DECLRMM is off; libvterm reads it as DECSLRM,
        // which homes its cursor: save before it, restore after it.
        if (!whole) break;
        feed_to(mark.begin);
        synthesize(
            "\x1b"
            "7");
        feed_to(mark.end);
        synthesize(
            "\x1b"
            "8");
        break;
      case MarkKind::restore_cursor_sco:
        feed_to(mark.end);
        synthesize(
            "\x1b"
            "8");
        break;
      default:
        // Cursor saves and restores, alternate-screen switches and libvterm's 16-argument
        // limit are handled inside MirrorScreen, which sees the same bytes.
        break;
    }
  }
}

void Mirror::settle_to(Cursor end) {
  feed_to(end);
  parsed_clean_ = parsed_ == scanner_.clean_position();
  unfed_.erase(0, parsed_ - unfed_base_);
  unfed_base_ = parsed_;
}

void Mirror::settle() { settle_to(scanner_.position()); }

MirrorSnapshot Mirror::final_text() {
  settle();
  MirrorSnapshot out;
  out.cursor = parsed_;
  out.snapshot.cols = screen_.cols();
  out.snapshot.rows = screen_.rows();
  out.snapshot.bytes = plain_text(screen_, exact_history_lines());
  return out;
}

void Mirror::resize(std::uint16_t cols, std::uint16_t rows) {
  // What follows the last clean boundary is an unfinished sequence (or character). Without
  // controls that act on the screen inside, it stays held across the resize: it takes effect at its
  // final byte, after the resize in any terminal, and fed whole it keeps the rewriting libvterm
  // needs (a mode sequence cut by a resize used to reach libvterm raw: only its first mode
  // applied). One with controls inside is fed now (xterm runs them at once), and so is one libvterm
  // already started to parse (an oversized sequence).
  const Cursor clean = scanner_.clean_position();
  bool hold = parsed_ <= clean;
  if (hold) {
    // The controls that act on the screen: BS, HT, LF, VT, FF, CR, SO, SI.
    const std::string_view rest = unfed(clean, scanner_.position());
    hold = std::none_of(rest.begin(), rest.end(), [](char c) {
      return static_cast<unsigned char>(c) >= 0x08 && static_cast<unsigned char>(c) <= 0x0f;
    });
  }
  if (!hold) {
    if (parsed_ <= clean) {
      cut_sequence_ = std::string(unfed(clean, scanner_.position()));
      cut_sequence_at_ = clean;
    } else if (cut_sequence_at_ == clean && clean + cut_sequence_.size() == parsed_) {
      // A second resize inside the same sequence: its start grows by what is fed now, so the
      // modes are still completed when it ends.
      cut_sequence_ += unfed(parsed_, scanner_.position());
    }
  }
  settle_to(hold ? clean : scanner_.position());
  resized_at_ = scanner_.position();
  scanner_.resize(cols, rows);
  screen_.resize(cols, rows);
  cols_ = cols;
  rows_ = rows;
  scan_stale_ = true;
}

void Mirror::reset(Cursor at) {
  scanner_ = VtScanner(at, cols_, rows_);
  scanner_.set_events(events_);
  screen_.reset();
  unfed_.clear();
  unfed_base_ = at;
  parsed_ = at;
  parsed_clean_ = true;
  resized_at_ = at;
  cut_sequence_.clear();
  scan_stale_ = true;
  landing_.reset();
}

bool Mirror::restart_at(Cursor at) {
  if (parsed_ != position() || !parsed_clean_ || !scanner_.rebase(at)) return false;
  unfed_.clear();
  unfed_base_ = parsed_ = resized_at_ = cut_sequence_at_ = at;
  cut_sequence_.clear();
  scan_stale_ = true;
  return true;
}

std::uint64_t Mirror::rows_scrolled_off(const JumpRegion& region) const noexcept {
  return region.pushes_history ? screen_.pushed_lines() : screen_.dropped_rows();
}

bool Mirror::screen_exact() const noexcept {
  return !landing_ || rows_scrolled_off(landing_->region) - landing_->scrolled + 1 >=
                          static_cast<std::uint64_t>(landing_->region.height);
}

// A jump in a region that pushes nothing (the alternate screen, a region below the top row)
// leaves the history alone: the bytes it skipped only ever scrolled that region (a plain run
// switches no screen and sets no region).
std::size_t Mirror::exact_history_lines() const noexcept {
  const std::size_t held = screen_.scrollback_lines();
  if (!landing_ || !landing_->region.pushes_history) return held;
  const std::uint64_t pushed = screen_.pushed_lines() - landing_->scrolled;
  const auto above = static_cast<std::uint64_t>(landing_->region.height - 1);  // above the landing
  return pushed <= above ? 0
                         : static_cast<std::size_t>(std::min<std::uint64_t>(pushed - above, held));
}

std::optional<Cursor> Mirror::look_ahead_from() {
  if (scan_stale_ || scan_.scanned() < parsed_) {
    // A run starts only where libvterm stands at a clean boundary (its state is the run's).
    if (!parsed_clean_ || !screen_.clean()) return std::nullopt;
    scan_.restart(parsed_);
    scan_stale_ = false;
  }
  if (scan_.scanned() < position()) scan_.scan(unfed(scan_.scanned(), position()));
  if (scan_.broken()) return std::nullopt;
  return scan_.scanned();
}

void Mirror::set_history_limits(ScrollbackLimits limits) {
  screen_.set_scrollback_limits(limits);
  history_lines_ = limits.max_lines;
}

bool Mirror::history_ready(std::size_t lines) const noexcept {
  return screen_exact() && exact_history_lines() >= std::min(lines, screen_.scrollback_lines());
}

// A jump must be able to start from here, or the coasting mirror would fall behind for good
// (the ring would lap it and the consumer gate pause the PTY). The run keeps the screen, the
// modes and the region, but not where the cursor is: above a region, it walks into it.
bool Mirror::may_coast(std::size_t history_lines) const noexcept {
  return !scan_.broken() && history_ready(history_lines) && jump_region().height > 0;
}

// Invariant: libvterm ends up as it would after parsing [parsed_, target end) itself. The run
// holds only plain bytes (plain_scroll_scan.hpp), so modes, margins, tab stops, charsets, title,
// saved cursor and which screen is active are untouched, and the cursor never leaves the
// scroll region it is in. With a scroll region of `height` rows and the cursor inside it, the
// cursor is on the region's bottom row at the target's line start L (at least `height` LFs
// before it), and rows outside the region are never written. Where what leaves the region's
// top enters the history (the main screen, a region from the top row: the whole screen, or
// all but a footer below it), the `history_lines_ + height + 1` LFs after L scroll everything
// printed before L out of the region and out of the history. Where it is dropped (the
// alternate screen; a region below the top row, under a title bar), `height + 1` LFs do, and
// the history is the one before the run. What is left to rebuild is the pen at L (the run's
// reduced SGRs, applied again), the region's bottom row as the LF before L erased it (with
// that pen), the cursor (column 0 of that row), and the line up to its first glyph, which is
// also libvterm's last glyph (REP, combining marks) at the same cell.
Mirror::JumpRegion Mirror::jump_region() const {
  // A jump starts where libvterm stands at a clean boundary after the latest resize, inside
  // the scanned run.
  if (scan_stale_ || !parsed_clean_ || !screen_.clean() || parsed_ < resized_at_ ||
      parsed_ < scan_.run_start())
    return {};
  const TerminalModes& modes = scanner_.modes();
  const int rows = screen_.rows();
  const bool alternate = screen_.alt_screen();
  if (screen_.cols() < 3 || alternate != modes.alternate_screen || screen_.size_clamped() ||
      modes.origin || modes.left_right_margin_mode || modes.scroll_bottom > rows)
    return {};
  const int top = modes.scroll_top;
  const int bottom = modes.scroll_bottom == 0 ? rows : modes.scroll_bottom;
  // One row: libvterm keeps no history there (a one-row region only erases), so the lines
  // before a jump would never be pushed out of it. One or two columns: a glyph as wide as the
  // row leaves a pending wrap with the cursor in column 0, which CR keeps (the cursor does not
  // move) and an LF on the bottom row keeps (it scrolls), so a line start after CR LF may still
  // have a wrap pending. Outside the region: below it an LF on the last row scrolls nothing;
  // above it the rows the cursor writes on its way down never scroll.
  const int row = screen_.cursor().row;
  if (bottom - top < 2 || row < top || row >= bottom) return {};
  return {bottom - top, !alternate && top == 0};
}

const PlainScrollScan::Target* Mirror::jump_target(std::uint64_t at_least) {
  const JumpRegion region = jump_region();
  if (region.height == 0) return nullptr;
  scan_.forget_before(parsed_);
  const std::uint64_t history = region.pushes_history ? history_lines_ : 0;
  const auto height = static_cast<std::uint64_t>(region.height);
  const PlainScrollScan::Target* target = scan_.best(parsed_, history + height + 1, height);
  if (target == nullptr || target->end <= position() ||
      target->line_start - parsed_ < std::max(at_least, look_ahead_options_.min_skip_bytes))
    return nullptr;
  return target;
}

bool Mirror::skip_ahead(std::uint64_t at_least) {
  const PlainScrollScan::Target* target = jump_target(at_least);
  if (target == nullptr) return false;
  const JumpRegion region = jump_region();
  const Cursor end = target->end;
  // The settings among the bytes jumped over (titles, marks, input and cursor modes): libvterm
  // gets the last value of each first, then G0 as the skipped bytes left it (the only charset
  // a plain run may change) and the pen at L.
  std::string equivalent = settings_equivalent(scan_, parsed_, end);
  if (target->designates_g0) equivalent += "\x1b(B";
  for (const PlainScrollScan::SgrIndex sgr : target->pen) equivalent += scan_.sgr(sgr);
  equivalent += '\r';
  equivalent.append(static_cast<std::size_t>(region.height), '\n');
  equivalent += target->prefix;
  screen_.feed(equivalent);
  landing_ = Landing{region, rows_scrolled_off(region)};
  skipped_bytes_ += end - parsed_;
  ++skips_;
  // The scanner reads each setting where it lies: its events come with their own cursors, and
  // the modes and title it keeps are the stream's. One may have begun before position() (the
  // scanner holds its start): the rest of it completes it.
  scan_.for_each_setting(parsed_, end, [this](const PlainScrollScan::Setting& setting) {
    const Cursor from = std::max(setting.at, scanner_.position());
    const auto read = static_cast<std::size_t>(from - setting.at);
    if (read == 0) scanner_.skip_plain(setting.at);
    if (read < setting.bytes.size()) scanner_.scan(setting.bytes.substr(read));
  });
  scanner_.skip_plain(end, target->designates_g0);
  parsed_ = end;
  unfed_.clear();
  unfed_base_ = end;
  scan_.forget_before(end);
  return true;
}

MirrorSnapshot Mirror::snapshot(const SnapshotOptions& options) const {
  MirrorSnapshot out;
  out.cursor = parsed_;

  std::optional<std::string_view> reason = scanner_.unmodelled_reason();
  // A single shift waits for its character: the snapshot has none, and G2 or G3 may be
  // designated before that character comes (found by the mirror fuzzer, 2026-12-07).
  if (!reason && scanner_.single_shift_waiting()) reason = "charset_shift";
  // libvterm inside a sequence (or text run) longer than the mirror holds back; or a sequence
  // held across a resize: the snapshot would be tagged before the resize it shows.
  if (!parsed_clean_ || !screen_.clean() || parsed_ < resized_at_) reason = "incomplete_sequence";
  // Rows above the line a jump landed in are not the stream's yet (the mirror thread does not
  // ask then).
  if (!screen_exact()) reason = "catching_up";
  if (reason) {
    out.snapshot.cols = screen_.cols();
    out.snapshot.rows = screen_.rows();
    out.snapshot.fallback_reason = std::string(*reason);
    return out;
  }
  SnapshotOptions exact = options;
  exact.scrollback_lines = std::min(options.scrollback_lines, exact_history_lines());
  out.snapshot =
      build_snapshot(screen_, scanner_.modes(), scanner_.title(), screen_.saved_cursor(), exact);
  return out;
}

}  // namespace backscroll::term
