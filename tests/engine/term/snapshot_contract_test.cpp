// THE CONTRACT of snapshot_v1 (docs/design.md, "Snapshots"), with libvterm as the second emulator:
// for a stream S and a cut c at a clean boundary, a fresh terminal that parses the snapshot of a
// mirror fed S[0, c) and then S[c, end) shows exactly what a terminal fed all of S shows:
// every cell (text, width, attributes, colours), the cursor (position, visibility, style),
// the alternate screen, reverse video, title, mouse mode, the history lines, the DEC modes it
// reports (DECRQM), what it sends for keys, paste, focus and mouse, and how it goes on to draw
// (a probe suffix fed to both afterwards: text at the cursor in the current pen, insert and
// wrap modes and charsets, scrolling in the scroll region, origin-relative addressing, the
// saved cursor, leaving the alternate screen).
// Streams are lists of pieces, each a whole control sequence or text group, with its effect
// on TerminalModes (tracked here by hand: the scanner that tracks them is tested elsewhere).
// Cuts fall between pieces.
// Debugging aids (environment): BACKSCROLL_CONTRACT_SEEDS / _PIECES scale the generated test
// up; BACKSCROLL_CONTRACT_CASE="cols rows seed count cut" replays one case and lists its
// pieces; BACKSCROLL_CONTRACT_DUMP=file writes the failing case's prefix, snapshot and rest;
// BACKSCROLL_CONTRACT_ROW=n adds row n of the mirror to a fallback message;
// BACKSCROLL_CONTRACT_STREAMS=dir writes each generated stream to dir/COLSxROWS-SEED.bin.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "engine/term/mirror.hpp"
#include "engine/term/mirror_screen.hpp"
#include "engine/term/reference/screen_switch.hpp"
#include "engine/term/reference/vterm_reference.hpp"
#include "engine/term/snapshot_grammar.hpp"
#include "engine/term/snapshot_writer.hpp"
#include "engine/term/terminal_modes.hpp"
#include "engine/term/utf8.hpp"

namespace backscroll::testing {
namespace {

using term::MirrorScreen;
using term::MouseEncoding;
using term::MouseTracking;
using term::TerminalModes;

struct Piece {
  std::string bytes;
  std::function<void(TerminalModes&)> effect;
};

std::string utf8(char32_t c) {
  std::string out;
  term::append_utf8(out, c);
  return out;
}

// ---- the check --------------------------------------------------------------------------------

std::string escaped(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == 0x1b) o += "\\e";
    else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      o += buf;
    } else o += static_cast<char>(c);
  }
  return o + "\"";
}

// Feeds `bytes` in writes of at most 32 KiB, split only after LF or at piece boundaries.
void feed_chunked(ReferenceTerminal& t, const std::string& bytes) {
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::size_t end = std::min(bytes.size(), at + 32 * 1024);
    if (end < bytes.size()) {
      const std::size_t lf = bytes.rfind('\n', end - 1);
      if (lf != std::string::npos && lf >= at) end = lf + 1;
    }
    t.feed(std::string_view(bytes).substr(at, end - at));
    at = end;
  }
}

// What both terminals are fed after the comparison, to expose hidden state.
std::string probe_suffix(int rows) {
  std::string p = "X\x1b[2bqx";                  // pen, wrap, insert, charset, REP
  for (int i = 0; i <= rows; ++i) p += "\r\nZ";  // scrolling in the region, BCE
  p += "\x1b[1;1HY\x1b[2;3HW";                   // origin-relative addressing
  p += "\x1b"
       "8V";            // the saved cursor and pen
  p += "\x1b[?1049lU";  // leave the alternate screen
  p += "\x1b[1;1HT";
  return p;
}

// The modes the snapshot writer takes from the scanner, compared ("" when equal).
std::string modes_difference(const TerminalModes& scanned, const TerminalModes& expected) {
  std::string d;
  auto check = [&](const char* name, auto a, auto b) {
    if (a != b) d += std::string(d.empty() ? "" : ", ") + name;
  };
  check("cursor_keys_application", scanned.cursor_keys_application,
        expected.cursor_keys_application);
  check("keypad_application", scanned.keypad_application, expected.keypad_application);
  check("origin", scanned.origin, expected.origin);
  check("insert", scanned.insert, expected.insert);
  check("bracketed_paste", scanned.bracketed_paste, expected.bracketed_paste);
  check("focus_reporting", scanned.focus_reporting, expected.focus_reporting);
  check("mouse_tracking", scanned.mouse_tracking, expected.mouse_tracking);
  check("mouse_encoding", scanned.mouse_encoding, expected.mouse_encoding);
  check("scroll_top", scanned.scroll_top, expected.scroll_top);
  check("scroll_bottom", scanned.scroll_bottom, expected.scroll_bottom);
  return d;
}

// A DECRQM report without the alternate screen's entry (the canvas is always on it).
std::string without_alternate_mode(std::string report) {
  const std::string entry = "\x1b[?1047;";
  if (const std::size_t at = report.find(entry); at != std::string::npos) {
    report.erase(at, report.find('y', at) + 1 - at);
  }
  return report;
}

