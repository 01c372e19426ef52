// Mirror (VtScanner + MirrorScreen over libvterm 0.1.4) on hostile output (issue 3): each input
// below goes through the mirror as the mirror thread feeds it, and must neither crash nor grow
// memory without bound; every run ends with a snapshot that is a documented fallback or passes
// is_safe_snapshot().
// - 100 MiB unterminated OSC and DCS strings in 64 KiB chunks: the scanner's buffers, what the
//   mirror holds back, the scrollback and the process's resident memory stay bounded;
// - 100,000 combining marks on one cell; huge CSI parameters and REP counts; inverted and
//   degenerate scroll regions; invalid and overlong UTF-8; C1 bytes, raw and UTF-8 encoded;
//   1,000 random resizes between 1 and 500 interleaved with output.
// Then the regressions of what fuzz/mirror_fuzz.cpp found (docs/snapshot.md, "Tests"), each with
// its minimal reproducer: a fresh mirror fed the snapshot and the rest of the stream must look
// like the mirror fed everything.
#include <gtest/gtest.h>

#include <cctype>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/term/mirror.hpp"
#include "engine/term/mirror_compare.hpp"
#include "engine/term/snapshot_grammar.hpp"

namespace backscroll::testing {
namespace {

using term::Cell;
using term::Mirror;
using term::MirrorScreen;
using term::ScrollbackLimits;
using term::VtScanner;

constexpr std::size_t kChunk = 64 * 1024;

// Resident set size of this process, in bytes.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  std::size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// What may be left in memory whatever was fed: the scanner's buffers, the unfinished sequence
// the mirror holds back from libvterm (never a clean boundary), the scrollback.
void expect_bounded(const Mirror& m, const ScrollbackLimits& limits = {}) {
  EXPECT_LE(m.scanner().buffered_bytes(), VtScanner::kMaxBufferedBytes);
  EXPECT_LE(m.position() - m.parsed(), VtScanner::kMaxHoldBytes);
  EXPECT_GE(m.parsed(), m.scanner().clean_position());
  EXPECT_LE(m.screen().scrollback_bytes(), limits.max_bytes);
  EXPECT_LE(m.screen().scrollback_lines(), limits.max_lines);
  const auto c = m.screen().cursor();
  EXPECT_TRUE(c.row >= 0 && c.row < m.screen().rows() && c.col >= 0 && c.col < m.screen().cols());
}

// A fallback the documentation lists, or bytes that pass the grammar check.
void expect_safe_snapshot(const Mirror& m) {
  const term::MirrorSnapshot s = m.snapshot();
  if (s.snapshot.fallback_reason) {
    // docs/snapshot.md, "Fallbacks", and the scanner's reasons (docs/vt-scanner.md).
    static const char* const kReasons[] = {"incomplete_sequence",
                                           "unsafe_size",
                                           "graphics",
                                           "unmodelled_string",
                                           "unmodelled_state",
                                           "unreproducible_cells",
                                           "unreproducible_cursor",
                                           "unreproducible_region",
                                           "too_large",
                                           "dcs",
                                           "dcs_sixel",
                                           "apc_graphics",
                                           "apc",
                                           "pm",
                                           "sos",
                                           "osc_unknown",
                                           "osc_image",
                                           "charset_shift",
                                           "csi_overflow"};
    const std::string& r = *s.snapshot.fallback_reason;
    EXPECT_TRUE(std::find(std::begin(kReasons), std::end(kReasons), r) != std::end(kReasons))
        << r << " is not a documented fallback";
    EXPECT_TRUE(s.snapshot.bytes.empty());
    return;
  }
  std::string why;
  EXPECT_TRUE(term::is_safe_snapshot(s.snapshot.bytes, &why)) << why;
  EXPECT_LE(s.cursor, m.position());
}

// Feeds `bytes` in pieces of at most `chunk`.
void feed_chunked(Mirror& m, const std::string& bytes, std::size_t chunk = kChunk) {
  for (std::size_t at = 0; at < bytes.size(); at += chunk)
    m.feed(std::string_view(bytes).substr(at, chunk));
}

// An unterminated string `intro` + 100 MiB of `filler`, fed in 64 KiB chunks.
void feed_huge_string(const std::string& intro, char filler) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("before\r\n");
  const std::size_t rss_before = resident_bytes();
  m.feed(intro);
  const std::string chunk(kChunk, filler);
  for (int i = 0; i < 1600; ++i) {  // 100 MiB
    m.feed(chunk);
    if (i % 100 == 0) expect_bounded(m);
  }
  expect_bounded(m);
  EXPECT_EQ(m.position() - Cursor{0}, 8 + intro.size() + 1600 * kChunk);
  EXPECT_LT(resident_bytes(), rss_before + (64u << 20)) << "resident memory grew with the string";
  EXPECT_EQ(*m.snapshot().snapshot.fallback_reason, "incomplete_sequence");
  expect_safe_snapshot(m);
  m.feed("\x1b\\after\r\n");  // ST ends it; the mirror goes on
  expect_bounded(m);
  expect_safe_snapshot(m);
  EXPECT_EQ(m.screen().cell(0, 0).chars[0], U'b');
}

TEST(MirrorHostile, HundredMebibyteUnterminatedOscStaysBounded) {
  feed_huge_string("\x1b]2;", 't');
}

TEST(MirrorHostile, HundredMebibyteUnterminatedDcsStaysBounded) {
  feed_huge_string("\x1bPq", '~');   // sixel-looking
  feed_huge_string("\x1bP$q", 'm');  // DECRQSS-looking
}

TEST(MirrorHostile, HundredThousandCombiningMarksOnOneCell) {
  Mirror m(Cursor{0}, 80, 24);
  std::string marks = "e";
  for (int i = 0; i < 100'000; ++i) marks += "\xcc\x81";
  feed_chunked(m, marks + "\r\n");
  feed_chunked(m, marks, 4096);  // in pieces, the last ones after a cut
  m.feed("\r\n");
  expect_bounded(m);
  const Cell cell = m.screen().cell(0, 0);
  EXPECT_EQ(cell.chars[0], U'e');
  EXPECT_EQ(cell.nchars, Cell::kMaxChars);  // a cell keeps 32 characters, however many came
  EXPECT_EQ(m.screen().cell(0, 1).kind, Cell::Kind::erased);
  expect_safe_snapshot(m);
}

TEST(MirrorHostile, HugeCsiParametersAndRepeatCounts) {
  Mirror m(Cursor{0}, 80, 24);
  const std::string cases[] = {
      "x\x1b[4294967295b",
      "x\x1b[99999999999999999999b",
      "x\x1b[2147483647b",
      "\x1b[4294967297;4294967297H",
      "\x1b[99999999999999999999;0H",
      "\x1b[4294967295A",
      "\x1b[4294967295@",
      "\x1b[4294967295P",
      "\x1b[4294967295X",
      "\x1b[4294967295L",
      "\x1b[4294967295M",
      "\x1b[4294967295S",
      "\x1b[4294967295T",
      "\x1b[65536;65536r",
      "\x1b[38;5;4294967295m",
      "\x1b[38;2;4294967295;1;1m",
      "\x1b[4294967295 q",
      "\x1b[?4294967295h",
      "\x1b[4294967295m",
      "\xe4\xb8\xad\x1b[4294967295b",
      "\x1b[" + std::string(1u << 20, '9') + "b",  // a million digits
      "\x1b[" + std::string(200'000, ';') + "m",   // 200,000 parameters
      [] {
        std::string s = "\x1b[";
        for (int i = 0; i < 10'000; ++i) s += "1;";
        return s + "38;5;1m";
      }(),
  };
  for (const std::string& c : cases) {
    m.feed(c + "\r\n");
    expect_bounded(m);
  }
  expect_safe_snapshot(m);
  m.reset(m.position());  // the CSI overflows are sticky until a clear
  m.feed("x\x1b[4294967295b\x1b[9999999999;99999999999H\r\n");
  expect_bounded(m);
  expect_safe_snapshot(m);
  EXPECT_FALSE(m.snapshot().snapshot.fallback_reason);
}

TEST(MirrorHostile, InvertedAndDegenerateScrollRegions) {
  Mirror m(Cursor{0}, 80, 24);
  const char* const cases[] = {"\x1b[10;5r",  "\x1b[5;0r",   "\x1b[0;0r", "\x1b[24;1r",
                               "\x1b[25;30r", "\x1b[99;99r", "\x1b[5;5r", "\x1b[24;24r"};
  const std::string scroll =
      "\r\nline\n\n\n\x1bM\x1bM\x1bM\x1b[3L\x1b[3M\x1b[2S\x1b[2T\x1b[5@\x1b[5P";
  for (const char* c : cases) {
    m.feed(std::string(c) + "\x1b[?6h\x1b[1;1H" + scroll + "\x1b[?6l" + scroll);
    expect_bounded(m);
    expect_safe_snapshot(m);
  }
  // A region a shrink leaves degenerate: libvterm 0.1.4 keeps it and scrolls a negative number
  // of rows (memmove of a negative size); the mirror resets it to the full screen.
  for (int rows : {10, 3, 1, 2, 24}) {
    m.feed("\x1b[20;24r\x1b[?6l");
    m.resize(80, static_cast<std::uint16_t>(rows));
    m.feed("\x1b[99;1H" + scroll + "\x1b[?6h" + scroll + "\x1b[?6l");
    EXPECT_EQ(m.scanner().modes().scroll_top, 0);
    EXPECT_EQ(m.scanner().modes().scroll_bottom, 0);
    expect_bounded(m);
    expect_safe_snapshot(m);
  }
}

TEST(MirrorHostile, InvalidAndOverlongUtf8) {
  Mirror m(Cursor{0}, 40, 10);
  const std::string bad =
      "\xc0\xaf\xc1\xbf\xe0\x80\xaf\xe0\x9f\xbf\xf0\x80\x80\xaf\xf0\x8f\xbf\xbf"  // overlong
      "\xed\xa0\x80\xed\xbf\xbf"                                                  // surrogates
      "\xf4\x90\x80\x80\xf7\xbf\xbf\xbf"                                          // past U+10FFFF
      "\xf8\x88\x80\x80\x80\xfc\x84\x80\x80\x80\x80"                              // 5 and 6 bytes
      "\xfe\xff\x80\xbf"                                                          // never valid
      "\xe4\xb8\r\xe4\x1b[m\xf4\xfc\x09\xad\xc2\xc2\x80X";                        // cut short
  for (int i = 0; i < 50; ++i) feed_chunked(m, bad, 1 + static_cast<std::size_t>(i % 7));
  m.feed("\r\n");
  expect_bounded(m);
  for (int r = 0; r < m.screen().rows(); ++r)
    for (int c = 0; c < m.screen().cols(); ++c) {
      const Cell cell = m.screen().cell(r, c);
      for (int k = 0; k < cell.nchars; ++k) {
        const auto ch = static_cast<std::uint32_t>(cell.chars[static_cast<std::size_t>(k)]);
        EXPECT_TRUE(ch <= 0x10ffff && (ch < 0xd800 || ch > 0xdfff)) << std::hex << ch;
        EXPECT_FALSE(ch >= 0x80 && ch <= 0x9f) << std::hex << ch;
      }
    }
  expect_safe_snapshot(m);
}

TEST(MirrorHostile, C1Bytes) {
  Mirror m(Cursor{0}, 40, 10);
  std::string raw;
  for (int b = 0x80; b <= 0x9f; ++b) raw += static_cast<char>(b);
  std::string encoded;
  for (int b = 0x80; b <= 0x9f; ++b) encoded += std::string("\xc2") + static_cast<char>(b);
  for (int i = 0; i < 20; ++i) {
    m.feed("x" + raw +
           "y\x9b"
           "31mz\x9d"
           "0;t\x9c\x90q\x9c\r\n");
    m.feed("x" + encoded + "\x1b[K\x1b[1J\r\n");
  }
  expect_bounded(m);
  expect_safe_snapshot(m);
  EXPECT_GE(m.screen().cursor().col, 0);
}

TEST(MirrorHostile, AThousandRandomResizesInterleavedWithOutput) {
  ScrollbackLimits limits{2000, 4u << 20};
  Mirror m(Cursor{0}, 80, 24, limits);
  std::mt19937 rng(20240607);
  const std::string outputs[] = {
      "\x1b[?1049h\xe4\xb8\xad text \x1b"
      "7\r\n\x1b"
      "8\x1b[1J\x1b[?1049l more\r\n",
      "\x1b[3;20r\x1b[?6h\x1b[99;1Hin region\r\n\r\n\x1bM\x1b[?6l\x1b[r",
      "\x1b[20;24r\x1b[24;1H\n\n\x1b[r",
      "wrap at the edge of the screen, and more, and more, and more........\x1b[5b",
      "\x1b]2;title\x07\x1b[31;44mcolour\x1b[m\x1b[2K\r\n",
      "\xcc\x81\x1b[C\xcc\x81"
      "e\xcc\x81\xcc\x81\x1b[3b",
      "\x1b[s\x1b[5;5H\x1b[u\x1b"
      "7\x1b[99;99H\x1b"
      "8x",
  };
  for (int i = 0; i < 1000; ++i) {
    const auto cols = static_cast<std::uint16_t>(std::uniform_int_distribution<int>(1, 500)(rng));
    const auto rows = static_cast<std::uint16_t>(std::uniform_int_distribution<int>(1, 500)(rng));
    const std::string& out = outputs[static_cast<std::size_t>(i) % std::size(outputs)];
    // Now and then inside a sequence or character.
    const std::size_t cut = (i % 3 == 0) ? out.size() / 2 : out.size();
    m.feed(out.substr(0, cut));
    m.resize(cols, rows);
    m.feed(out.substr(cut));
    expect_bounded(m, limits);
    if (i % 50 == 0) expect_safe_snapshot(m);
  }
  expect_safe_snapshot(m);
}

// ---- regressions: what fuzz/mirror_fuzz.cpp found ---------------------------------------------

struct Resize {
  std::size_t at;  // after stream bytes [0, at)
  std::uint16_t cols;
  std::uint16_t rows;
};

std::string text(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) o += static_cast<char>(c);
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      o += buf;
    }
  }
  return o;
}

void feed_with_resizes(Mirror& m, const std::string& stream, std::size_t from, std::size_t to,
                       const std::vector<Resize>& resizes) {
  std::size_t at = from;
  for (const Resize& r : resizes) {
    if (r.at < from || r.at > to) continue;
    m.feed(std::string_view(stream).substr(at, r.at - at));
    m.resize(r.cols, r.rows);
    at = r.at;
  }
  m.feed(std::string_view(stream).substr(at, to - at));
}

// The fuzzer's oracle: "" when a fresh mirror fed the snapshot of `stream` cut at `cut` and
// then the raw bytes from its cursor ends like the mirror fed everything (cells, cursor and
// pending wrap, pen, saved cursor, alternate screen), also after a probe suffix.
std::string round_trip(const std::string& stream, std::size_t cut, std::uint16_t cols,
                       std::uint16_t rows, const std::vector<Resize>& resizes = {}) {
  Mirror a(Cursor{0}, cols, rows);
  std::vector<Resize> before;
  for (const Resize& r : resizes)
    if (r.at <= cut) before.push_back(r);
  feed_with_resizes(a, stream, 0, cut, before);
  const term::MirrorSnapshot snap = a.snapshot();
  if (snap.snapshot.fallback_reason) return "fallback: " + *snap.snapshot.fallback_reason;
  if (!term::is_safe_snapshot(snap.snapshot.bytes)) return "unsafe snapshot";
  const std::size_t cursor = value(snap.cursor);
  Mirror b(Cursor{0}, static_cast<std::uint16_t>(a.screen().cols()),
           static_cast<std::uint16_t>(a.screen().rows()));
  b.feed(snap.snapshot.bytes);
  std::vector<Resize> after;
  for (const Resize& r : resizes)
    if (r.at > cut) after.push_back(r);
  feed_with_resizes(b, stream, cursor, stream.size(), after);
  feed_with_resizes(a, stream, cut, stream.size(), after);
  std::string diff;
  const std::string probe =
      "X\x1b[2bqx\r\nZ\r\nZ\x1b[1;1HY\x1b[2;3HW\x1b"
      "8V\x1b[?1049lU\x18";
  for (int round = 0; round < 2 && diff.empty(); ++round) {
    a.feed("\x18");
    b.feed("\x18");
    const MirrorScreen& x = a.screen();
    const MirrorScreen& y = b.screen();
    for (int r = 0; r < x.rows() && diff.empty(); ++r)
      for (int c = 0; c < x.cols() && diff.empty(); ++c)
        if (!(x.cell(r, c) == y.cell(r, c)))
          diff = "cell " + std::to_string(r) + "," + std::to_string(c);
    const auto p = x.cursor();
    const auto q = y.cursor();
    if (diff.empty() && (p.row != q.row || p.col != q.col || p.pending_wrap != q.pending_wrap ||
                         p.visible != q.visible))
      diff = "cursor";
    if (diff.empty() && !(x.pen() == y.pen())) diff = "pen";
    if (diff.empty() && x.alt_screen() != y.alt_screen()) diff = "alternate screen";
    if (diff.empty() && x.saved_cursor() != y.saved_cursor()) diff = "saved cursor";
    if (diff.empty() && !(a.scanner().modes() == b.scanner().modes())) diff = "modes";
    if (!diff.empty()) diff += round == 0 ? " after the stream" : " after the probe";
    a.feed(probe);
    b.feed(probe);
  }
  if (!diff.empty()) diff += " (snapshot \"" + text(snap.snapshot.bytes) + "\")";
  return diff;
}

// A single shift (SS2, SS3) waits for its character, which G2 or G3 will decode whatever they
// hold by then: designated after the snapshot (ESC * 0: DEC graphics, a one-byte set), a stray
// byte is no character at all in the stream and U+FFFD in a terminal fed a snapshot without the
// shift (found by the mirror fuzzer, 2026-12-07, minimized to `ESC N ESC * 0 0x81` on 20x10 cut
// after the SS2; fuzz/corpus/mirror/finding_snapshot_while_a_single_shift_waits). A snapshot
// cannot carry a waiting shift: it falls back, and the one after the character is exact again.
TEST(MirrorFuzzFindings, ASnapshotWhileASingleShiftWaitsFallsBack) {
  for (const std::string shift : {"\x1bN", "\x1bO"}) {
    // G2 and G3 designated after the cut: the stray byte must stay no character.
    const std::string designated = "ab" + shift + "\x1b*0\x1b+0\x81" + "cd\r\nef";
    EXPECT_EQ(round_trip(designated, 4, 20, 10), "fallback: charset_shift") << text(designated);
    EXPECT_EQ(round_trip(designated, 2, 20, 10), "") << text(designated);
    // Nothing designated: the shift is over once its character came.
    const std::string plain = "ab" + shift + "cd\r\nef";
    EXPECT_EQ(round_trip(plain, 4, 20, 10), "fallback: charset_shift") << text(plain);
    for (const std::size_t cut : {std::size_t{2}, std::size_t{5}, plain.size()})
      EXPECT_EQ(round_trip(plain, cut, 20, 10), "") << text(plain) << " cut " << cut;
  }
}

// A wrap pending when DECAWM is reset stays pending in libvterm: the next glyph still wraps.
// REP (CSI b) printed its copies and then recorded the wrap as "autowrap and at the row's end",
// so with autowrap off it dropped the pending wrap libvterm kept: a snapshot taken after the
// REP drew the cursor without it, and the next glyph overwrote the last column in the terminal
// fed the snapshot while it wrapped in the stream (found by the mirror fuzzer, 2026-12-07, on
// a one-row screen; fuzz/corpus/mirror/finding_rep_after_autowrap_off_keeps_the_pending_wrap).
TEST(MirrorFuzzFindings, ARepAfterAutowrapOffKeepsThePendingWrap) {
  // The fuzzer's form: an LF inside a CSI before the REP, on one row (it scrolls, the cursor
  // stays and so does the wrap; on more rows the cursor moves down and the wrap is over).
  for (const std::string rep : {"\x1b[5b", "\x1b[b", "\x1b[\nx\x1b[5b"}) {
    const std::string stream = "\x1b[11Gx\x1b[?7l" + rep + "yz\r\nw";
    const std::size_t cut = stream.find('y');
    for (const std::uint16_t rows : {std::uint16_t{1}, std::uint16_t{3}}) {
      EXPECT_EQ(round_trip(stream, cut, 11, rows), "") << text(stream) << " rows " << rows;
      Mirror m(Cursor{0}, 11, rows);
      m.feed(stream.substr(0, cut));
      const bool moved = rep.find('\n') != std::string::npos && rows > 1;
      EXPECT_EQ(m.screen().cursor().pending_wrap, !moved) << text(stream) << " rows " << rows;
    }
  }
  // Without a wrap pending before it, a REP with autowrap off sets none.
  Mirror m(Cursor{0}, 11, 3);
  m.feed("\x1b[?7l\x1b[11Gx\x1b[5b");
  EXPECT_FALSE(m.screen().cursor().pending_wrap);
}

// A C1 character in UTF-8 (U+0080-U+009F) ends the glyph being printed, as in xterm.js, and
// libvterm never gets it: a mark next lands in a cell of its own (a lone mark). A snapshot
// taken right after the C1 ended inside the text run, printing the last glyph again, so the
// mark joined that glyph in the fresh terminal (found by a 16-minute run of 2026-12-05 on a
// 5x2 screen, the line after it shifted by two columns in the history; fuzz/corpus/mirror/
// finding_snapshot_after_a_c1_before_marks). The run is over for the snapshot too.
TEST(MirrorFuzzFindings, ASnapshotAfterAC1CharacterLeavesTheNextMarkLone) {
  struct Case {
    std::string stream;
    std::size_t cut;
    std::uint16_t cols;
  };
  for (const Case& c : {Case{"abc\xc2\x9b\xcc\x81\xcc\x81x", 5, 10},
                        Case{"L\x81\xcc\xc2\x9b\xcc\x81\xcc\x81\xcc\x81\xff\xff_", 5, 5},
                        Case{"ab\xc2\x9b\xcc\x81\xcc\x81y", 6, 10}}) {
    EXPECT_EQ(round_trip(c.stream, c.cut, c.cols, 2), "") << text(c.stream) << " cut " << c.cut;
    Mirror whole(Cursor{0}, c.cols, 2);
    whole.feed(c.stream);
    EXPECT_EQ(whole.screen().cell(0, 3).chars[0], U'\u0301') << text(c.stream) << ": lone";
  }
}

// join_marks() asked the tokenizer whether libvterm would clamp its CUF, and the tokenizer had
// read ahead past a DECSTBM later in the same feed: with DECOM on and the glyph at the row's
// end outside libvterm's region (rows 0-2, the resizes clamped `1;5`), it answered from the
// new region (rows 0-4, no clamp), libvterm clamped the CUF and printed the glyph again in the
// region, and the next wrap scrolled it. A mirror cut between `^` and its mark then parted
// from one fed whole (found by the mirror fuzzer, 2026-12-05, fuzz/corpus/mirror/
// finding_mark_with_a_decstbm_read_ahead). The clamp's inputs are now libvterm's own.
TEST(MirrorFuzzFindings, AMarkAtTheRowsEndJoinsByTheRegionLibvtermHasNotOneReadAhead) {
  static constexpr char kStream[] =
      "\x00\x00\x1b\x5b\x3f\x36\x68\x59\x1b\x5b\x34\x3b\x30\x1b\x5b\x00\x31\x3b\x35\x72\x1b\x81"
      "\xcc\x81\xcc\x81\x70\x6d\xcc\x81\xcc\x03\x0a\x00\x01\x00\x3f\x31\x30\x34\x39\xcc\x00\x00"
      "\x00\x0b\x5e\xcc\x81\xcc\x81\xcc\x43\x01\x0a\x00\x07\x30\x34\x39\xcc\x81\xcc\x81\xcc\x00"
      "\x00\x00\x0b\x5e\xcc\x81\xde\x5b\x3f\x68\x59\x1b\x5b\x3b\x30\x1b\x5b\x00\x31\x3b\x35\x72"
      "\x1b\x81\xcc\x81\xcc\x81\x70\x6d\xcc\x81\x03\x0a\x03\x7f\xff\x07\x07\xcc\x03\x7f\xff\x07"
      "\x07\xcc\x03\x7f\xff\x07\x61\x1b\x7f\xff\x07\x07\xcc\x03\x7f\xff\xff\x07\xcc\x03\x7f\xff"
      "\x07\xcc\x03\x7f\xff\x07\xcc\x03\x7f\xff\x07\xff\x07\xcc\x03\x7f\xff\x07\x03\x7f\xff\x07";
  const std::string stream(kStream, sizeof kStream - 1);  // it holds NULs
  // The resizes happen at byte 55 (twice) and at byte 154, the end.
  const auto fed = [&](std::vector<std::size_t> cuts) {
    auto m = std::make_unique<Mirror>(Cursor{0}, 28, 8, ScrollbackLimits{8, 1u << 20});
    cuts.push_back(55);
    cuts.push_back(stream.size());
    std::sort(cuts.begin(), cuts.end());
    std::size_t at = 0;
    for (const std::size_t cut : cuts) {
      m->feed(std::string_view(stream).substr(at, cut - at));
      at = cut;
      if (cut == 55) {
        m->resize(24, 3);
        m->resize(12, 36);
      }
    }
    m->resize(191, 60);
    m->feed("\x18");
    return m;
  };
  const auto whole = fed({});
  for (const std::size_t cut : {70u, 71u, 88u}) {
    term::CompareOptions all;
    all.history_lines = 8;
    EXPECT_EQ(term::first_difference(*whole, *fed({cut}), all), "") << "cut at " << cut;
  }
}

// libvterm 0.1.4 clamps only the bottom of a scroll region on resize; LF at the bottom of one
// whose top is now past it scrolled a negative number of rows: heap corruption, abort.
TEST(MirrorFuzzFindings, DegenerateScrollRegionAfterAShrink) {
  Mirror m(Cursor{0}, 80, 24);
  m.feed("\x1b[20;24r");
  m.resize(80, 10);
  m.feed("\x1b[10;1Hx\n\n\x1bM\x1b[L\x1b[M\x1b[S\x1b[T");
  EXPECT_EQ(m.scanner().modes().scroll_top, 0);
  EXPECT_EQ(m.scanner().modes().scroll_bottom, 0);
  EXPECT_EQ(round_trip("\x1b[3r"
                       "tab\r\n",
                       4, 13, 12, {{4, 3, 1}}),
            "");
  EXPECT_EQ(round_trip("\x1b[3rtab\r\nx\r\n", 11, 13, 12, {{4, 2, 1}}), "");
}

// A shrink that pushes text below the new bottom into the history moves libvterm's cursor up
// by as many lines, above row 0 when it was near the top; the next text read outside the
// line-info array (valgrind).
TEST(MirrorFuzzFindings, CursorAboveTheScreenAfterAShrink) {
  MirrorScreen m(20, 10);
  m.feed("\x1b[10;1Hx\x1b[2;17H");
  m.resize(24, 7);
  EXPECT_EQ(m.cursor().row, 0);
  m.feed("HHHH");
  EXPECT_EQ(m.cell(0, 16).chars[0], U'H');
  // The same resize inside a sequence: the sequence still applies, then the cursor is clamped.
  MirrorScreen s(20, 10);
  s.feed("\x1b[10;1Hx\x1b[2;5H\x1b");
  s.resize(20, 3);
  s.feed("[?7l");
  EXPECT_FALSE(s.autowrap());
  EXPECT_EQ(s.cursor().row, 0);
  EXPECT_EQ(s.cell(0, 0).kind, Cell::Kind::erased);
}

// A resize inside a sequence with C0 controls (handed to libvterm before the resize): the
// controls after it, inside the same sequence, scrolled the degenerate region before the
// mirror could reset it (a first fix waited for the sequence's end). Now libvterm's copy is
// cancelled, the fixup runs, and the same parser state is entered again.
TEST(MirrorFuzzFindings, ResizeInsideASequenceWithControls) {
  MirrorScreen m(2, 3);
  m.feed("\x1b[3r\x1b\x0c");
  m.resize(2, 1);
  m.feed("\x0c\x0c\x0c\x0c\x1b\x1b*07\x1b[?DDD");
  EXPECT_EQ(m.cursor().row, 0);
  MirrorScreen s(20, 10);
  s.feed("\x1b[10;1Hx\x1b[2;5H\x1b[\r3");  // a CSI with a CR inside, cut by the resize
  s.resize(20, 3);
  s.feed("1;4mX");
  EXPECT_EQ(s.cell(0, 0).chars[0], U'X');  // the CR acted before the resize
  EXPECT_EQ(s.cell(0, 0).pen.fg, term::Color::indexed(1));
  EXPECT_EQ(s.cell(0, 0).pen.underline, term::Underline::single);
  EXPECT_EQ(
      round_trip("x\x1b[3r\x1b\x0c\x0c\x0c\x0c\x0c\x1b\x1b*07\x1b[?DDD", 1, 2, 3, {{7, 2, 1}}), "");
}

// A mode sequence with a byte from 0x80 between its ESC and '[' (libvterm ignores it there):
// the mirror skipped the whole sequence, the C0 controls inside it too, and libvterm completed
// a cut character with the bytes after it.
TEST(MirrorFuzzFindings, ModeSequenceWithAnIgnoredByteAfterItsEsc) {
  Mirror m(Cursor{0}, 20, 6);
  m.feed("ab\xe4\xb8\x1b\xad[?25;\r\n7lX\r\n");
  EXPECT_EQ(m.screen().cell(1, 0).chars[0], U'X');
  EXPECT_FALSE(m.screen().cursor().visible);
  EXPECT_FALSE(m.screen().autowrap());
  EXPECT_EQ(term::split_mode_sequence("\x1b\xad([?25;\r7l"), "\r\x1b[?25l\x1b[?7l");
  EXPECT_EQ(round_trip("ine\r\nline\xd9\xe4\xb8\x1b\xad[1;\r\nline\r\nx\x1b[5b", 0, 20, 6), "");
}

// An overflowed CSI ended by a byte that is invalid only after the part libvterm did not see
// ("CSI ;x17 # 9"): libvterm, still inside "CSI ;x16", took "9 9 b" as a REP of a zero-width
// glyph and looped forever.
TEST(MirrorFuzzFindings, OverflowedCsiEndedByAnInvalidByte) {
  MirrorScreen m(10, 3);
  m.feed("\x1b[" + std::string(17, ';') + "#99b");
  EXPECT_EQ(m.cell(0, 0).chars[0], U'9');
  EXPECT_EQ(m.cell(0, 1).chars[0], U'b');
  EXPECT_EQ(m.pending_bytes(), 0u);
}

// libvterm 0.1.4 answers an unknown DECRQSS with sprintf("%.s", len, ...): undefined behaviour
// (ASan: SIGSEGV in its printf check). The mirror never lets libvterm answer a DECRQSS.
TEST(MirrorFuzzFindings, UnknownDecrqssNeverReachesLibvterm) {
  MirrorScreen m(20, 3);
  m.feed(
      "\x1bP$q@\x07"
      "a\x1bP$q\x1b\\b\x1bP$$q\"p\x1b\\c\x1bP$qm\x1b\\");
  EXPECT_EQ(m.dropped_reply_bytes(), 0u);
  EXPECT_EQ(m.cell(0, 0).chars[0], U'a');
  EXPECT_EQ(m.cell(0, 2).chars[0], U'c');
}

// libvterm 0.1.4 ends a string at ESC \ with controls, NUL or DEL between the two, and then
// copies it with as many bytes more than its write holds (valgrind: a read past the end of
// the buffer, as long as the run of controls). The mirror holds the ESC until after them.
TEST(MirrorFuzzFindings, ControlsBetweenTheEscAndTheBackslashOfAStringEnd) {
  MirrorScreen m(20, 3);
  m.feed("\x1b]2;t\x1b" + std::string(100'000, '\x0e') + "\\A\x0f");
  m.feed(
      std::string("\x1b]2;ab\x1b\x00\x7f\r\\B\x1bPq\x1b\x00\\C\x1b]0;x\x1b\x18"
                  "D",
                  27));
  EXPECT_EQ(m.cell(0, 0).chars[0], U'B');  // the CR inside the string still acted
  EXPECT_EQ(m.cell(0, 1).chars[0], U'C');
  EXPECT_EQ(m.cell(0, 2).chars[0], U'D');
  EXPECT_EQ(m.pending_bytes(), 0u);
  // A control anywhere in a string whose ESC and backslash reach libvterm in two writes (a
  // string too long to hold, cut after its ESC) makes libvterm read before its buffer: the ESC
  // is held and written with the backslash.
  MirrorScreen l(20, 3);
  l.feed(std::string("\x1b]2\x00\x1b\x13\\E", 8));
  l.feed("\x1b]2;" + std::string(5000, 'a') + "\x0e\x00" + std::string(5000, 'b') + "\x1b");
  l.feed("\\F\x0f");
  EXPECT_EQ(l.cell(0, 0).chars[0], U'E');
  EXPECT_EQ(l.cell(0, 1).chars[0], U'F');
  // libvterm took the byte past its string's end into the title ("cd\\").
  MirrorScreen t(20, 3);
  t.feed("\x1b]2;ab\x1b\\");
  EXPECT_EQ(t.title(), "ab");
  t.feed(std::string("\x1b]2;cd\x1b\x00\\", 9));
  EXPECT_EQ(t.title(), "ab");  // the string reached libvterm in two writes: no title
}

// A lead byte cutting a character short left that character's start inside libvterm when the
// lead itself was dropped (cut by a control): the next continuation byte completed it.
TEST(MirrorFuzzFindings, UnfinishedCharacterCutByALeadByte) {
  MirrorScreen m(16, 3);
  m.feed("\xf4\xfc\x09\xad");
  EXPECT_EQ(m.cell(0, 0).chars[0], U'\xfffd');
  EXPECT_EQ(m.cell(0, 8).chars[0], U'\xfffd');
  MirrorScreen n(16, 3);
  n.feed("\xc2\xc2\x80X");
  EXPECT_EQ(n.cell(0, 0).chars[0], U'\xfffd');
  EXPECT_EQ(n.cell(0, 1).chars[0], U'X');
}

// A resize inside a UTF-8 character handed its start to libvterm, which completed it with the
// bytes after the resize into a value past U+10FFFF.
TEST(MirrorFuzzFindings, ResizeInsideACharacter) {
  MirrorScreen m(10, 2);
  m.feed("\xf4");
  m.resize(12, 2);
  m.feed("\x90\x1b[44m\xa0\x80");
  for (int c = 0; c < m.cols(); ++c)
    EXPECT_LE(static_cast<std::uint32_t>(m.cell(0, c).chars[0]), 0x10ffffu);
  EXPECT_EQ(m.cell(0, 0).chars[0], U'\xfffd');
  EXPECT_EQ(m.pending_bytes(), 0u);
}

// The pending wrap was read from stale damage: a run of text that printed nothing (dropped
// characters) read the damage before it as its last glyph; here the damage of the fresh
// screen's reset in the mirror fed the snapshot, which then had a pending wrap at (0,0).
TEST(MirrorFuzzFindings, PendingWrapFromStaleDamage) {
  EXPECT_EQ(round_trip("\xd0\xc2", 1, 198, 4, {{0, 46, 25}}), "");
  MirrorScreen m(46, 25);
  m.feed("\xd0\xc2\x18");
  EXPECT_FALSE(m.cursor().pending_wrap);
}

// A U+FFFD written for a broken character was not read as the last glyph when nothing followed
// it in the run: libvterm had a pending wrap, the mirror not.
TEST(MirrorFuzzFindings, PendingWrapAfterAReplacementCharacter) {
  MirrorScreen m(10, 1);
  m.feed(std::string(11, '\xfa'));
  EXPECT_TRUE(m.cursor().pending_wrap);
  m.feed("\n");
  EXPECT_TRUE(m.cursor().pending_wrap);  // LF at the bottom keeps it (state.c)
  EXPECT_EQ(round_trip(std::string(87, '\xff') + "\xfa\xfa\xfa\xfa\n" + std::string(14, '\xfa'), 92,
                       10, 4),
            "");
}

// A cursor move clears the pending wrap (CUF at the last column); a run of text after it that
// printed nothing (a character cut short by a control) made the mirror forget the clear.
TEST(MirrorFuzzFindings, WrapClearedBeforeARunThatPrintsNothing) {
  MirrorScreen m(12, 3);
  m.feed("0123456789ab\x1b[C\xcc\x04");
  EXPECT_FALSE(m.cursor().pending_wrap);
  EXPECT_EQ(round_trip("C\xff\x81\xcc[\xccL\x81\xcc[Ca\x1b[C\xcc\x04\xff\x81pm", 17, 12, 22), "");
}

// REP right after the cut repeated the glyph the snapshot printed last, not libvterm's; a
// combining mark joined (or not) a different glyph. The snapshot now prints libvterm's last
// glyph last, where libvterm printed it, or falls back.
TEST(MirrorFuzzFindings, RepAfterTheCutRepeatsLibvtermsLastGlyph) {
  // The pending wrap comes from the REP itself, away from the glyph: declined.
  EXPECT_EQ(round_trip("\xe4\xb8\xad\x1b[;18H\x1b[b\x1b[1H\x1b[H\x1b[9b5", 12, 20, 5),
            "fallback: unreproducible_cursor");
  EXPECT_EQ(round_trip("last\r\n\x1b[2J\x1b[3;3H\x1b[4b", 12, 20, 5), "");
  EXPECT_EQ(round_trip("a\x1b[C\xcc\x81\x1b[5;5H\xcc\x81", 7, 20, 5), "");
}

// A snapshot that ended in text joined a combining mark after the cut to its last glyph; in
// the stream the mark started a new run.
TEST(MirrorFuzzFindings, SnapshotNeverEndsInsideARunOfText) {
  const std::string wrap = "[?10'" + std::string(7, '\xff') +
                           "\x1b"
                           "e";
  EXPECT_EQ(round_trip(wrap + "\xcc\x81\x81\xcc\x81\x0b", 14, 12, 4), "");
}

// "1;rows+1" keeps an explicit bottom at the last row, which stays there when the screen grows;
// the snapshot drew it as the full screen. And a region without a bottom, which follows the last
// row when the screen grows, was drawn with an explicit one.
TEST(MirrorFuzzFindings, ScrollRegionBottomAcrossAGrow) {
  EXPECT_EQ(round_trip("\x1b[1;99999rtext\r\n" + std::string(12, '\n'), 17, 20, 5, {{20, 20, 9}}),
            "");
  EXPECT_EQ(round_trip("\x1b[3rtext\r\n" + std::string(12, '\n') + "end", 10, 20, 5, {{12, 20, 9}}),
            "");
}

// A glyph as wide as the row left a pending wrap at column 0 that CR did not cancel; the
// snapshot's next line then scrolled a blank line into the history.
TEST(MirrorFuzzFindings, NewlineAfterAGlyphAsWideAsTheRow) {
  Mirror a(Cursor{0}, 2, 4);
  a.feed(
      ";0;0#\xe4\xb8\xad"
      "b\x1b"
      "d");
  Mirror b(Cursor{0}, 2, 4);
  b.feed(a.snapshot().snapshot.bytes);
  ASSERT_EQ(a.screen().scrollback_lines(), b.screen().scrollback_lines());
  EXPECT_EQ(round_trip(";0;0#\xe4\xb8\xad"
                       "b\x1b"
                       "dstateb[3;17",
                       11, 2, 4),
            "");
}

// DECSTBM with a parameter past 2^32: libvterm wraps it (2^32 + 1 is 1), the scanner saturated
// it, and the snapshot restored no region where libvterm had a one-line one.
TEST(MirrorFuzzFindings, ScrollRegionParametersPastTwoToThe32) {
  Mirror m(Cursor{0}, 22, 8);
  m.feed("\x1b[4294967297;1r");
  EXPECT_EQ(m.scanner().modes().scroll_top, 0);
  EXPECT_EQ(m.scanner().modes().scroll_bottom, 1);
  EXPECT_EQ(round_trip("\x1b[4294967297;1rtext", 15, 22, 8), "");
  EXPECT_EQ(round_trip("\x1b[2147483647;4r\r\n\r\n\r\n\r\n\r\nx", 18, 22, 8), "");
}

// On one row libvterm erases a line instead of scrolling it into its history: the snapshot's
// history lines vanished while it claimed to carry them (so a grow after the cut, which pulls
// back history, looked like a difference in the lines a snapshot carries). A one-row snapshot
// draws no history.
TEST(MirrorFuzzFindings, NoHistoryOnOneRow) {
  Mirror m(Cursor{0}, 18, 40);
  m.feed("\x1b#8\xff");
  m.resize(24, 1);  // 39 lines pushed into the history by the resize
  m.feed("x\x01");
  EXPECT_EQ(m.screen().scrollback_lines(), 39u);
  const auto s = m.snapshot();
  ASSERT_FALSE(s.snapshot.fallback_reason);
  EXPECT_EQ(s.snapshot.scrollback_lines, 0u);
  EXPECT_EQ(round_trip(std::string("\x1b#8\xff\x00\x02\xff", 7), 5, 18, 40, {{4, 24, 1}}), "");
}

// CSI ? 1048 h in origin mode with the cursor outside the region (after DECRC): libvterm saves
// the position and then clamps the cursor into the region; the mirror read the clamped one.
TEST(MirrorFuzzFindings, SaveOutsideTheRegionInOriginMode) {
  MirrorScreen m(20, 10);
  m.feed(
      "\x1b[2;10r\x1b[?6h\x1b"
      "8\x1b[?1048h");
  ASSERT_TRUE(m.saved_cursor());
  EXPECT_EQ(m.saved_cursor()->row, 0);
  EXPECT_EQ(round_trip("\x1b[2;10r\x1b[?6h\x1b"
                       "8\x1b[?1048h",
                       22, 20, 10),
            "");
}

// A saved cursor a shrink left off the screen cannot be saved by a fresh terminal, and a later
// grow brings it back: the snapshot falls back until the next save.
TEST(MirrorFuzzFindings, SavedCursorOffTheScreenFallsBack) {
  Mirror m(Cursor{0}, 30, 12);
  m.feed(
      "\x1b[10;25H\x1b"
      "7\x1b[H");
  m.resize(12, 4);
  m.feed("x");
  EXPECT_EQ(*m.snapshot().snapshot.fallback_reason, "unreproducible_cursor");
  m.feed(
      "\x1b[2;2H\x1b"
      "7");
  EXPECT_FALSE(m.snapshot().snapshot.fallback_reason);
}

// A mode sequence cut by a resize reached libvterm raw (the resize fed the unfinished part),
// and libvterm 0.1.4 applies only an SM's first parameter: "CSI ; 4 h" left insert mode off in
// libvterm while the mirror's modes, and so the snapshot, had it on. The unfinished sequence
// now stays held across the resize and is fed whole, split per mode.
TEST(MirrorFuzzFindings, ModeSequenceCutByAResize) {
  EXPECT_EQ(round_trip("\x1b[;4h", 5, 20, 60, {{0, 32, 12}, {1, 2, 12}, {1, 32, 12}}), "");
  // With a control inside, the start is fed before the resize (the control acts at once); the
  // modes after the first are applied one by one when the sequence ends.
  EXPECT_EQ(round_trip("\x1b[\x05"
                       "1;4hab",
                       8, 20, 5, {{3, 30, 5}}),
            "");
  EXPECT_EQ(round_trip("\x1b[\r?25;47hab", 11, 20, 5, {{3, 30, 5}}), "");
  // DEL inside a mode sequence is ignored: the sequence is still split per mode. Also between
  // the ESC and the '[' (found by the CI fuzz run once the look ahead changed its path).
  EXPECT_EQ(round_trip("\x1b[\x7f;4h", 6, 10, 4), "");
  EXPECT_EQ(round_trip("8ok\x1b\x7f[;4h", 9, 10, 4), "");
  Mirror m(Cursor{0}, 20, 5);
  m.feed("\x1b[");
  m.resize(30, 5);
  m.feed(";4hab\x1b[1Gc");
  m.feed("\x18");
  EXPECT_EQ(m.screen().cell(0, 0).chars[0], U'c');
  EXPECT_EQ(m.screen().cell(0, 1).chars[0], U'a') << "insert mode shifted the line";
  // Two resizes inside one sequence with a control in it: the start fed at the first grows at
  // the second, and the modes are still split when it ends (the fuzzer's
  // mirror-snapshot-origin-mode-... input, 2026-12-06: DECOM was lost).
  Mirror twice(Cursor{0}, 20, 5);
  twice.feed("\x1b[\r");
  twice.resize(30, 5);
  twice.feed("1");
  twice.resize(25, 5);
  twice.feed(";4hab\x1b[1Gc");
  twice.feed("\x18");
  EXPECT_EQ(twice.screen().cell(0, 1).chars[0], U'a') << "insert mode shifted the line";
}

// A trailing 38/48 made libvterm read the arguments past the sequence's last, which hold what
// an earlier sequence left there: a mirror fed everything and one fed the snapshot (whose last
// SGR differs) applied different backgrounds (found by a 5-minute mirror_fuzz run; the input is
// fuzz/corpus/mirror/finding_sgr_stale_args_after_resize). Short and unknown colour forms set a
// colour libvterm never initialised. Every such SGR now changes what xterm.js changes.
TEST(MirrorFuzzFindings, SgrColourReadsNoStaleArguments) {
  const std::string stream = "\x1b[48;5;100;53mA\x1b[0;9;12;38;2;10;20;30;48mB\x1b[38;2;1;2mC";
  const std::size_t after_a = stream.find('A') + 1;
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    // Clean cuts: a sequence held across a resize falls back by design.
    if (cut > 0 && cut < stream.size() && stream[cut - 1] != 'm' && !std::isupper(stream[cut - 1]))
      continue;
    EXPECT_EQ(round_trip(stream, cut, 20, 6, {{after_a, 11, 12}, {cut, 17, 12}}), "") << cut;
  }
  Mirror m(Cursor{0}, 20, 6);
  m.feed("\x1b[48;5;100m\x1b[0;48mX\x1b[38;2;1;2mY\x1b[38:2::7:8:9;48:5:4mZ\x1b[38;7mW");
  using term::Color;
  EXPECT_EQ(m.screen().cell(0, 0).pen.bg, Color{}) << "48 alone changes nothing (xterm.js)";
  EXPECT_EQ(m.screen().cell(0, 1).pen.fg, Color::rgb(1, 2, 0));
  EXPECT_EQ(m.screen().cell(0, 2).pen.fg, Color::rgb(7, 8, 9));
  EXPECT_EQ(m.screen().cell(0, 2).pen.bg, Color::indexed(4));
  EXPECT_EQ(m.screen().cell(0, 3).pen.fg, Color::rgb(7, 8, 9)) << "an unknown mode changes nothing";
}

// "" when every two-piece split of `stream` leaves a MirrorScreen of cols x rows as one write of
// it does, else the first split and cell that differ.
std::string split_difference(const std::string& stream, int cols, int rows) {
  MirrorScreen whole(cols, rows);
  whole.feed(stream);
  for (std::size_t cut = 1; cut < stream.size(); ++cut) {
    MirrorScreen split(cols, rows);
    split.feed(std::string_view(stream).substr(0, cut));
    split.feed(std::string_view(stream).substr(cut));
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        if (!(split.cell(r, c) == whole.cell(r, c)))
          return "cut " + std::to_string(cut) + " cell " + std::to_string(r) + "," +
                 std::to_string(c);
  }
  return "";
}

// A combining mark after a sequence (here ESC * C) that follows a glyph at the row's end was
// joined to it when it started a write, and not when the same bytes came in one write (found by
// the first tools/fuzz.sh run of the mirror; fuzz/corpus/mirror/
// finding_mark_after_sequence_at_row_end). Marks join only the text they directly follow.
TEST(MirrorFuzzFindings, MarkAfterASequenceAtTheRowEndDoesNotDependOnSplits) {
  const std::string stream = "\x1b[1;5Ha\x1b*C\xcc\x81x";
  EXPECT_EQ(split_difference(stream, 5, 2), "");
  MirrorScreen whole(5, 2);
  whole.feed(stream);
  EXPECT_EQ(whole.cell(0, 4).nchars, 1) << "the mark does not join across the sequence";
}

// After a malformed CSI (`CSI 1 ?`: libvterm ends it at the `?` and prints what follows), the
// mirror's tracker of libvterm's parser still thought it inside the sequence, so the text after
// it did not count as text and a combining mark that started the next write did not join the
// glyph at the row's end (found by the third tools/fuzz.sh run: ZWJ, resizes to 8x1 and 5x41;
// fuzz/corpus/mirror/finding_zwj_after_malformed_csi). Invalid bytes after the arguments or
// intermediates end the sequence there too.
TEST(MirrorFuzzFindings, TextAfterAMalformedCsiIsText) {
  // Five glyphs after the sequence: the last one is at the row's end (pending wrap).
  for (const std::string& stream :
       {std::string("\x1b[1?23456\xe2\x80\x8dx"), std::string("\x1b[1$923456\xcc\x81x"),
        std::string("\x1b[?25\x7fh23456\xcc\x81x")}) {
    EXPECT_EQ(split_difference(stream, 5, 3), "");
  }
}

// Marks after a NUL that follows a glyph: libvterm ignores the NUL and joins them (without
// bound), the mirror counted them as following nothing and kept more of them after a snapshot
// round trip (found by a tools/fuzz.sh run of the glyph-length change; fuzz/corpus/mirror/
// finding_marks_after_nul). As in xterm.js, where NUL is a control that ends the glyph, each
// such mark now takes a column of its own.
TEST(MirrorFuzzFindings, MarksAfterANulFollowNoGlyph) {
  std::string stream = "e\xcc\x81N";
  stream += '\0';
  for (int i = 0; i < 20; ++i) stream += "\xcc\x81";
  stream += "x";
  EXPECT_EQ(split_difference(stream, 12, 4), "");
  MirrorScreen whole(12, 4);
  whole.feed(stream);
  EXPECT_EQ(whole.cell(0, 1).nchars, 1) << "N is not joined";
  EXPECT_EQ(whole.cell(0, 2).chars[0], U'\u0301');
  EXPECT_EQ(whole.cell(0, 2).nchars, 1);
}

// Marks after a resize that came between a glyph and them (here inside the first mark's UTF-8
// bytes): libvterm joined nothing once the shrink moved its cursor and printed a lone glyph
// the next character overwrote, while a mirror fed a snapshot taken after the resize made
// columns of them (found by the final tools/fuzz.sh run; fuzz/corpus/mirror/
// finding_marks_after_a_resize). A resize ends the glyph: the marks follow no glyph.
TEST(MirrorFuzzFindings, AResizeEndsTheGlyph) {
  MirrorScreen m(12, 22);
  m.feed("\x1b[22;1Hab\xcc\x81\xcc");
  m.resize(56, 17);
  m.feed(
      "\x81\xcc\x81\x1b[1m\xcc\x81"
      "c");
  const term::CursorState cur = m.cursor();
  const int row = cur.row;
  EXPECT_EQ(m.cell(row, 1).nchars, 2) << "b keeps the mark before the resize";
  EXPECT_EQ(m.cell(row, 2).chars[0], U'\u0301');
  EXPECT_EQ(m.cell(row, 3).chars[0], U'\u0301');
  EXPECT_TRUE(m.cell(row, 4).pen.bold);
  EXPECT_EQ(m.cell(row, 5).chars[0], U'c');
  // A snapshot right after a resize does not end inside the text run (the next run found a
  // U+FFFD, a resize, then a mark joined after the snapshot only; corpus
  // finding_resize_between_glyph_and_mark).
  MirrorScreen n(12, 6);
  n.feed("\xad");
  ASSERT_TRUE(n.text_last());
  n.resize(30, 10);
  EXPECT_FALSE(n.text_last());
}

// After ESC ( B (GL a table: `tput sgr0` prints it), libvterm decodes a piece of text that
// starts with ASCII by the table and joins no mark to an ASCII glyph at the row's end, even
// printed again with the marks; the mirror's cell takes them itself, as xterm.js joins them
// (found by Mirror.ContractHoldsAtRandomCutsOfRepeatedStreams once snapshots refused
// libvterm's lone marks).
TEST(MirrorFuzzFindings, MarksJoinAnAsciiGlyphAtTheRowEndAfterADesignation) {
  const std::string stream = "\x1b(B\x1b[1;5HS\xcc\x8a\xcc\x83x";
  EXPECT_EQ(split_difference(stream, 5, 3), "");
  MirrorScreen whole(5, 3);
  whole.feed(stream);
  EXPECT_EQ(whole.cell(0, 4).nchars, 3);
  EXPECT_EQ(whole.cell(1, 0).chars[0], U'x');
}

// The join skipped a row with DECSLRM margins set, and so depended on splits there (found by
// the second tools/fuzz.sh run; fuzz/corpus/mirror/finding_mark_at_row_end_with_margins);
// a wide glyph filling a two-column row from column 0 had no column for the BS.
TEST(MirrorFuzzFindings, MarksJoinAtTheRowEndWithMarginsAndInColumnZero) {
  for (const auto& [stream, cols] : std::vector<std::pair<std::string, int>>{
           {"\x1b[?69h\x1b[5;10s\x1b[1;21H\xe4\xb8\xad\xcc\x81\xcc\x81x", 22},
           {"\x1b[?69h\x1b[21;22s\x1b[1;21H\xe4\xb8\xad\xcc\x81\xcc\x81x", 22},
           {"\xe4\xb8\xad\xcc\x81\xcc\x81x", 2}}) {
    EXPECT_EQ(split_difference(stream, cols, 3), "") << cols << " cols";
    MirrorScreen whole(cols, 3);
    whole.feed(stream);
    EXPECT_EQ(whole.cell(0, cols - 2).nchars, 3) << cols << " cols";
  }
}

// With DECOM on and the cursor outside the scroll region (a DECRC, or a resize that popped a
// history line, put it there), a mark that started a write was joined by printing the glyph
// again after a BS and a CUF: libvterm ends every CSI by clamping the cursor into the region in
// origin mode, so the glyph and its mark landed there (and so did the cursor), while the same
// bytes in one write joined in place (found by the fork-mode tools/fuzz.sh run of 2026-12-03,
// three inputs, one of them a snapshot round trip; fuzz/corpus/mirror/
// finding_mark_outside_the_region_in_origin_mode*). The grid's cell takes the marks itself.
TEST(MirrorFuzzFindings, MarksJoinInPlaceWhenOriginModeLeftTheCursorOutsideTheRegion) {
  // Saved at row 10 with DECOM off, restored after DECOM homed the cursor into rows 2-3.
  const std::string stream =
      "\x1b[10;1H\x1b"
      "7\x1b[2;3r\x1b[?6h\x1b"
      "8abcde\xcc\x81\xcc\x81x";
  EXPECT_EQ(split_difference(stream, 5, 12), "");
  MirrorScreen whole(5, 12);
  whole.feed(stream);
  EXPECT_EQ(whole.cell(9, 4).nchars, 3) << "e and both marks, in place";
  EXPECT_EQ(whole.cell(1, 4).kind, Cell::Kind::erased) << "nothing printed in the region";
}

// The same with DECLRMM on and the cursor right of the margins (text goes on past the right
// margin to the row's end): libvterm clamps the cursor's column into the margins too at the
// end of every CSI in origin mode, so the glyph and its mark landed in the margin's last column
// (found by the fourth to the eighth sessions' fork-mode runs, after broken UTF-8 with
// `CSI 2 ; 10 s`, `CSI ? 69 h` and `CSI ? 6 h`; fuzz/corpus/mirror/
// finding_marks_at_a_left_right_margin_after_broken_utf8*,
// finding_mark_joined_on_one_side_after_broken_utf8_8). The grid's cell takes the marks there
// too.
TEST(MirrorFuzzFindings, MarksJoinInPlaceWhenOriginModeLeftTheCursorRightOfTheMargins) {
  for (const std::string& stream :
       {std::string("\x1b[2;5s\x1b[?69h\x1b[?6habcdefg\xcc\x81\xcc\x81x"),
        std::string("\x1b[2;5s\x1b[?69h\x1b[?6h\x81\x81\x81\x81\x81\x81\x81\xcc\x81x")}) {
    EXPECT_EQ(split_difference(stream, 8, 3), "") << text(stream);
    MirrorScreen whole(8, 3);
    whole.feed(stream);
    EXPECT_GE(whole.cell(0, 7).nchars, 2) << text(stream) << ": the marks join in place";
    EXPECT_EQ(whole.cell(0, 4).nchars, 1) << text(stream) << ": nothing printed in the margins";
  }
}

// A wide glyph on a double-width line of a two-column mirror (a PTY of one column) is wider
// than its row: libvterm reaches it only by wrapping, so join_marks() printing it again with a
// mark that started a write wrapped once more and scrolled, while the same bytes in one write
// joined in place (found by the 30-minute tools/fuzz.sh run of 2026-12-02; fuzz/corpus/mirror/
// finding_mark_on_a_glyph_wider_than_its_row). The grid's cell takes the marks itself, and a
// REP of such a glyph is dropped (libvterm would repeat it without them).
TEST(MirrorFuzzFindings, MarksJoinAGlyphWiderThanItsRowInPlace) {
  for (const std::string& tail : {std::string("\xe4\xb8\xad\xcc\x81"
                                              "abc\x1b#4\xe4\xb8\xad\xcc\x81x"),
                                  std::string("abc\x1b#4\xe4\xb8\xad\xcc\x81\x1b[3b\xcc\x82y")}) {
    for (const int cols : {2, 3}) {
      const auto fed = [&](std::size_t cut) {
        auto m = std::make_unique<MirrorScreen>(20, 8);
        m->feed("x");
        m->resize(cols, 4);
        m->feed(std::string_view(tail).substr(0, cut));
        m->feed(std::string_view(tail).substr(cut));
        return m;
      };
      const auto whole = fed(tail.size());
      for (std::size_t cut = 1; cut < tail.size(); ++cut) {
        const auto split = fed(cut);
        ASSERT_EQ(split->scrollback_lines(), whole->scrollback_lines()) << "cut " << cut;
        for (int r = 0; r < 4; ++r) {
          for (int c = 0; c < cols; ++c) {
            EXPECT_EQ(split->cell(r, c), whole->cell(r, c))
                << cols << " cols, cut " << cut << ", cell " << r << "," << c;
          }
        }
      }
    }
  }
}

// Where join_marks() joins marks in the grid's cell only (above: origin mode with the cursor
// outside the region or right of the margins, a glyph wider than its row), libvterm's last glyph
// keeps the glyph alone, and REP repeated it so; fed in one write, libvterm joined the marks and
// repeated them too (found by the 30-minute tools/fuzz.sh run of 2026-12-03: ESC # 4 and REP on
// a one-column row after a grow; fuzz/corpus/mirror/
// finding_marks_on_a_double_height_line_one_column_wide). The copies get the marks.
TEST(MirrorFuzzFindings, RepRepeatsTheMarksJoinedInPlace) {
  for (const auto& [stream, row, col] : std::vector<std::tuple<std::string, int, int>>{
           {"\x1b[10;1H\x1b"
            "7\x1b[2;3r\x1b[?6h\x1b"
            "8abcdefgh\xcc\x81\xcc\x81\x1b[b",
            9, 7},
           {"\x1b[2;5s\x1b[?69h\x1b[?6habcdefg\xcc\x81\xcc\x81\x1b[3b", 0, 7}}) {
    EXPECT_EQ(split_difference(stream, 8, 12), "") << text(stream);
    MirrorScreen whole(8, 12);
    whole.feed(stream);
    EXPECT_EQ(whole.cell(row, col).nchars, 3) << text(stream) << ": the copy has both marks";
  }
}

// A narrow glyph printed over a wide one on a double-width line of one column (a two-column
// mirror) leaves the wide one's continuation past the row's end, so the cell read as wide and
// join_marks() took it for a changed cell: a mark that started a write landed alone in it,
// while the same bytes in one write joined the glyph (found by the 45-minute run of 2026-12-03
// and the sixth session's third run; fuzz/corpus/mirror/
// finding_marks_on_a_double_height_line_one_column_wide_2,
// finding_marks_after_broken_utf8_with_double_height_lines). Here with autowrap off, which
// keeps the cursor on the glyph.
TEST(MirrorFuzzFindings, MarksJoinANarrowGlyphOverAWideOneOnARowOfOneColumn) {
  const std::string stream = "\x1b#6\x1b[?7l\xe4\xb8\xad;\x81\xcc\x81\xcc\x81";
  EXPECT_EQ(split_difference(stream, 2, 1), "");
  MirrorScreen whole(2, 1);
  whole.feed(stream);
  EXPECT_EQ(whole.cell(0, 0).nchars, 3) << "U+FFFD and both marks";
}

// Marks at the row's end after an ASCII glyph decoded by a table (ESC ( 0): whether GL held a
// table was read from the input's state when the marks were written, and the input may by then
// have read a later shift or designation (here ESC n, LS2, to a UTF-8 G2) in the same buffer:
// one write joined nothing where byte-by-byte feeding joined (found by the second 30-minute
// tools/fuzz.sh run of 2026-12-02; fuzz/corpus/mirror/finding_designation_read_ahead_of_a_mark).
TEST(MirrorFuzzFindings, MarksJoinByTheDesignationWhereTheyWereRead) {
  for (const std::string& stream :
       {std::string("\x1b(0kneS\xcc\xb8\xad\x1b(0qk\x1bn(0\x1bn"),
        std::string("\x1b(0kneS\xcc\xb8\x1b(Bqk"), std::string("kneS\xcc\xb8\x1b(0qk"),
        std::string("\x1b)0\x0ekneS\xcc\xb8\x0fqk"), std::string("\x1b(0kneS\xcc\xb8\x0fqk\x0e")}) {
    EXPECT_EQ(split_difference(stream, 4, 22), "") << text(stream);
    MirrorScreen whole(4, 22);
    whole.feed(stream);
    EXPECT_EQ(whole.cell(0, 3).nchars, 2) << text(stream) << ": the mark joins S";
  }
}

// DEL between a glyph and its mark: ignored by libvterm and xterm.js alike, so the mark joins
// the glyph; but a write that ended with DEL counted as one that did not end with text, and a
// snapshot cut after the DEL ended with a cursor move that kept the mark from joining (found by
// the third 30-minute tools/fuzz.sh run of 2026-12-02;
// fuzz/corpus/mirror/finding_del_before_a_mark).
TEST(MirrorFuzzFindings, DelBetweenAGlyphAndItsMarkKeepsTheTextRun) {
  const std::string stream = "\x88\x7f\xcc\x81";
  EXPECT_EQ(split_difference(stream, 9, 9), "");
  EXPECT_EQ(round_trip(stream, 2, 9, 9), "");
  MirrorScreen whole(9, 9);
  whole.feed(stream);
  EXPECT_EQ(whole.cell(0, 0).nchars, 2) << "U+FFFD takes the mark";
  // A sequence before the DEL still ends the text: the mark follows no glyph.
  MirrorScreen after_sgr(9, 9);
  after_sgr.feed("a\x1b[1m\x7f\xcc\x81");
  EXPECT_EQ(after_sgr.cell(0, 0).nchars, 1);
  EXPECT_EQ(split_difference("a\x1b[1m\x7f\xcc\x81", 9, 9), "");
}

// Two text runs with only DEL between them, the second starting with a mark, and a byte that
// ends the second run before anything writes the first (here NUL): the two went to libvterm in
// one write whose last glyph was never read, so join_marks() saw the glyph and pending wrap of
// an older write and left the mark at the row's end to libvterm, which drops it there. Cut
// anywhere between the DEL and the NUL, the mark joined (found by the eleventh session's
// 25-minute run, a 5-column screen; fuzz/corpus/mirror/
// finding_mark_after_del_at_row_end_before_nul). And a feed that starts with the DEL: its DELs
// and marks went to libvterm in one write, which joins nothing at the row's end, while a feed
// of the whole stream joined them (the invalid-UTF-8 family of fuzz findings, twenty-second to
// twenty-sixth sessions: a U+FFFD glyph, DEL, a mark; fuzz/corpus/mirror/
// finding_*_replacement_glyph_*).
TEST(MirrorFuzzFindings, AMarkAfterDelJoinsAtTheRowEndHoweverTheRunsAreWritten) {
  struct Case {
    std::string stream;
    int col;  // of the glyph at the end of row 0 that takes the mark
  };
  for (const Case& c : {Case{"abcde\xcc\x80\x7f\xcc\x81xy\x00", 4},
                        Case{"abc\xe4\xb8\xad\x7f\x7f\xcc\x81x\x00z", 3},
                        Case{"\x1b[1;4Hd\x81\x7f\xcc\x81\xcc\x80x\x07", 4},
                        Case{std::string("abcd\xff\x7f\xcc\x81\x00.\x01", 11), 4},
                        Case{"abcd\xff\x7f\x7f\xcc\x81\xcc\x80.", 4}}) {
    EXPECT_EQ(split_difference(c.stream, 5, 3), "") << text(c.stream);
    MirrorScreen whole(5, 3);
    whole.feed(c.stream);
    EXPECT_GE(whole.cell(0, c.col).nchars, 2) << text(c.stream) << ": the mark joins";
  }
}

// A single shift (SS2, ESC N; SS3, ESC O) makes libvterm decode the next character by G2 / G3
// in a piece of text of its own, and a mark that starts the next piece joins nothing at a
// pending wrap: fed in one write, U+0301 after the U+FFFD the shift applied to landed alone on
// the next row, while a write that started with the mark joined it there (join_marks) (found
// by a 22-minute fork-mode run of 2026-12-03 and seven more runs; fuzz/corpus/mirror/
// finding_ss2_between_broken_utf8_and_a_mark*). The write now ends after that character, so the
// mark joins it however the stream was split. The shift waits through text libvterm does not
// get: a C1 character (dropped), a lone mark at a pending wrap (lands nowhere), a byte a table
// in G2 / G3 skips (its low seven bits a C0 control).
TEST(MirrorFuzzFindings, MarksJoinTheCharacterASingleShiftAppliedTo) {
  for (const std::string& stream :
       {std::string("\x81\x1bN\x81\xcc\x81x"), std::string("a\x1bNb\xcc\x81x"),
        std::string("a\x1b+0\x1bOq\xcc\x81x"), std::string("a\x1bN\xc2\x80q\xcc\x81x"),
        std::string("a\x1b*B\x1bN\x81q\xcc\x81x"),
        std::string("ab\x1bN\xcc\x81\x1b[2;2Hc\xcc\x81x")}) {
    EXPECT_EQ(split_difference(stream, 2, 3), "") << text(stream);
    MirrorScreen whole(2, 3);
    whole.feed(stream);
    const int row = whole.cell(1, 1).kind == Cell::Kind::glyph ? 1 : 0;
    EXPECT_EQ(whole.cell(row, 1).nchars, 2) << text(stream) << ": the mark joins";
  }
}

// With a table in G2 (ESC * 0), libvterm skips a byte the single shift reads as a C0 control
// or DEL in its GR half (0x80-0x9F, 0xFF), the shift still waiting: a text write that printed
// nothing. The mirror reads the last glyph and the pending wrap once per write, and a run
// written in one write with the sequence after it (here ESC N) lost them to that empty write:
// the pending wrap differed with where the stream was cut (found by the sixth session's third
// run, a 2x4 screen; fuzz/corpus/mirror/finding_ss2_pending_wrap_after_a_jump_2x4). Such a byte
// never reaches libvterm now.
TEST(MirrorFuzzFindings, AByteASingleShiftSkipsKeepsThePendingWrap) {
  const std::string stream = "\x1b*0abcdefg\xff\x1bN\xff\x81\x03";
  MirrorScreen whole(2, 4);
  whole.feed(stream);
  EXPECT_TRUE(whole.cursor().pending_wrap);
  for (std::size_t cut = 1; cut < stream.size(); ++cut) {
    MirrorScreen split(2, 4);
    split.feed(std::string_view(stream).substr(0, cut));
    split.feed(std::string_view(stream).substr(cut));
    EXPECT_TRUE(split.cursor().pending_wrap) << "cut " << cut;
    ASSERT_TRUE(split.last_glyph().has_value()) << "cut " << cut;
    EXPECT_EQ(split.last_glyph()->col, 1) << "cut " << cut;
  }
}

}  // namespace
}  // namespace backscroll::testing
