// Fuzz target: VtScanner (engine/term/vt_scanner.hpp), the parser every byte a program prints goes
// through before libvterm. Input: byte 0 seeds how the rest is split into scan() calls, bytes 1
// and 2 pick the screen rows and columns (1-256), bytes 3.. are the stream. Oracles: no crash or
// sanitizer report; scanning whole and in pieces gives the same modes, title, reason, bells,
// marks (skip ranges joined), positions and events (titles, bells, shell marks, with cursors);
// after every piece clean_position() and feed_limit() equal those of a byte-by-byte scan at the
// same offset; clean <= feed limit <= position, the feed limit never moves back, a held sequence is
// at most kMaxHoldBytes; the title is valid UTF-8 without control characters; buffered bytes stay
// bounded; what the mirror would feed libvterm holds no CSI that overflows libvterm's 16 arguments.
// Run: vt_scanner_fuzz -dict=fuzz/vt_scanner.dict -max_len=16384 fuzz/corpus/vt_scanner
// (max_len above kMaxHoldBytes, so forced feeds of oversized sequences are reached).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/vt_scanner.hpp"

namespace {

using backscroll::Cursor;
using backscroll::term::Mark;
using backscroll::term::MarkKind;
using backscroll::term::VtScanner;

constexpr std::uint64_t kStart = 77;

[[noreturn]] void violated() { __builtin_trap(); }

void check(bool ok) {
  if (!ok) violated();
}

std::uint64_t offset(Cursor c) { return backscroll::value(c) - kStart; }

void collect(std::vector<Mark>& into, const VtScanner& s) {
  for (const Mark& m : s.marks()) {
    if (m.kind == MarkKind::libvterm_skip && !into.empty() &&
        into.back().kind == MarkKind::libvterm_skip && into.back().end == m.begin) {
      into.back().end = m.end;
      continue;
    }
    into.push_back(m);
  }
}

// Strict UTF-8, no C0, DEL or C1 code points.
bool clean_title(std::string_view t) {
  std::size_t i = 0;
  while (i < t.size()) {
    const auto b = static_cast<std::uint8_t>(t[i]);
    std::uint32_t cp = 0;
    std::size_t n = 0;
    if (b < 0x80) {
      cp = b;
      n = 1;
    } else if (b >= 0xc2 && b <= 0xdf) {
      cp = b & 0x1fu;
      n = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
      cp = b & 0x0fu;
      n = 3;
    } else if (b >= 0xf0 && b <= 0xf4) {
      cp = b & 0x07u;
      n = 4;
    } else {
      return false;
    }
    if (i + n > t.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      const auto c = static_cast<std::uint8_t>(t[i + k]);
      if (c < 0x80 || c >= 0xc0) return false;
      cp = (cp << 6) | (c & 0x3fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff))) return false;
    if (cp >= 0xd800 && cp <= 0xdfff) return false;
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return false;
    i += n;
  }
  return true;
}

// Every title set, bell and shell mark a scanner reports (VtEvents), in order, with its cursor.
class Recorder final : public backscroll::term::VtEvents {
 public:
  void on_title(std::string_view title, Cursor after) noexcept override {
    events.push_back("t" + std::string(title) + "@" + std::to_string(backscroll::value(after)));
  }
  void on_bell(Cursor after) noexcept override {
    events.push_back("b@" + std::to_string(backscroll::value(after)));
  }
  void on_shell_mark(char mark, std::optional<int> exit_status, Cursor after) noexcept override {
    events.push_back(std::string("m") + mark + (exit_status ? std::to_string(*exit_status) : "") +
                     "@" + std::to_string(backscroll::value(after)));
  }
  std::vector<std::string> events;
};