// Returns "" when the contract holds at `cut`, else what differs. On the alternate canvas
// (SnapshotCanvas::alternate) the terminal fed the snapshot starts on its alternate screen, the
// stream after the cut ends at its first screen switch, and what is compared is the screen
// each shows (not which one it is), without history.
std::string check_cut(const std::vector<Piece>& pieces, std::size_t cut, int cols, int rows,
                      std::size_t scrollback = 512,
                      term::SnapshotCanvas canvas = term::SnapshotCanvas::fresh) {
  const bool on_canvas = canvas == term::SnapshotCanvas::alternate;
  if (on_canvas) scrollback = 0;
  TerminalModes modes;
  std::string prefix;
  for (std::size_t i = 0; i < cut; ++i) {
    prefix += pieces[i].bytes;
    if (pieces[i].effect) pieces[i].effect(modes);
  }
  // The mirror as the engine runs it: scanner + libvterm, fed in chunks that cut sequences.
  term::Mirror composed(Cursor{0}, static_cast<std::uint16_t>(cols),
                        static_cast<std::uint16_t>(rows));
  for (std::size_t at = 0, step = 1 + cut % 61; at < prefix.size();
       at += step, step = step * 7 % 997 + 1)
    composed.feed(std::string_view(prefix).substr(at, step));
  const MirrorScreen& mirror = composed.screen();
  if (const std::string d = modes_difference(composed.scanner().modes(), modes); !d.empty())
    return "the scanner's modes differ from the stream's: " + d;
  term::SnapshotOptions options;
  options.scrollback_lines = scrollback;
  options.canvas = canvas;
  const term::MirrorSnapshot taken = composed.snapshot(options);
  // The tag is the cut itself when the cut is clean, else the last clean boundary before it
  // (an unfinished sequence or character is the only thing the mirror holds back).
  if (taken.cursor != composed.scanner().clean_position())
    return "snapshot tagged " + std::to_string(value(taken.cursor)) + ", cut at " +
           std::to_string(prefix.size()) + ", clean at " +
           std::to_string(value(composed.scanner().clean_position()));
  std::string rest = prefix.substr(value(taken.cursor));
  for (std::size_t i = cut; i < pieces.size(); ++i) rest += pieces[i].bytes;
  if (on_canvas) rest.resize(bytes_before_screen_switch(rest));
  const term::Snapshot& snap = taken.snapshot;
  if (snap.fallback_reason) {
    const auto cur = mirror.cursor();
    std::string ctx = " (cursor " + std::to_string(cur.row) + "," + std::to_string(cur.col) +
                      " wrap " + std::to_string(cur.pending_wrap) + " shape " +
                      std::to_string(cur.shape) + " origin " + std::to_string(modes.origin) +
                      " region " + std::to_string(modes.scroll_top) + "-" +
                      std::to_string(modes.scroll_bottom) + " saved " +
                      std::to_string(mirror.saved_cursor().has_value()) + "; last pieces:";
    for (std::size_t i = cut >= 4 ? cut - 4 : 0; i < cut; ++i)
      ctx += " " + escaped(pieces[i].bytes);
    if (std::getenv("BACKSCROLL_CONTRACT_ROW")) {
      const int r = std::atoi(std::getenv("BACKSCROLL_CONTRACT_ROW"));
      ctx += "\n  row:";
      for (int c = 0; c < cols; ++c) {
        const auto cell = mirror.cell(r, c);
        char buf[64];
        std::snprintf(buf, sizeof buf, " %d:%c%X/w%d", c, "egc"[static_cast<int>(cell.kind)],
                      static_cast<unsigned>(cell.chars[0]), cell.width);
        ctx += buf;
      }
    }
    return "fallback: " + *snap.fallback_reason + " at " + snap.fallback_detail + ctx + ")";
  }
  std::string why;
  if (!term::is_safe_snapshot(snap.bytes, &why)) return "unsafe snapshot: " + why;

  // One stream each, cut into writes only after line feeds: a plain libvterm joins a combining
  // mark to the glyph before it only inside one write (the mirror does for any split).
  ReferenceTerminal fresh(cols, rows);
  // attach enters the canvas with CSI ? 1049 h, whose saved cursor xterm, xterm.js and VTE keep
  // in the main screen's slot; libvterm has one slot for both: 1047 leaves it fresh, as the
  // canvas's own slot is in those terminals.
  if (on_canvas) fresh.feed("\x1b[?1047h");
  feed_chunked(fresh, snap.bytes + rest);
  ReferenceTerminal whole(cols, rows);
  feed_chunked(whole, prefix.substr(0, value(taken.cursor)) + rest);

  // On the canvas: the screen shown, whichever it is.
  const auto model = [&](const ReferenceTerminal& t, const ReferenceTerminal& other) {
    ScreenModel m = t.model(scrollback);
    if (on_canvas) m.alt_screen = other.model(0).alt_screen;
    return m;
  };
  const ScreenModel a = model(fresh, whole);
  const ScreenModel b = whole.model(scrollback);
  std::string diff = first_difference(a, b, scrollback);
  if (!diff.empty()) {
    std::string ctx =
        "\n  snapshot: " +
        escaped(snap.bytes.size() < 600 ? snap.bytes : snap.bytes.substr(snap.bytes.size() - 600)) +
        "\n  before:";
    for (std::size_t i = cut >= 4 ? cut - 4 : 0; i < cut; ++i)
      ctx += " " + escaped(pieces[i].bytes);
    ctx += "\n  after:";
    for (std::size_t i = cut; i < pieces.size() && i < cut + 6; ++i)
      ctx += " " + escaped(pieces[i].bytes);
    diff += ctx;
    if (const char* dump = std::getenv("BACKSCROLL_CONTRACT_DUMP")) {
      std::FILE* f = std::fopen(dump, "wb");
      std::fprintf(f, "%zu %zu %zu\n", prefix.size(), snap.bytes.size(), rest.size());
      std::fwrite(prefix.data(), 1, prefix.size(), f);
      std::fwrite(snap.bytes.data(), 1, snap.bytes.size(), f);
      std::fwrite(rest.data(), 1, rest.size(), f);
      std::fclose(f);
    }
    if (cols > 40) return "after the stream: " + diff;
    return "after the stream: " + diff + "\nsnapshot+rest:\n" + render(a) + "all bytes:\n" +
           render(b);
  }
  if (without_alternate_mode(fresh.mode_report()) != without_alternate_mode(whole.mode_report()))
    return "DEC mode reports differ";
  if (fresh.input_report() != whole.input_report()) return "key/mouse encodings differ";
  std::string probe = probe_suffix(rows);
  if (on_canvas) probe.resize(bytes_before_screen_switch(probe));
  fresh.feed(probe);
  whole.feed(probe);
  diff = first_difference(model(fresh, whole), whole.model(scrollback), scrollback);
  if (!diff.empty()) return "after the probe: " + diff;
  return "";
}

