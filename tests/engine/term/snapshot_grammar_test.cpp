// The snapshot_v1 grammar (docs/snapshot.md): is_safe_snapshot accepts exactly what a snapshot
// may contain and rejects what must never reach a client's terminal from one: OSC 52
// (clipboard), other OSC strings, DCS, APC, PM, SOS, 8-bit C1, stray controls, invalid UTF-8,
// overlong titles, CSI sequences outside the list.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "engine/term/snapshot_grammar.hpp"

namespace backscroll::testing {
namespace {

using term::is_safe_snapshot;

TEST(SnapshotGrammar, AcceptsEveryFormTheWriterUses) {
  const std::string ok =
      "\x1b]2;title \xe4\xb8\xad\x1b\\"
      "plain text \xe4\xb8\xad\xf0\x9f\x98\x80 e\xcc\x81\r\n"
      "\x1b[0;1;3;4:3;5;7;9;38;2;1;2;3;48;5;200m\x1b[11m\x1b[m\x1b[0m"
      "\x1b[12;80H\x1b[H\x1b[3C\x1b[C\x1b[5G\x1b[G\x1b[2D\x1b[A\x1b[B\x1b[7d"
      "\x1b[K\x1b[2J\x1b[4X\x1b[X\x1b[@\x1b[2P\x1b[2;20r"
      "\x1b[4h\x1b[4l\x1b[?1h\x1b[?6h\x1b[?7l\x1b[?25l\x1b[?1000h\x1b[?1006h\x1b[?1047h"
      "\x1b[?2004h\x1b[?1004h\x1b[?5h\x1b[?12l\x1b[4 q\x1b[ q"
      "\x1b"
      "7\x1b"
      "8\x1bM\x1b=\x1b>\x1b(0\x1b)B\x0e\x0f\t\b";
  std::string why;
  EXPECT_TRUE(is_safe_snapshot(ok, &why)) << why;
  EXPECT_TRUE(is_safe_snapshot(""));
}

TEST(SnapshotGrammar, RejectsStringsThatCanActOnTheClientSide) {
  const char* bad[] = {
      "\x1b]52;c;aGVsbG8=\x07",  // OSC 52 clipboard write
      "\x1b]52;c;aGVsbG8=\x1b\\",
      "\x1b]0;title\x1b\\",      // only OSC 2
      "\x1b]8;;http://x\x1b\\",  // hyperlink
      "\x1b]2;title\x07",        // BEL terminator (only ST)
      "\x1bPq#0~~\x1b\\",        // DCS (sixel)
      "\x1bP$qm\x1b\\",          // DCS DECRQSS
      "\x1b_Gf=100;AAAA\x1b\\",  // APC (kitty graphics)
      "\x1b^pm\x1b\\",           // PM
      "\x1bXsos\x1b\\",          // SOS
      "\xc2\x9d"
      "52;c;x\xc2\x9c",  // C1 OSC/ST as UTF-8 code points
      "\x9b"
      "31m",          // 8-bit CSI
      "\x1b[6n",      // DSR: would make the client answer
      "\x1b[c",       // DA
      "\x1b[21t",     // window report
      "\x1b[?1049h",  // not in the list
      "\x1b[?1;2h",   // one mode per sequence
      "\x1b[>c",
      "\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17m",  // 17 parameters
      "\x1b[12345678901m",                                // an 11-digit parameter
      "\x07",                                             // BEL
      "\x0b",                                             // VT
      "\x1b"
      "D",  // IND
      "\x1b"
      "c",             // RIS
      "\x1b#8",        // DECALN
      "\x1b[",         // truncated
      "\xff",          // invalid UTF-8
      "\xe4\xb8",      // truncated UTF-8
      "\xc0\xaf",      // overlong
      "\xed\xa0\x80",  // surrogate
  };
  for (const char* b : bad) {
    std::string why;
    EXPECT_FALSE(is_safe_snapshot(b, &why))
        << "accepted: " << ::testing::PrintToString(std::string(b));
  }
  EXPECT_FALSE(is_safe_snapshot(std::string("\x1b]2;") + std::string(257, 'a') + "\x1b\\"));
  EXPECT_TRUE(is_safe_snapshot(std::string("\x1b]2;") + std::string(256, 'a') + "\x1b\\"));
  EXPECT_FALSE(is_safe_snapshot(std::string("\x1b]2;a\x01b\x1b\\")));
}

// Random bytes: whatever is accepted contains no ESC other than the listed forms, so no
// ESC followed by ] other than "]2;", and no P, _, ^, X.
RC_GTEST_PROP(SnapshotGrammar, NeverAcceptsForbiddenIntroducers, (const std::string& bytes)) {
  if (!is_safe_snapshot(bytes)) return;
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i) {
    if (bytes[i] != '\x1b') continue;
    const char n = bytes[i + 1];
    RC_ASSERT(n != 'P' && n != '_' && n != '^' && n != 'X');
    if (n == ']') RC_ASSERT(bytes.compare(i + 2, 2, "2;") == 0);
  }
  for (unsigned char c : bytes)
    RC_ASSERT(c >= 0x20 || c == '\r' || c == '\n' || c == '\t' || c == '\b' || c == 0x0e ||
              c == 0x0f || c == 0x1b);
}

}  // namespace
}  // namespace backscroll::testing
