// Fuzz target: Mirror (engine/term/mirror.hpp: VtScanner + MirrorScreen over libvterm 0.1.4) and
// the snapshot_v1 writer, checking the round-trip contract of docs/snapshot.md on every input.
//
// Input: a 15-byte header, then the stream.
//   byte 0       cols: < 192 gives 1 + b % 40, else 41..200
//   byte 1       rows: < 192 gives 1 + b % 12, else 13..60
//   bytes 2-3    the cut, as a fraction (big-endian / 65536) of the stream length
//   byte 4       seeds how the stream is split into feed() calls (1-64 bytes, now and then 1 KiB);
//                bit 7 set: the snapshot is drawn for the alternate canvas (below)
//   byte 5       bits 0-1: how many resizes (0-3); bit 2: snapshot scrollback_lines is
//                (byte 5 >> 3) instead of the default 512
//   bytes 6-14   three resizes: offset (fraction / 256 of the stream), cols, rows (as above)
// Mirror A is fed the stream up to the cut (resizes at their offsets) and takes snapshot(). A
// fallback is counted and the input ends there. Otherwise:
//   - the snapshot passes is_safe_snapshot() and is tagged at or before the cut, after every
//     resize that came before the snapshot;
//   - a fresh Mirror B of A's size fed the snapshot bytes and then the raw bytes from the
//     snapshot's cursor (resizes at the same stream offsets) ends in A's observable state, A
//     having been fed the rest of the stream too: term::first_difference() (mirror_compare.hpp,
//     the check `backscroll verify` runs) finds nothing;
//   - both again after a probe suffix fed to each (text in the current pen and charset, REP,
//     scrolling in the region, origin addressing, DECRC, leaving the alternate screen), which
//     exposes state that shows only in how later bytes are drawn.
// On the alternate canvas (SnapshotCanvas::alternate, attach's): B enters its alternate screen
// (CSI ? 1047 h) before the snapshot, and the contract holds up to the first screen switch
// after the snapshot's cursor or the first resize after the cut, whichever comes first (attach
// starts again from a new snapshot there): B is compared with a mirror fed the stream up to
// there, screen shown against screen shown, without history; then the probe suffix without its
// switch.
// And on every input, before that: a mirror with a short history that looks ahead and jumps over
// scrolled-off text (docs/plain-scroll-skip.md) ends in the state of one that parses every byte
// (history exact again, first_difference() finds nothing, also after the probe suffix) and
// reported the same events (titles, bells, marks, screen switches, each at its cursor); so does
// one whose libvterm parses every byte (no fast path, docs/fast-path.md), split otherwise; and
// the one that parses every byte holds what libvterm's own screen layer holds when fed the same
// writes and resizes (ScreenLayerTap: cells, flags, every history line).
// Memory stays bounded: scrollback lines and bytes within the limits, the scanner's buffers
// within kMaxBufferedBytes, libvterm behind the scanner by at most the mirror's hold bounds.
// A difference prints a description and traps.
// Set BACKSCROLL_FUZZ_STATS=1 to print how many inputs fell back, by reason, at exit.
// Run: mirror_fuzz -dict=fuzz/mirror.dict -max_len=4096 -rss_limit_mb=2048 fuzz/corpus/mirror
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/mirror.hpp"
#include "engine/term/mirror_compare.hpp"
#include "engine/term/reference/event_log.hpp"
#include "engine/term/reference/screen_switch.hpp"
#include "engine/term/reference/vterm_reference.hpp"
#include "engine/term/snapshot_grammar.hpp"