bool is_declared_fallback(const std::string& r) {
  return r.rfind("fallback: unreproducible_", 0) == 0;
}

// Every cut of a stream; the first failure. With `fallbacks`, a raw_replay fallback for a
// state the writer declares it cannot reproduce is counted there instead of failing.
std::string check_all_cuts(const std::vector<Piece>& pieces, int cols, int rows,
                           std::size_t* fallbacks = nullptr,
                           term::SnapshotCanvas canvas = term::SnapshotCanvas::fresh) {
  for (std::size_t cut = 0; cut <= pieces.size(); ++cut) {
    const std::string r = check_cut(pieces, cut, cols, rows, 512, canvas);
    if (fallbacks && is_declared_fallback(r)) {
      ++*fallbacks;
      if (std::getenv("BACKSCROLL_CONTRACT_FALLBACKS"))
        std::cout << cols << "x" << rows << " cut " << cut << " " << r.substr(0, 700) << "\n";
      continue;
    }
    if (!r.empty())
      return "cut " + std::to_string(cut) + "/" + std::to_string(pieces.size()) + " at " +
             std::to_string(cols) + "x" + std::to_string(rows) + ": " + r;
  }
  return "";
}

// ---- pieces -----------------------------------------------------------------------------------

Piece raw(std::string s) { return Piece{std::move(s), nullptr}; }
Piece csi(const std::string& body) { return raw("\x1b[" + body); }
Piece mode(std::string s, std::function<void(TerminalModes&)> f) {
  return Piece{std::move(s), std::move(f)};
}

Piece decset(int m, bool on) {
  std::string s = "\x1b[?" + std::to_string(m) + (on ? "h" : "l");
  return mode(s, [m, on](TerminalModes& t) {
    switch (m) {
      case 1: t.cursor_keys_application = on; break;
      case 6: t.origin = on; break;
      case 7: t.autowrap = on; break;
      case 25: t.cursor_visible = on; break;
      case 1004: t.focus_reporting = on; break;
      case 2004: t.bracketed_paste = on; break;
      case 1047:
      case 1049: t.alternate_screen = on; break;
      case 1000:
      case 1002:
      case 1003: t.mouse_tracking = on ? static_cast<MouseTracking>(m) : MouseTracking::off; break;
      case 1005:
      case 1006:
      case 1015: t.mouse_encoding = on ? static_cast<MouseEncoding>(m) : MouseEncoding::x10; break;
      default: break;
    }
  });
}

Piece insert_mode(bool on) {
  return mode(on ? "\x1b[4h" : "\x1b[4l", [on](TerminalModes& t) { t.insert = on; });
}
Piece keypad(bool on) {
  return mode(on ? "\x1b=" : "\x1b>", [on](TerminalModes& t) { t.keypad_application = on; });
}
Piece region(int top, int bottom, int rows) {  // 1-based, inclusive, valid
  return mode("\x1b[" + std::to_string(top) + ";" + std::to_string(bottom) + "r",
              [top, bottom, rows](TerminalModes& t) {
                t.scroll_top = static_cast<std::uint16_t>(top - 1);
                t.scroll_bottom =
                    static_cast<std::uint16_t>(bottom == rows && top == 1 ? 0 : bottom);
              });
}
Piece region_reset() {
  return mode("\x1b[r", [](TerminalModes& t) {
    t.scroll_top = 0;
    t.scroll_bottom = 0;
  });
}
Piece g0(char f) {
  return mode(std::string("\x1b(") + f, [f](TerminalModes& t) { t.g0 = f; });
}
Piece g1(char f) {
  return mode(std::string("\x1b)") + f, [f](TerminalModes& t) { t.g1 = f; });
}
Piece shift_out(bool on) {
  return mode(on ? "\x0e" : "\x0f", [on](TerminalModes& t) { t.shift_out = on; });
}
Piece cup(int row, int col) {  // 1-based
  return csi(std::to_string(row) + ";" + std::to_string(col) + "H");
}

// ---- the random stream generator ---------------------------------------------------------------

// Every draw is a statement of its own: compilers order the operands of one expression
// differently (gcc right to left, clang left to right), and a seed must name the same stream
// under both. Where one piece takes several draws they go from its right end to its left, the
// order gcc gave them when the seeds' streams were first checked, so the seeds kept their streams.
class Generator {
 public:
  Generator(int cols, int rows, std::uint32_t seed) : cols_(cols), rows_(rows), rng_(seed) {}

  std::vector<Piece> stream(int count) {
    std::vector<Piece> out;
    for (int i = 0; i < count; ++i) {
      Piece p = next();
      if (p.effect) p.effect(modes_);
      out.push_back(std::move(p));
    }
    return out;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int percent) { return pick(1, 100) <= percent; }

  // libvterm decodes ASCII through GL; a run that starts with a non-ASCII character goes
  // through UTF-8 instead, so text split across writes reads differently when GL holds the
  // DEC graphics set (docs/snapshot.md). The generator keeps to ASCII then.
  bool gl_is_graphics() const { return modes_.shift_out ? modes_.g1 == '0' : modes_.g0 == '0'; }

  std::string color(bool fg) {
    switch (pick(0, 4)) {
      case 0: return std::to_string((fg ? 30 : 40) + pick(0, 7));
      case 1: return std::to_string((fg ? 90 : 100) + pick(0, 7));
      case 2: return std::string(fg ? "38;5;" : "48;5;") + std::to_string(pick(0, 255));
      case 3: {
        const int blue = pick(0, 255);
        const int green = pick(0, 255);
        const int red = pick(0, 255);
        return std::string(fg ? "38;2;" : "48;2;") + std::to_string(red) + ";" +
               std::to_string(green) + ";" + std::to_string(blue);
      }
      default: return fg ? "39" : "49";
    }
  }

