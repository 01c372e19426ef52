// is_safe_snapshot: a hand-written recognizer for docs/snapshot.md's grammar, kept separate
// from the writer so that a writer bug cannot also hide in its own check.
#include "engine/term/snapshot_grammar.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace backscroll::term {
namespace {

constexpr std::size_t kMaxTitle = 256;
constexpr int kMaxParams = 16;
constexpr int kMaxDigits = 10;

// DEC private modes a snapshot may set or reset.
constexpr std::array<unsigned, 16> kDecModes = {1,    5,    6,    7,    9,    12,   25,   1000,
                                                1002, 1003, 1004, 1005, 1006, 1015, 1047, 2004};

bool fail(std::string* why, std::size_t at, const char* what) {
  if (why) *why = "byte " + std::to_string(at) + ": " + what;
  return false;
}

// Decodes one UTF-8 scalar value at s[i]; returns its length, 0 if invalid.
std::size_t utf8_len(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t len = b < 0x80             ? 1
                    : (b & 0xe0) == 0xc0 ? 2
                    : (b & 0xf0) == 0xe0 ? 3
                    : (b & 0xf8) == 0xf0 ? 4
                                         : 0;
  if (len == 0 || i + len > s.size()) return 0;
  cp = len == 1 ? b : len == 2 ? (b & 0x1fu) : len == 3 ? (b & 0x0fu) : (b & 0x07u);
  for (std::size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3fu);
  }
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

bool printable(char32_t cp) { return cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp < 0xa0); }

struct Params {
  std::array<unsigned, kMaxParams> v{};
  std::array<bool, kMaxParams> present{};
  int count = 0;
  bool colon = false;
};

}  // namespace

bool is_safe_snapshot(std::string_view s, std::string* why) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b == '\r' || b == '\n' || b == '\t' || b == '\b' || b == 0x0e || b == 0x0f) {
      ++i;
      continue;
    }
    if (b != 0x1b) {
      char32_t cp = 0;
      const std::size_t len = utf8_len(s, i, cp);
      if (len == 0) return fail(why, i, "invalid UTF-8");
      if (!printable(cp)) return fail(why, i, "control character");
      i += len;
      continue;
    }
    // Escape sequences.
    if (i + 1 >= s.size()) return fail(why, i, "truncated escape");
    const char e = s[i + 1];
    if (e == '7' || e == '8' || e == '=' || e == '>' || e == 'M') {
      i += 2;
      continue;
    }
    if (e == '(' || e == ')') {
      if (i + 2 >= s.size()) return fail(why, i, "truncated designation");
      const auto f = static_cast<unsigned char>(s[i + 2]);
      if (f < 0x30 || f > 0x7e) return fail(why, i + 2, "bad charset designation");
      i += 3;
      continue;
    }
    if (e == ']') {
      // Only OSC 2 ; title ST.
      if (s.substr(i + 2, 2) != "2;") return fail(why, i, "OSC other than 2 (title)");
      std::size_t j = i + 4;
      const std::size_t start = j;
      while (j < s.size() && s[j] != 0x1b) {
        char32_t cp = 0;
        const std::size_t len = utf8_len(s, j, cp);
        if (len == 0) return fail(why, j, "invalid UTF-8 in title");
        if (!printable(cp)) return fail(why, j, "control character in title");
        j += len;
      }
      if (j - start > kMaxTitle) return fail(why, start, "title longer than 256 bytes");
      if (j + 1 >= s.size() || s[j + 1] != '\\') return fail(why, j, "title not ended by ST");
      i = j + 2;
      continue;
    }
    if (e != '[') return fail(why, i, "escape sequence outside the grammar");
    // CSI [?] params [SP] final
    std::size_t j = i + 2;
    bool dec = false;
    if (j < s.size() && s[j] == '?') {
      dec = true;
      ++j;
    }
    Params p;
    bool in_param = false;
    int digits = 0;
    while (j < s.size()) {
      const char c = s[j];
      if (c >= '0' && c <= '9') {
        if (p.count == 0 && !in_param) p.count = 1;
        if (++digits > kMaxDigits) return fail(why, j, "parameter too long");
        p.v[p.count - 1] = p.v[p.count - 1] * 10 + static_cast<unsigned>(c - '0');
        p.present[p.count - 1] = true;
        in_param = true;
        ++j;
      } else if (c == ';' || c == ':') {
        if (c == ':') p.colon = true;
        if (p.count == 0) p.count = 1;
        if (p.count >= kMaxParams) return fail(why, j, "more than 16 parameters");
        ++p.count;
        in_param = true;
        digits = 0;
        ++j;
      } else {
        break;
      }
    }
    if (j >= s.size()) return fail(why, i, "truncated CSI");
    bool space = false;
    if (s[j] == ' ') {
      space = true;
      ++j;
      if (j >= s.size()) return fail(why, i, "truncated CSI");
    }
    const char f = s[j];
    const std::size_t seq_end = j + 1;
    auto max_params = [&](int n) { return p.count <= n && !p.colon; };
    bool ok = false;
    if (space) {
      ok = !dec && f == 'q' && max_params(1) && p.v[0] <= 6;
    } else if (dec) {
      if ((f == 'h' || f == 'l') && p.count == 1 && p.present[0] && !p.colon) {
        for (unsigned m : kDecModes) ok = ok || p.v[0] == m;
      }
    } else {
      switch (f) {
        case 'm': ok = true; break;
        case 'H':
        case 'r': ok = max_params(2); break;
        case 'A':
        case 'B':
        case 'C':
        case 'D':
        case 'G':
        case 'd':
        case 'J':
        case 'K':
        case 'X':
        case '@':
        case 'P': ok = max_params(1); break;
        case 'h':
        case 'l': ok = p.count == 1 && p.v[0] == 4 && !p.colon; break;
        default: break;
      }
    }
    if (!ok) return fail(why, i, "CSI sequence outside the grammar");
    i = seq_end;
  }
  return true;
}

}  // namespace backscroll::term