namespace {

using backscroll::Cursor;
using backscroll::term::Cell;
using backscroll::term::CompareOptions;
using backscroll::term::CursorState;
using backscroll::term::LookAheadOptions;
using backscroll::term::Mirror;
using backscroll::term::MirrorScreen;
using backscroll::term::MirrorSnapshot;
using backscroll::term::Pen;
using backscroll::term::ScrollbackLimits;
using backscroll::term::SnapshotOptions;
using backscroll::term::VtScanner;

constexpr std::size_t kHeader = 15;
constexpr std::uint64_t kStart = 1000;  // A's stream starts at this ring cursor
constexpr ScrollbackLimits kLimits{1000, 1u << 20};
// The look-ahead check: a short history, so a jump needs only history + rows + 1 LFs after it.
constexpr ScrollbackLimits kJumpLimits{8, 1u << 20};
// A target at every line, or one per 200 bytes (the scan then folds the pen from SGRs of
// several lines and pieces).
constexpr LookAheadOptions kJumpAnywhere{1, 0};
constexpr LookAheadOptions kJumpSpaced{1, 200};

struct Resize {
  std::size_t at;  // after stream bytes [0, at)
  std::uint16_t cols;
  std::uint16_t rows;
};

std::uint16_t decode_cols(std::uint8_t b) {
  return static_cast<std::uint16_t>(b < 192 ? 1 + b % 40 : 41 + (b - 192) * 160 / 64);
}
std::uint16_t decode_rows(std::uint8_t b) {
  return static_cast<std::uint16_t>(b < 192 ? 1 + b % 12 : 13 + (b - 192) * 48 / 64);
}

struct Stats {
  std::uint64_t inputs = 0;
  std::uint64_t checked = 0;
  std::uint64_t jumped = 0;  // inputs where the look-ahead check jumped
  std::map<std::string, std::uint64_t> fallbacks;
  ~Stats() {
    if (std::getenv("BACKSCROLL_FUZZ_STATS") == nullptr) return;
    std::fprintf(stderr, "mirror_fuzz: %llu inputs, %llu round trips checked, %llu jumped\n",
                 static_cast<unsigned long long>(inputs), static_cast<unsigned long long>(checked),
                 static_cast<unsigned long long>(jumped));
    for (const auto& [reason, n] : fallbacks)
      std::fprintf(stderr, "  fallback %s: %llu\n", reason.c_str(),
                   static_cast<unsigned long long>(n));
  }
};
Stats stats;

std::string escaped(std::string_view s, std::size_t max = 400) {
  std::string o;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b) {
      o += "\\e";
    } else if (c < 0x20 || c >= 0x7f || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  if (s.size() > max) o += "...";
  return o;
}

// A ring-wide context for failure messages.
struct Context {
  std::string_view stream;
  std::uint16_t cols = 0;
  std::uint16_t rows = 0;
  std::size_t cut = 0;
  std::size_t cursor = 0;
  std::vector<Resize> resizes;
  std::string snapshot;
};
Context ctx;
const Mirror* ctx_a = nullptr;
const Mirror* ctx_b = nullptr;

// The screen as text, one line per row ('.' erased, '+' continuation, '?' non-ASCII).
std::string render(const MirrorScreen& m) {
  std::string out;
  const std::size_t n = m.scrollback_lines();
  for (std::size_t i = n > 8 ? n - 8 : 0; i < n; ++i) {
    out += "    h|";
    for (int c = 0; c < m.scrollback_cols(i); ++c) {
      const Cell cell = m.scrollback_cell(i, c);
      if (cell.kind == Cell::Kind::erased) out += cell.pen == Pen{} ? '.' : ',';
      else if (cell.kind == Cell::Kind::continuation) out += '+';
      else
        out +=
            cell.chars[0] >= 0x20 && cell.chars[0] < 0x7f ? static_cast<char>(cell.chars[0]) : '?';
    }
    out += "|\n";
  }
  for (int r = 0; r < m.rows(); ++r) {
    out += "    |";
    for (int c = 0; c < m.cols(); ++c) {
      const Cell cell = m.cell(r, c);
      if (cell.kind == Cell::Kind::erased) out += cell.pen == Pen{} ? '.' : ',';
      else if (cell.kind == Cell::Kind::continuation) out += '+';
      else
        out +=
            cell.chars[0] >= 0x20 && cell.chars[0] < 0x7f ? static_cast<char>(cell.chars[0]) : '?';
    }
    out += "|\n";
  }
  const CursorState c = m.cursor();
  out += "    cursor (" + std::to_string(c.row) + "," + std::to_string(c.col) + ") wrap " +
         std::to_string(c.pending_wrap) + ", history " + std::to_string(m.scrollback_lines()) +
         "\n";
  return out;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "mirror_fuzz: %s\n  start %ux%u, cut %zu, snapshot cursor %zu\n",
               what.c_str(), ctx.cols, ctx.rows, ctx.cut, ctx.cursor);
  for (const Resize& r : ctx.resizes)
    std::fprintf(stderr, "  resize at %zu to %ux%u\n", r.at, r.cols, r.rows);
  std::fprintf(stderr, "  stream: \"%s\"\n", escaped(ctx.stream, 2000).c_str());
  std::fprintf(stderr, "  snapshot: \"%s\"\n", escaped(ctx.snapshot, 4000).c_str());
  if (std::getenv("BACKSCROLL_FUZZ_DUMP") != nullptr && ctx_a != nullptr && ctx_b != nullptr)
    std::fprintf(stderr, "  A (fed everything):\n%s  B (snapshot and the rest):\n%s",
                 render(ctx_a->screen()).c_str(), render(ctx_b->screen()).c_str());
  std::fflush(stderr);
  __builtin_trap();
}