  Piece sgr() {
    std::string s = chance(30) ? "0" : "";
    const int n = pick(1, 4);
    for (int i = 0; i < n; ++i) {
      std::string a;
      switch (pick(0, 14)) {
        case 0: a = "1"; break;
        case 1: a = "3"; break;
        case 2: a = "4"; break;
        case 3: a = "4:3"; break;
        case 4: a = "21"; break;
        case 5: a = "5"; break;
        case 6: a = "7"; break;
        case 7: a = "9"; break;
        case 8: a = std::to_string(10 + pick(0, 9)); break;
        case 9: a = std::to_string(pick(22, 29)); break;
        case 10:
        case 11: a = color(true); break;
        default: a = color(false); break;
      }
      // libvterm 0.1.4 (the reference) crashes past 16 parameters; the mirror's handling of
      // those is tested in mirror_screen_test.
      const auto params = [](const std::string& x) {
        return x.empty() ? 0 : 1 + static_cast<int>(std::count_if(x.begin(), x.end(), [](char ch) {
                                 return ch == ';' || ch == ':';
                               }));
      };
      if (params(s) + params(a) > 16) break;
      if (!s.empty()) s += ';';
      s += a;
    }
    return csi(s + "m");
  }

  std::string ascii(int n) {
    static const char kChars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;!?-_=+";
    std::string s;
    for (int i = 0; i < n; ++i) s += kChars[pick(0, static_cast<int>(sizeof kChars) - 2)];
    return s;
  }

  std::string unicode_text() {
    std::string s;
    const int n = pick(1, 5);
    for (int i = 0; i < n; ++i) {
      switch (pick(0, 5)) {
        case 0: s += utf8(static_cast<char32_t>(pick(0x4e00, 0x9fa5))); break;    // CJK, wide
        case 1: s += utf8(static_cast<char32_t>(pick(0x1f600, 0x1f64f))); break;  // emoji
        case 2:  // base + combining marks
          // Once a charset was designated, libvterm decodes ASCII by a table and the marks
          // after it in a call of their own, which cannot join a glyph at the row's end: the
          // mirror joins them as xterm does (docs/snapshot.md, "Marks join an ASCII glyph at
          // the row's end"), the reference cannot. The base is a Latin letter then.
          if (designated_) s += utf8(static_cast<char32_t>(pick(0xc0, 0x17f)));
          else s += ascii(1);
          for (int k = pick(1, 3); k > 0; --k) s += utf8(static_cast<char32_t>(pick(0x300, 0x36f)));
          break;
        case 3: s += utf8(static_cast<char32_t>(pick(0xc0, 0x17f))); break;      // Latin
        case 4: s += utf8(static_cast<char32_t>(pick(0x3041, 0x3096))); break;   // kana, wide
        default: s += utf8(static_cast<char32_t>(pick(0x2500, 0x257f))); break;  // box drawing
      }
    }
    return s;
  }

  // EL or ED. Mode 0 comes after a cursor move away from the last two columns: at a pending
  // wrap the mirror erases as xterm.js does (nothing of the cursor's row) and libvterm erases
  // from the last column (xterm_equivalence_test checks that case).
  Piece erase(int mode, char final) {
    std::string s;
    if (mode == 0) {
      const int col = pick(1, std::max(1, cols_ - 2));
      s = "\x1b[" + std::to_string(pick(1, rows_)) + ";" + std::to_string(col) + "H";
    }
    return raw(s + "\x1b[" + std::to_string(mode) + final);
  }

