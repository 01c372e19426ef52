// Fuzz target: PlainLines (engine/term/plain_lines.hpp), the raw stream as plain text lines that
// `search` matches. Input: byte 0 seeds how the rest is split into feed() calls, the rest is the
// stream. Oracles: no crash or sanitizer report; fed whole and in pieces it gives the same lines
// (cursors and text), also when the lines are taken (clear()) after each piece; the lines cover
// the stream from its start to its end, each beginning where the one before ended, none empty of
// raw bytes; no line's text holds a control character but TAB (escape sequences and controls are
// dropped) or is longer than kMaxLineBytes.
// Run: plain_lines_fuzz -dict=fuzz/plain_lines.dict -max_len=4096 fuzz/corpus/plain_lines
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/plain_lines.hpp"

namespace {

using backscroll::Cursor;
using backscroll::term::PlainLine;
using backscroll::term::PlainLines;

constexpr std::uint64_t kStart = 1000;

[[noreturn]] void violated() { __builtin_trap(); }

struct Line {
  std::uint64_t begin, end;
  std::string text;
  bool operator==(const Line&) const = default;
};

void take(PlainLines& lines, std::vector<Line>& out) {
  for (const PlainLine& l : lines.lines()) {
    out.push_back({value(l.begin), value(l.end), std::string(lines.text_of(l))});
  }
  lines.clear();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::uint32_t seed = data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  std::vector<Line> whole;
  {
    PlainLines lines{Cursor{kStart}};
    lines.feed(stream);
    lines.finish();
    take(lines, whole);
  }
  std::vector<Line> pieces;
  {
    PlainLines lines{Cursor{kStart}};
    for (std::size_t i = 0; i < stream.size();) {
      seed = seed * 1103515245u + 12345u;
      const std::size_t n = 1 + (seed >> 16) % 37;
      lines.feed(stream.substr(i, n));
      if (seed & 1) take(lines, pieces);
      i += n;
    }
    lines.finish();
    take(lines, pieces);
  }
  if (pieces != whole) violated();

  std::uint64_t at = kStart;
  for (const Line& l : whole) {
    if (l.begin != at || l.end <= l.begin) violated();
    if (l.text.size() > PlainLines::kMaxLineBytes) violated();
    for (const char c : l.text) {
      const auto b = static_cast<unsigned char>(c);
      if ((b < 0x20 && b != '\t') || b == 0x7F) violated();
    }
    at = l.end;
  }
  if (at != kStart + stream.size()) violated();
  return 0;
}