void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

void check_bounds(const Mirror& m) {
  const MirrorScreen& s = m.screen();
  check(s.scrollback_lines() <= kLimits.max_lines, "scrollback lines over the limit");
  check(s.scrollback_bytes() <= kLimits.max_bytes, "scrollback bytes over the limit");
  check(m.scanner().buffered_bytes() <= VtScanner::kMaxBufferedBytes,
        "scanner buffers over the bound");
  check(m.parsed() <= m.position(), "libvterm ahead of the scanner");
  check(m.position() - m.parsed() <= VtScanner::kMaxHoldBytes,
        "libvterm behind the scanner by more than an unfinished sequence");
  check(m.parsed() >= m.scanner().clean_position(), "the mirror holds back a clean boundary");
  check(s.pending_bytes() <= MirrorScreen::kMaxCarry || !s.clean(), "screen carry over the bound");
  const CursorState c = s.cursor();
  check(c.row >= 0 && c.row < s.rows() && c.col >= 0 && c.col < s.cols(), "cursor off the screen");
}

// Feeds stream[from, to) to `m` in pieces chosen by the LCG `seed`, applying the resizes whose
// offset lies in (from, to] when the stream reaches it (and those at `from` if `at_from`).
void feed_range(Mirror& m, std::string_view stream, std::size_t from, std::size_t to,
                const std::vector<Resize>& resizes, bool at_from, std::uint32_t& seed) {
  std::size_t at = from;
  auto apply_resizes = [&](std::size_t pos, bool include) {
    for (const Resize& r : resizes)
      if (r.at == pos && include) m.resize(r.cols, r.rows);
  };
  apply_resizes(from, at_from);
  while (at < to) {
    seed = seed * 1103515245u + 12345u;
    std::size_t want = (seed >> 28) == 0 ? 1 + ((seed >> 16) & 1023) : 1 + ((seed >> 16) & 63);
    std::size_t end = std::min(to, at + want);
    for (const Resize& r : resizes)
      if (r.at > at && r.at < end) end = r.at;
    m.feed(stream.substr(at, end - at));
    check_bounds(m);
    at = end;
    apply_resizes(at, true);
  }
}

std::string probe_suffix(int rows) {
  std::string p = "X\x1b[2bqx";
  for (int i = 0; i <= rows; ++i) p += "\r\nZ";
  p += "\x1b[1;1HY\x1b[2;3HW";
  p += "\x1b"
       "8V";
  p += "\x1b[?1049lU";
  p += "\x1b[1;1HT";
  return p;
}