  Piece next() {
    switch (pick(0, 44)) {
      case 0:
      case 1:
      case 2:
      case 3: return raw(ascii(pick(1, cols_ + 4)));
      case 4:
      case 5:
        if (gl_is_graphics()) return raw(ascii(pick(1, 8)));
        return raw(unicode_text());
      case 6:
      case 7:
      case 8: return sgr();
      case 9: return csi("m");
      case 10:
      case 11: {
        const int col = pick(1, cols_ + 1);
        return cup(pick(1, rows_ + 1), col);
      }
      case 12: {
        static const char kMoves[] = "ABCDEFGdae`";
        const char final = kMoves[pick(0, 10)];
        return csi(std::to_string(pick(0, 5)) + final);
      }
      case 13: {
        static const char* kControls[] = {"\r",
                                          "\n",
                                          "\b",
                                          "\t",
                                          "\r\n",
                                          "\x1b"
                                          "D",
                                          "\x1b"
                                          "E",
                                          "\x1b"
                                          "M"};
        return raw(kControls[pick(0, 7)]);
      }
      case 14: return erase(pick(0, 2), 'J');
      case 15: return erase(pick(0, 2), 'K');
      case 16: return csi(std::to_string(pick(1, 6)) + "X");
      case 17: {
        static const char kEdits[] = "@PLMST";
        const char final = kEdits[pick(0, 5)];
        return csi(std::to_string(pick(1, 3)) + final);
      }
      case 18: {
        if (rows_ < 2 || chance(25)) return region_reset();
        const int top = pick(1, rows_ - 1);
        return region(top, pick(top + 1, rows_), rows_);
      }
      case 19: return decset(6, chance(50));
      case 20: return decset(7, chance(60));
      case 21: return insert_mode(chance(40));
      case 22: {
        const bool on = chance(55);
        return decset(chance(50) ? 1049 : 1047, on);
      }
      case 23:
        return raw(chance(50) ? "\x1b"
                                "7"
                              : "\x1b"
                                "8");
      case 24:
        designated_ = true;
        switch (pick(0, 4)) {
          case 0: return g0('0');
          case 1: return g0('B');
          case 2: return g1(chance(70) ? '0' : 'B');
          case 3: return shift_out(true);
          default: return shift_out(false);
        }
      case 25: return decset(1, chance(50));
      case 26: return keypad(chance(50));
      case 27: return decset(2004, chance(50));
      case 28: return decset(1004, chance(50));
      case 29: {
        static const int kMouse[] = {1000, 1002, 1003, 1005, 1006, 1015};
        int m = kMouse[pick(0, 5)];
        const bool on = chance(60);
        // Resetting an encoding other than the active one: xterm, xterm.js and the scanner keep
        // the active encoding, libvterm 0.1.4 falls back to X10. Reset the active one instead.
        const int active = static_cast<int>(modes_.mouse_encoding);
        if (!on && m >= 1005 && active != 0) m = active;
        return decset(m, on);
      }
      case 30: return decset(25, chance(50));
      case 31: return csi(std::to_string(pick(0, 6)) + " q");
      case 32: return decset(12, chance(50));
      case 33: {
        const std::string t = chance(20) ? unicode_text() : ascii(pick(0, 20));
        const char* end = chance(50) ? "\x07" : "\x1b\\";
        return raw((chance(50) ? "\x1b]2;" : "\x1b]0;") + t + end);
      }
      case 34:
      case 35: {  // to the last column: pending wrap
        const int k = pick(1, std::min(cols_, 4));
        const std::string text = ascii(k);
        std::string s = "\x1b[" + std::to_string(pick(1, rows_)) + ";" +
                        std::to_string(cols_ - k + 1) + "H" + text;
        if (chance(30) && !gl_is_graphics() && cols_ >= 2)
          s = "\x1b[" + std::to_string(pick(1, rows_)) + ";" + std::to_string(cols_ - 1) + "H" +
              utf8(0x4e2d);
        return raw(s);
      }
      case 36: {  // REP
        const int count = pick(1, 12);
        return raw(ascii(1) + "\x1b[" + std::to_string(count) + "b");
      }
      case 37: return decset(5, chance(50));
      case 38: {
        static const char* kQueries[] = {"\x1b[c", "\x1b[6n", "\x1b[>c", "\x1b[?25$p", "\x1b[5n"};
        return raw(kQueries[pick(0, 4)]);
      }
      case 39: {  // many lines: history
        std::string s;
        for (int i = pick(1, rows_ + 3); i > 0; --i) s += ascii(pick(0, cols_)) + "\r\n";
        return raw(s);
      }
      case 40: {  // BCE
        const char final = chance(50) ? 'J' : 'K';
        const std::string clear = erase(pick(0, 2), final).bytes;
        return raw("\x1b[4" + std::to_string(pick(0, 7)) + "m" + clear);
      }
      case 41: return raw("\t" + ascii(pick(1, 3)));
      case 42: return raw(ascii(pick(cols_, 2 * cols_ + 3)));  // wraps
      case 43:
        if (gl_is_graphics()) return raw(ascii(2));
        return raw(utf8(0x4e00) + utf8(0x4e8c) + "\x1b[2D" + ascii(1));  // orphaned halves
      default: return raw("\x1b[" + std::to_string(pick(1, rows_)) + "d");
    }
  }

  int cols_;
  int rows_;
  std::mt19937 rng_;
  TerminalModes modes_;
  bool designated_ = false;  // a G0/G1 designation or a shift came before
};

// ---- scripted torture streams -------------------------------------------------------------------

std::vector<Piece> pending_wrap_stream(int cols) {
  return {raw("hello"),      cup(1, cols - 2),  raw("abc"),       raw("\x1b[31m"),
          raw("\x1b[1K"),    cup(2, cols),      raw("Z"),         cup(3, cols - 1),
          raw(utf8(0x4e2d)), raw("\x1b[1;44m"), cup(3, cols - 1), raw(utf8(0x4e2d)),
          raw("\x1b[m"),     decset(7, false),  cup(1, cols),     raw("q"),
          decset(7, true),   raw("x")};
}

std::vector<Piece> scroll_region_stream(int rows) {
  std::vector<Piece> s = {raw("line1\r\nline2\r\nline3"),
                          region(2, std::max(2, rows - 1), rows),
                          raw("\x1b[42m"),
                          decset(6, true),
                          cup(1, 1),
                          raw("top of region")};
  for (int i = 0; i < rows + 2; ++i) s.push_back(raw("\r\nscrolled " + std::to_string(i)));
  s.push_back(
      raw("\x1b"
          "M\x1b"
          "M"));
  s.push_back(csi("2L"));
  s.push_back(csi("1M"));
  s.push_back(csi("2S"));
  s.push_back(csi("1T"));
  s.push_back(decset(6, false));
  s.push_back(cup(rows, 1));
  s.push_back(raw("bottom"));
  return s;
}

std::vector<Piece> alternate_screen_stream() {
  return {raw("\x1b[1;33mshell prompt$ \x1b[m"),
          raw("vim file\r\n"),
          raw("\x1b[44m"),
          decset(1049, true),
          raw("\x1b[H\x1b[2J"),
          raw("~\r\n~\r\n~"),
          csi("1;1H"),
          raw("\x1b[7m-- INSERT --\x1b[m"),
          decset(25, false),
          decset(1, true),
          keypad(true),
          raw("typed"),
          decset(1, false),
          keypad(false),
          decset(25, true),
          decset(1049, false),
          raw("$ "),
          decset(1047, true),
          raw("alt again"),
          raw("\x1b[31m"),
          decset(1047, false),
          raw("back")};
}

std::vector<Piece> save_restore_stream() {
  return {cup(3, 4),
          raw("\x1b[1;35m"),
          raw("\x1b"
              "7"),
          raw("\x1b[m"),
          cup(1, 1),
          raw("moved"),
          decset(25, false),
          raw("\x1b"
              "8"),
          raw("restored"),
          raw("\x1b"
              "7"),
          decset(1049, true),
          raw("in alt"),
          decset(1049, false),
          raw("after")};
}

std::vector<Piece> charset_stream() {
  return {g0('0'),      raw("lqqqk"),   raw("\r\nx   x\r\n"), raw("mqqqj"), g0('B'),
          raw(" text"), g1('0'),        shift_out(true),      raw("lqk"),   shift_out(false),
          raw("abc"),   shift_out(true)};
}