void check_state(const VtScanner& s, Cursor& last_feed) {
  check(s.clean_position() <= s.feed_limit());
  check(s.feed_limit() <= s.position());
  check(s.feed_limit() >= last_feed);
  last_feed = s.feed_limit();
  if (s.feed_limit() == s.clean_position()) {
    check(s.position() - s.clean_position() <= VtScanner::kMaxHoldBytes);
  }
  check(s.buffered_bytes() <= VtScanner::kMaxBufferedBytes);
  check(s.title().size() <= VtScanner::kMaxTitleBytes);
  check(clean_title(s.title()));
  Cursor previous{kStart};
  for (const Mark& m : s.marks()) {
    check(m.begin <= m.end);
    check(m.end <= s.feed_limit());
    check(m.end >= previous);
    check(m.begin >= Cursor{kStart});
    previous = m.end;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  std::uint32_t split_state = data[0];
  const auto rows = static_cast<std::uint16_t>(data[1] + 1);
  const auto cols = static_cast<std::uint16_t>(data[2] + 1);
  const std::string_view stream(reinterpret_cast<const char*>(data + 3), size - 3);

  // The reference: one byte at a time.
  VtScanner bytewise(Cursor{kStart}, cols, rows);
  Recorder bytewise_events, whole_events, piece_events;
  bytewise.set_events(&bytewise_events);
  std::vector<Cursor> clean_at{bytewise.clean_position()};
  std::vector<Cursor> feed_at{bytewise.feed_limit()};
  std::vector<Mark> bytewise_marks;
  Cursor bytewise_feed = bytewise.feed_limit();
  for (char c : stream) {
    bytewise.scan(std::string_view(&c, 1));
    check_state(bytewise, bytewise_feed);
    collect(bytewise_marks, bytewise);
    clean_at.push_back(bytewise.clean_position());
    feed_at.push_back(bytewise.feed_limit());
  }

  VtScanner whole(Cursor{kStart}, cols, rows);
  whole.set_events(&whole_events);
  std::vector<Mark> whole_marks;
  Cursor whole_feed = whole.feed_limit();
  whole.scan(stream);
  check_state(whole, whole_feed);
  collect(whole_marks, whole);

  // Pieces of 1-64 bytes, now and then up to 8 KiB; the mirror's feed alongside.
  VtScanner pieces(Cursor{kStart}, cols, rows);
  pieces.set_events(&piece_events);
  std::vector<Mark> piece_marks;
  Cursor piece_feed = pieces.feed_limit();
  std::string fed_bytes;
  std::uint64_t fed = 0;
  auto feed_to = [&](std::uint64_t to) {
    check(to >= fed);
    fed_bytes.append(stream.substr(fed, to - fed));
    fed = to;
  };
  std::size_t done = 0;
  while (done < stream.size()) {
    split_state = split_state * 1103515245u + 12345u;  // an LCG
    const std::size_t want = (split_state >> 28) == 0 ? 1 + ((split_state >> 16) & 8191)
                                                      : 1 + ((split_state >> 16) & 63);
    const std::size_t n = std::min(want, stream.size() - done);
    pieces.scan(stream.substr(done, n));
    done += n;
    check_state(pieces, piece_feed);
    check(pieces.clean_position() == clean_at[done]);
    check(pieces.feed_limit() == feed_at[done]);
    for (const Mark& m : pieces.marks()) {
      if (m.kind == MarkKind::libvterm_overflow) {
        feed_to(offset(m.begin));
        fed_bytes += '\x18';
      } else if (m.kind == MarkKind::libvterm_skip) {
        feed_to(offset(m.begin));
        fed = offset(m.end);
      }
    }
    feed_to(offset(pieces.feed_limit()));
    collect(piece_marks, pieces);
  }

  // A CAN ends whatever is held, so every mark is released.
  for (VtScanner* s : {&bytewise, &whole, &pieces}) s->scan("\x18");
  collect(bytewise_marks, bytewise);
  collect(whole_marks, whole);
  collect(piece_marks, pieces);
  for (const VtScanner* s : {&bytewise, &pieces}) {
    check(s->modes() == whole.modes());
    check(s->title() == whole.title());
    check(s->title_changes() == whole.title_changes());
    check(s->bells() == whole.bells());
    check(s->unmodelled_reason() == whole.unmodelled_reason());
    check(s->position() == whole.position());
    check(s->clean_position() == whole.clean_position());
  }
  check(bytewise_marks == whole_marks);
  check(piece_marks == whole_marks);
  // Events do not depend on how the stream is cut, and each is past its own bytes.
  check(bytewise_events.events == whole_events.events);
  check(piece_events.events == whole_events.events);
  check(whole_events.events.size() <= stream.size() + 1);

  VtScanner fed_check(Cursor{kStart}, cols, rows);
  std::vector<Mark> fed_marks;
  fed_check.scan(fed_bytes);
  collect(fed_marks, fed_check);
  fed_check.scan("\x18");
  collect(fed_marks, fed_check);
  for (const Mark& m : fed_marks) check(m.kind != MarkKind::libvterm_overflow);
  return 0;
}