// Like feed_range over the whole stream, for a mirror that looks ahead and jumps (as the mirror
// thread drives it: never past the next resize).
void feed_jumping(Mirror& m, std::string_view stream, const std::vector<Resize>& resizes,
                  std::uint32_t seed) {
  std::size_t next = 0;  // the next resize to apply
  auto apply_due = [&] {
    while (next < resizes.size() && resizes[next].at <= backscroll::value(m.position()) - kStart) {
      m.resize(resizes[next].cols, resizes[next].rows);
      ++next;
    }
  };
  apply_due();
  for (;;) {
    const std::size_t at = backscroll::value(m.position()) - kStart;
    const std::size_t limit = next < resizes.size() ? resizes[next].at : stream.size();
    // The look ahead in pieces of 1 to 512 bytes, as the mirror thread reads the ring in
    // pieces: sequences cut between them, the pen carried from one to the next.
    while (auto from = m.look_ahead_from()) {
      const std::size_t f = backscroll::value(*from) - kStart;
      if (f >= limit) break;
      seed = seed * 1103515245u + 12345u;
      m.look_ahead(stream.substr(f, std::min<std::size_t>(limit - f, 1 + ((seed >> 16) & 511))));
    }
    if (m.skip_ahead()) {
      check(backscroll::value(m.position()) - kStart <= limit, "a jump past a resize");
      apply_due();
      continue;
    }
    if (at >= stream.size()) break;
    seed = seed * 1103515245u + 12345u;
    const std::size_t end = std::min(limit, at + 1 + ((seed >> 16) & 255));  // limit > at
    m.feed(stream.substr(at, end - at));
    check_bounds(m);
    apply_due();
  }
}

// A mirror that jumps ends where one that parses every byte ends: the screen, the whole history
// (exact again by the end of the bytes the look ahead scanned), the events reported, and after
// the probe.
void check_jumps(std::string_view stream, std::uint16_t cols, std::uint16_t rows,
                 const std::vector<Resize>& resizes, std::uint32_t seed) {
  Mirror parsed(Cursor{kStart}, cols, rows, kJumpLimits);
  backscroll::testing::ScreenLayerTap screen_layer(kJumpLimits.max_lines);
  parsed.set_tap(&screen_layer);
  backscroll::testing::EventLog parsed_events;
  parsed.set_events(&parsed_events);
  std::uint32_t seed_p = seed;
  feed_range(parsed, stream, 0, stream.size(), resizes, true, seed_p);
  Mirror jumped(Cursor{kStart}, cols, rows, kJumpLimits, seed & 1 ? kJumpSpaced : kJumpAnywhere);
  backscroll::testing::EventLog jumped_events;
  jumped.set_events(&jumped_events);
  feed_jumping(jumped, stream, resizes, seed ^ 0x9e3779b9u);
  if (jumped.skips() > 0) ++stats.jumped;
  Mirror libvterm_only(Cursor{kStart}, cols, rows, kJumpLimits);
  libvterm_only.set_fast_path(false);
  std::uint32_t seed_l = seed ^ 0x7f4a7c15u;
  feed_range(libvterm_only, stream, 0, stream.size(), resizes, true, seed_l);
  parsed.feed("\x18");
  jumped.feed("\x18");
  libvterm_only.feed("\x18");
  check(jumped.screen_exact() && jumped.exact_history_lines() == jumped.screen().scrollback_lines(),
        "the history is not exact again at the end of the stream");
  const CompareOptions all{.history_lines = kJumpLimits.max_lines,
                           .titles = parsed.scanner().title_stack_depth() == 0};
  ctx_a = &parsed;
  ctx_b = &jumped;
  if (const std::string d = screen_layer.difference(parsed.screen()); !d.empty())
    fail("the grid and libvterm's screen layer fed the same, after the stream: " + d);
  if (const std::string d = backscroll::term::first_difference(parsed, jumped, all); !d.empty())
    fail("a mirror that jumped, after the stream: " + d);
  if (parsed_events.text != jumped_events.text)
    fail("a mirror that jumped reported other events:\n" + parsed_events.text + "against\n" +
         jumped_events.text);
  if (const std::string d = backscroll::term::first_difference(libvterm_only, parsed, all);
      !d.empty())
    fail("a mirror without the fast path, after the stream: " + d);
  const std::string probe = probe_suffix(parsed.screen().rows());
  parsed.feed(probe);
  jumped.feed(probe);
  libvterm_only.feed(probe);
  if (const std::string d = backscroll::term::first_difference(libvterm_only, parsed, all);
      !d.empty())
    fail("a mirror without the fast path, after the probe: " + d);
  if (const std::string d = screen_layer.difference(parsed.screen()); !d.empty())
    fail("the grid and libvterm's screen layer fed the same, after the probe: " + d);
  if (const std::string d = backscroll::term::first_difference(parsed, jumped, all); !d.empty())
    fail("a mirror that jumped, after the probe: " + d);
  ctx_a = ctx_b = nullptr;
}