std::vector<Piece> bce_stream() {
  return {raw("text on the line"),
          raw("\x1b[44m"),
          csi("2J"),
          raw("\x1b[43m"),
          cup(2, 5),
          csi("K"),
          raw("\x1b[48;5;200m"),
          csi("3X"),
          raw("\x1b[48;2;10;20;30m"),
          csi("1L"),
          raw("\x1b[41m"),
          csi("2@"),
          raw("\x1b[45m\r\n\r\n\r\n\r\n"),
          raw("\x1b[m")};
}

std::vector<Piece> edit_stream() {
  return {raw("0123456789abcdef"),
          cup(1, 3),
          csi("2@"),
          raw("XY"),
          cup(1, 8),
          csi("3P"),
          raw("\r\nsecond\r\nthird\r\nfourth"),
          cup(2, 1),
          csi("L"),
          cup(3, 1),
          csi("2M"),
          insert_mode(true),
          cup(1, 1),
          raw("ins"),
          insert_mode(false)};
}

std::vector<Piece> colour_stream() {
  std::vector<Piece> s;
  for (int i = 0; i < 16; ++i)
    s.push_back(raw("\x1b[" + std::to_string(i < 8 ? 30 + i : 82 + i) + "mc"));
  for (int i = 0; i < 256; i += 37) s.push_back(raw("\x1b[48;5;" + std::to_string(i) + "mb"));
  s.push_back(raw("\x1b[38;2;1;2;3;48;2;250;251;252mrgb"));
  s.push_back(raw("\x1b[1;3;4:3;5;7;9;12mall"));
  s.push_back(raw("\x1b[21;22;23;25;27;29mmost off"));
  s.push_back(raw("\x1b[m"));
  return s;
}

std::vector<Piece> wide_stream() {
  return {raw(utf8(0x4e2d) + utf8(0x6587) + "ab" + utf8(0x1f600)),
          raw("e" + utf8(0x301) + utf8(0x308)),
          cup(1, 2),
          raw("x"),
          cup(2, 1),
          raw(utf8(0x3042) + utf8(0x3044)),
          cup(2, 1),
          raw("y"),
          cup(3, 1),
          raw(utf8(0x4e00) + "\x1b[1D\x1b[1X"),
          raw("\ttab\t" + utf8(0x4e00))};
}

std::vector<Piece> history_stream(int rows) {
  std::vector<Piece> s;
  for (int i = 0; i < rows * 3; ++i)
    s.push_back(raw("\x1b[3" + std::to_string(i % 8) + "mhistory line " + std::to_string(i) +
                    "\x1b[m\r\n"));
  s.push_back(raw(utf8(0x4e2d) + "\x1b[41m\x1b[K\x1b[m\r\n"));
  return s;
}

struct Size {
  int cols;
  int rows;
};
constexpr Size kSizes[] = {{80, 24}, {120, 40}, {10, 3}};

TEST(SnapshotContract, HoldsForPendingWrapAtTheLastColumn) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(pending_wrap_stream(s.cols), s.cols, s.rows), "");
}

TEST(SnapshotContract, HoldsForScrollRegionsAndOriginMode) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(scroll_region_stream(s.rows), s.cols, s.rows), "");
}

TEST(SnapshotContract, HoldsForTheAlternateScreenEnteredAndLeft) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(alternate_screen_stream(), s.cols, s.rows), "");
}

TEST(SnapshotContract, HoldsForCursorSaveAndRestore) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(save_restore_stream(), s.cols, s.rows), "");
}

TEST(SnapshotContract, HoldsForDecSpecialGraphics) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(charset_stream(), s.cols, s.rows), "");
}

TEST(SnapshotContract, HoldsForEraseWithAColouredBackground) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(bce_stream(), s.cols, s.rows), "");
}

TEST(SnapshotContract, HoldsForInsertAndDeleteOfLinesAndCharacters) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(edit_stream(), s.cols, s.rows), "");
}

TEST(SnapshotContract, HoldsForSixteen256AndTruecolourAttributes) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(colour_stream(), s.cols, s.rows), "");
}

TEST(SnapshotContract, HoldsForWideCombiningAndOrphanedCharacters) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(wide_stream(), s.cols, s.rows), "");
}

// Found by the random property (120x40, seed 261445868, cut 11): combining marks on a glyph in
// the last column, right after a wide one, then a glyph that wraps. The second emulator used to
// split its writes before the ASCII glyph, and libvterm cannot join marks that start a write to a
// glyph in the last column, so it lost marks the mirror (and xterm.js) keep.
TEST(SnapshotContract, HoldsForCombiningMarksOnTheLastColumnAfterAWideGlyph) {
  const std::string line =
      "_ILmIHUMCldm4EnsvqDfhOmpfvN-PI j3,wH!:IFrX=J8h66H27Vs77ug-eWSSx+fK=AjLG;3G-L4aJ=+JtK,mS1:"
      "fA5uO1.eNAszshG7tFJt_4l_BiTNT0LJ0g.-15!bH g=RkJzcWHhMgP.ryiwhi=Qw_VQ,Y7;:=clj";
  const std::vector<Piece> found = {cup(21, 4),
                                    raw("\x1b]0;title\x1b\\"),
                                    raw("\x1b"
                                        "8"),
                                    raw("d\x1b[9b"),
                                    raw("\x1b[38;69H\x1b[0K"),
                                    raw(line),
                                    decset(1006, true),
                                    g0('B'),
                                    csi("1T"),
                                    raw("\xe4\xb8\x80\xe4\xba\x8c\x1b[2D_"),
                                    raw("\xe3\x81\xbf"
                                        "l\xcd\xab\xcc\xa2"
                                        "o\xcd\x9d"),
                                    decset(6, true),
                                    shift_out(true),
                                    decset(2004, true)};
  EXPECT_EQ(check_all_cuts(found, 120, 40), "");
  for (Size s : kSizes) {
    const std::vector<Piece> pieces = {raw("abc"),
                                       cup(2, s.cols - 2),
                                       raw("\xe3\x81\xbf"
                                           "l\xcd\xab\xcc\xa2"
                                           "o\xcd\x9d"),
                                       decset(2004, true),
                                       cup(1, s.cols),
                                       raw("x\xcc\x81"
                                           "y")};
    EXPECT_EQ(check_all_cuts(pieces, s.cols, s.rows), "") << s.cols << "x" << s.rows;
  }
}

TEST(SnapshotContract, HoldsForHistoryScrolledIntoScrollback) {
  for (Size s : kSizes) EXPECT_EQ(check_all_cuts(history_stream(s.rows), s.cols, s.rows), "");
}

// BACKSCROLL_CONTRACT_SEEDS=n (default 30) and BACKSCROLL_CONTRACT_PIECES=n (default 50)
// scale this up for a soak run.
TEST(SnapshotContract, HoldsForGeneratedTortureStreamsAtEveryCut) {
  const char* seeds_env = std::getenv("BACKSCROLL_CONTRACT_SEEDS");
  const char* pieces_env = std::getenv("BACKSCROLL_CONTRACT_PIECES");
  const std::uint32_t seeds = seeds_env ? static_cast<std::uint32_t>(std::atoi(seeds_env)) : 30;
  const int count = pieces_env ? std::atoi(pieces_env) : 50;
  // Adversarial streams reach states the writer declines (docs/snapshot.md, "Fallbacks"),
  // such as a pending wrap over cells a scroll replaced on the alternate screen, or one a REP
  // set away from libvterm's last glyph (which REP and combining marks after the cut use: the
  // fuzzer found the writer reproducing it inexactly, and the generator's REP pieces reach it
  // often). They must stay rare; every other cut must hold exactly.
  std::size_t fallbacks = 0;
  std::size_t cuts = 0;
  for (Size s : kSizes) {
    for (std::uint32_t seed = 1; seed <= seeds; ++seed) {
      Generator gen(s.cols, s.rows, seed);
      const auto pieces = gen.stream(count);
      if (const char* dir = std::getenv("BACKSCROLL_CONTRACT_STREAMS")) {
        std::ofstream out(std::string(dir) + "/" + std::to_string(s.cols) + "x" +
                              std::to_string(s.rows) + "-" + std::to_string(seed) + ".bin",
                          std::ios::binary);
        for (const auto& p : pieces) out << p.bytes;
      }
      const std::string r = check_all_cuts(pieces, s.cols, s.rows, &fallbacks);
      cuts += pieces.size() + 1;
      ASSERT_EQ(r, "") << "seed " << seed;
    }
  }
  std::cout << "declared fallbacks: " << fallbacks << " of " << cuts << " cuts\n";
  // 2.4% on 2026-12-02 (docs/snapshot.md, "Fallbacks"): a rise past 3% is a regression.
  EXPECT_LE(fallbacks * 100, 3 * cuts);
}

// attach's canvas (SnapshotCanvas::alternate): the same streams, each cut drawn on a terminal
// already on its alternate screen, up to the next screen switch. Without a spare screen to set
// a pending wrap on, more cuts fall back (declared, counted).
TEST(SnapshotContract, HoldsOnTheAlternateCanvas) {
  const auto alternate = term::SnapshotCanvas::alternate;
  std::size_t fallbacks = 0;
  std::size_t cuts = 0;
  for (Size s : kSizes) {
    const std::vector<std::vector<Piece>> streams = {pending_wrap_stream(s.cols),
                                                     scroll_region_stream(s.rows),
                                                     alternate_screen_stream(),
                                                     save_restore_stream(),
                                                     charset_stream(),
                                                     bce_stream(),
                                                     edit_stream(),
                                                     colour_stream(),
                                                     wide_stream()};
    for (const auto& pieces : streams) {
      EXPECT_EQ(check_all_cuts(pieces, s.cols, s.rows, &fallbacks, alternate), "");
      cuts += pieces.size() + 1;
    }
    for (std::uint32_t seed = 1; seed <= 2; ++seed) {
      const auto pieces = Generator(s.cols, s.rows, seed).stream(50);
      ASSERT_EQ(check_all_cuts(pieces, s.cols, s.rows, &fallbacks, alternate), "")
          << "seed " << seed;
      cuts += pieces.size() + 1;
    }
  }
  std::cout << "declared fallbacks on the canvas: " << fallbacks << " of " << cuts << " cuts\n";
  EXPECT_LE(fallbacks * 100, 5 * cuts);
}

TEST(SnapshotContract, TheAlternateCanvasNeverSwitchesScreensNorDrawsHistory) {
  for (const bool alt : {false, true}) {
    term::Mirror mirror(Cursor{0}, 20, 5);
    for (int i = 0; i < 30; ++i) mirror.feed("line " + std::to_string(i) + "\r\n");
    if (alt) mirror.feed("\x1b[?1049hfull screen");
    term::SnapshotOptions options;
    options.canvas = term::SnapshotCanvas::alternate;
    const term::Snapshot snap = mirror.snapshot(options).snapshot;
    ASSERT_FALSE(snap.fallback_reason) << *snap.fallback_reason;
    EXPECT_EQ(snap.scrollback_lines, 0u);
    EXPECT_EQ(snap.bytes.find("\x1b[?1047"), std::string::npos);
    EXPECT_EQ(snap.bytes.find("\x1b[?1049"), std::string::npos);
    EXPECT_EQ(snap.bytes.find("line 24"), std::string::npos);  // scrolled off: history
    EXPECT_EQ(snap.bytes.find("line 29") != std::string::npos, !alt);
    EXPECT_EQ(snap.bytes.find("full screen") != std::string::npos, alt);
  }
}