// The alternate canvas's contract (the header comment): `snap` was taken of a mirror fed the
// stream up to the cut (tagged `cursor`) with the `before` resizes.
void check_canvas(std::string_view stream, std::uint16_t cols, std::uint16_t rows,
                  const MirrorSnapshot& snap, std::size_t cursor, const std::vector<Resize>& before,
                  const std::vector<Resize>& after, std::uint32_t seed, CompareOptions compare) {
  std::size_t end = cursor + backscroll::testing::bytes_before_screen_switch(stream.substr(cursor));
  if (!after.empty()) end = std::min(end, after.front().at);
  Mirror ref(Cursor{kStart}, cols, rows, kLimits);
  std::uint32_t seed_ref = seed;
  feed_range(ref, stream, 0, end, before, true, seed_ref);
  Mirror b(Cursor{0}, static_cast<std::uint16_t>(snap.snapshot.cols),
           static_cast<std::uint16_t>(snap.snapshot.rows), kLimits);
  ctx_a = &ref;
  ctx_b = &b;
  b.feed("\x1b[?1047h");
  b.feed(snap.snapshot.bytes);
  check_bounds(b);
  std::uint32_t seed_b = seed ^ 0x5bd1e995u;
  feed_range(b, stream, cursor, std::max(cursor, end), {}, false, seed_b);
  b.feed("\x18");
  ref.feed("\x18");
  compare.history_lines = 0;
  compare.screens = false;
  if (const std::string d = backscroll::term::first_difference(ref, b, compare); !d.empty())
    fail("on the alternate canvas, after the stream: " + d);
  std::string probe = probe_suffix(ref.screen().rows());
  probe.resize(backscroll::testing::bytes_before_screen_switch(probe));
  ref.feed(probe);
  b.feed(probe);
  if (const std::string d = backscroll::term::first_difference(ref, b, compare); !d.empty())
    fail("on the alternate canvas, after the probe: " + d);
  ctx_a = ctx_b = nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < kHeader) return 0;
  ++stats.inputs;
  const std::string_view stream(reinterpret_cast<const char*>(data + kHeader), size - kHeader);
  const std::size_t n = stream.size();
  const std::uint16_t cols = decode_cols(data[0]);
  const std::uint16_t rows = decode_rows(data[1]);
  const std::size_t cut =
      static_cast<std::size_t>(((std::uint64_t{data[2]} << 8 | data[3]) * (n + 1)) >> 16);
  std::uint32_t seed = data[4];
  const bool canvas = (data[4] & 0x80) != 0;
  const int nresize = data[5] & 3;
  SnapshotOptions options;
  bool short_history = (data[5] & 4) != 0;
  if (short_history) options.scrollback_lines = data[5] >> 3;
  if (canvas) options.canvas = backscroll::term::SnapshotCanvas::alternate;
  std::vector<Resize> resizes;
  for (int i = 0; i < nresize; ++i) {
    const std::uint8_t* r = data + 6 + 3 * i;
    resizes.push_back(Resize{static_cast<std::size_t>(r[0]) * (n + 1) / 256, decode_cols(r[1]),
                             decode_rows(r[2])});
  }
  std::stable_sort(resizes.begin(), resizes.end(),
                   [](const Resize& p, const Resize& q) { return p.at < q.at; });
  ctx = Context{stream, cols, rows, cut, 0, resizes, {}};
  ctx_a = ctx_b = nullptr;
  check_jumps(stream, cols, rows, resizes, seed);

  // A: the prefix, then the snapshot (resizes at offsets <= cut come before it).
  Mirror a(Cursor{kStart}, cols, rows, kLimits);
  std::vector<Resize> before;
  std::vector<Resize> after;
  for (const Resize& r : resizes) (r.at <= cut ? before : after).push_back(r);
  feed_range(a, stream, 0, cut, before, true, seed);
  const MirrorSnapshot snap = a.snapshot(options);
  check(snap.cursor <= Cursor{kStart + cut}, "snapshot tagged past the cut");
  const std::size_t cursor = backscroll::value(snap.cursor) - kStart;
  // A snapshot does not carry titles pushed with CSI 22 t (docs/snapshot.md): after a pop in
  // the rest of the stream only A has the old one back.
  const CompareOptions compare{.history_lines = kLimits.max_lines,
                               .titles = a.scanner().title_stack_depth() == 0};
  ctx.cursor = cursor;
  ctx.snapshot = snap.snapshot.bytes;
  if (snap.snapshot.fallback_reason) {
    check(snap.snapshot.bytes.empty(), "a fallback with bytes");
    ++stats.fallbacks[*snap.snapshot.fallback_reason];
    // A keeps going: the rest of the stream must not crash it or grow it either.
    feed_range(a, stream, cut, n, after, false, seed);
    return 0;
  }
  ++stats.checked;
  std::string why;
  if (!backscroll::term::is_safe_snapshot(snap.snapshot.bytes, &why))
    fail("unsafe snapshot: " + why);
  for (const Resize& r : before)
    check(r.at <= cursor, "snapshot tagged before a resize it reflects");
  check(snap.snapshot.cols == a.screen().cols() && snap.snapshot.rows == a.screen().rows(),
        "snapshot size");

  // Lines A stored wider than the screen are cut in the snapshot: a later grow that pulls them
  // back shows the difference (a documented limitation), and so does one that pulls back more
  // lines than a short snapshot history drew. Resizes after the cut are skipped then.
  bool wide_history = false;
  for (std::size_t i = 0; i < a.screen().scrollback_lines(); ++i)
    wide_history = wide_history || a.screen().scrollback_cols(i) > a.screen().cols();
  // A snapshot carries up to scrollback_lines lines (none on one row, where libvterm keeps no
  // history): a grow pulls back in A what B never got.
  short_history =
      short_history || snap.snapshot.scrollback_lines <
                           std::min(a.screen().scrollback_lines(), options.scrollback_lines);
  // libvterm's last glyph off the screen is re-created at the right edge: after a grow a
  // combining mark would join it at another place (docs/snapshot.md, "Known limitations").
  const auto glyph = a.screen().last_glyph();
  const bool glyph_moved = glyph && (glyph->row >= a.screen().rows() ||
                                     glyph->col + std::max(glyph->width, 1) > a.screen().cols());
  if (wide_history || short_history || glyph_moved) after.clear();
  if (canvas) {
    check_canvas(stream, cols, rows, snap, cursor, before, after, seed, compare);
    return 0;
  }

  // B: the snapshot, then the raw bytes from its cursor.
  Mirror b(Cursor{0}, static_cast<std::uint16_t>(a.screen().cols()),
           static_cast<std::uint16_t>(a.screen().rows()), kLimits);
  ctx_a = &a;
  ctx_b = &b;
  b.feed(snap.snapshot.bytes);
  check_bounds(b);
  std::uint32_t seed_b = seed ^ 0x5bd1e995u;
  feed_range(b, stream, cursor, cut, {}, false, seed_b);
  feed_range(b, stream, cut, n, after, false, seed_b);
  feed_range(a, stream, cut, n, after, false, seed);
  // Both end where the stream ends; a held sequence there is held in both.
  b.feed("\x18");
  a.feed("\x18");
  if (const std::string d = backscroll::term::first_difference(a, b, compare); !d.empty())
    fail("after the stream: " + d);

  const std::string probe = probe_suffix(a.screen().rows());
  a.feed(probe);
  b.feed(probe);
  if (const std::string d = backscroll::term::first_difference(a, b, compare); !d.empty())
    fail("after the probe: " + d);
  ctx_a = ctx_b = nullptr;
  return 0;
}