RC_GTEST_PROP(SnapshotContract, HoldsForRandomStreamsAndCuts, ()) {
  const Size s = *rc::gen::elementOf(std::vector<Size>(std::begin(kSizes), std::end(kSizes)));
  const auto seed = *rc::gen::inRange<std::uint32_t>(1000, 1u << 30);
  const int count = *rc::gen::inRange(1, 120);
  Generator gen(s.cols, s.rows, seed);
  const auto pieces = gen.stream(count);
  const auto cut = *rc::gen::inRange<std::size_t>(0, pieces.size() + 1);
  const auto canvas =
      *rc::gen::element(term::SnapshotCanvas::fresh, term::SnapshotCanvas::alternate);
  const std::string r = check_cut(pieces, cut, s.cols, s.rows, 512, canvas);
  RC_CLASSIFY(is_declared_fallback(r));
  RC_ASSERT(r == "" || is_declared_fallback(r));
}

// Re-runs one generated case: BACKSCROLL_CONTRACT_CASE="cols rows seed count cut".
TEST(SnapshotContract, ReplaysOneGeneratedCase) {
  const char* spec = std::getenv("BACKSCROLL_CONTRACT_CASE");
  if (!spec) GTEST_SKIP() << "set BACKSCROLL_CONTRACT_CASE to replay a case";
  int cols = 0, rows = 0, count = 0;
  unsigned seed = 0;
  std::size_t cut = 0;
  ASSERT_EQ(std::sscanf(spec, "%d %d %u %d %zu", &cols, &rows, &seed, &count, &cut), 5);
  Generator gen(cols, rows, seed);
  const auto pieces = gen.stream(count);
  for (std::size_t i = 0; i < pieces.size(); ++i)
    std::cout << (i == cut ? "--- cut ---\n" : "") << i << ": " << escaped(pieces[i].bytes) << "\n";
  EXPECT_EQ(check_cut(pieces, cut, cols, rows), "");
}

TEST(SnapshotContract, ScrollbackOptionLimitsTheHistoryDrawn) {
  MirrorScreen mirror(20, 5);
  for (int i = 0; i < 100; ++i) mirror.feed("line " + std::to_string(i) + "\r\n");
  TerminalModes modes;
  term::SnapshotOptions options;
  options.scrollback_lines = 7;
  const auto snap = term::build_snapshot(mirror, modes, options);
  ASSERT_FALSE(snap.fallback_reason);
  EXPECT_EQ(snap.scrollback_lines, 7u);
  ReferenceTerminal fresh(20, 5);
  fresh.feed(snap.bytes);
  EXPECT_EQ(fresh.model().scrollback.size(), 7u);
}

TEST(SnapshotContract, FallsBackWhenOverTheByteLimit) {
  MirrorScreen mirror(80, 24);
  for (int i = 0; i < 600; ++i)
    mirror.feed("\x1b[3" + std::to_string(i % 8) + "m" + std::string(70, 'x') + "\r\n");
  TerminalModes modes;
  term::SnapshotOptions options;
  options.max_bytes = 10'000;
  const auto snap = term::build_snapshot(mirror, modes, options);
  ASSERT_TRUE(snap.fallback_reason);
  EXPECT_EQ(*snap.fallback_reason, "too_large");
  EXPECT_TRUE(snap.bytes.empty());
}

TEST(SnapshotContract, FallsBackForStateItCannotReproduce) {
  struct Case {
    const char* bytes;
    const char* reason;
  };
  const Case cases[] = {
      {"\x1bPq#0;2;0;0;0#0~~@@vv\x1b\\", "graphics"},     // sixel
      {"\x1b_Gf=100;AAAA\x1b\\", "unmodelled_string"},    // kitty graphics (APC)
      {"\x1b^private\x1b\\", "unmodelled_string"},        // PM
      {"\x1bXstring\x1b\\", "unmodelled_string"},         // SOS
      {"\x1b[1\"q", "unmodelled_state"},                  // DECSCA
      {"\x1b[?69h", "unmodelled_state"},                  // DECLRMM
      {"\x1b[5;10s", "unmodelled_state"},                 // DECSLRM
      {"\x1b[3g", "unmodelled_state"},                    // TBC
      {"\x1bH", "unmodelled_state"},                      // HTS
      {"\x1b[20h", "unmodelled_state"},                   // LNM
      {"\x1b#6", "unmodelled_state"},                     // DECDWL
      {"\x1b*0\x1bn", "unmodelled_state"},                // G2 + LS2
      {"\x1b]4;1;rgb:ff/00/00\x07", "unmodelled_state"},  // palette
  };
  for (const Case& c : cases) {
    MirrorScreen mirror(80, 24);
    mirror.feed(c.bytes);
    const auto snap = term::build_snapshot(mirror, TerminalModes{});
    ASSERT_TRUE(snap.fallback_reason) << c.bytes;
    EXPECT_EQ(*snap.fallback_reason, c.reason) << c.bytes;
  }
  // Queries and resets do not count as changes.
  for (const char* ok : {"\x1b]11;?\x07", "\x1b]4;1;?\x07", "\x1bP$qm\x1b\\", "\x1b[s", "\x1b[20l",
                         "\x1b]104\x07"}) {
    MirrorScreen mirror(80, 24);
    mirror.feed(ok);
    EXPECT_FALSE(term::build_snapshot(mirror, TerminalModes{}).fallback_reason) << ok;
  }
}

TEST(SnapshotContract, FallsBackMidSequenceAndAtAnUnsafeSize) {
  MirrorScreen mirror(80, 24);
  mirror.feed("abc\x1b[3");
  EXPECT_EQ(mirror.pending_bytes(), 3u);
  EXPECT_EQ(term::build_snapshot(mirror, TerminalModes{}).fallback_reason, "incomplete_sequence");
  mirror.feed("1mdef");
  EXPECT_EQ(mirror.pending_bytes(), 0u);
  EXPECT_FALSE(term::build_snapshot(mirror, TerminalModes{}).fallback_reason);
  MirrorScreen narrow(1, 5);
  EXPECT_EQ(term::build_snapshot(narrow, TerminalModes{}).fallback_reason, "unsafe_size");
}

}  // namespace
}  // namespace backscroll::testing
