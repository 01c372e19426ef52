// first_difference(Mirror, Mirror): empty for the same terminal, and each kind of observable
// difference is found and named: cells, cursor, pen, title, modes, history. A comparison that
// missed one would let `backscroll verify` and the fuzzer pass a broken snapshot.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/term/mirror_compare.hpp"

namespace backscroll::testing {
namespace {

using term::first_difference;
using term::Mirror;

std::unique_ptr<Mirror> fed(const std::string& bytes) {
  auto m = std::make_unique<Mirror>(Cursor{0}, 20, 5);
  m->feed(bytes);
  return m;
}

// The difference between a mirror fed `common + a` and one fed `common + b`. Each ends with a
// sequence that changes nothing (an unknown DEC mode), so no text is held back.
std::string diff(const std::string& common, const std::string& a, const std::string& b) {
  return first_difference(*fed(common + a + "\x1b[?0h"), *fed(common + b + "\x1b[?0h"));
}

const std::string kCommon = "\x1b]2;t\x07hello\r\nworld\r\n";

TEST(MirrorCompare, SameStreamsShowTheSameTerminal) {
  EXPECT_EQ(diff(kCommon, "", ""), "");
  // Different bytes, same result: still the same terminal.
  EXPECT_EQ(diff(kCommon, "x\bx", "x"), "");
}

TEST(MirrorCompare, FindsEachKindOfDifference) {
  EXPECT_EQ(diff(kCommon, "a", "b").rfind("cell (2,0): glyph U+0061", 0), 0u);
  EXPECT_EQ(diff(kCommon, "\x1b[31ma", "a").rfind("cell (2,0)", 0), 0u);
  EXPECT_EQ(diff(kCommon, "\x1b[3;4H", "\x1b[3;5H"), "cursor at (2,3) vs (2,4)");
  EXPECT_EQ(diff(kCommon, "\x1b[?25l", ""), "cursor visibility differs");
  EXPECT_EQ(diff(kCommon, "\x1b[1m", "").rfind("pen:", 0), 0u);
  EXPECT_EQ(diff(kCommon, "\x1b]2;u\x07", ""), "title differs");
  EXPECT_EQ(diff(kCommon, "\x1b[?1h", ""), "application cursor keys differs");
  EXPECT_EQ(diff(kCommon, "\x1b[?2004h", ""), "bracketed paste differs");
  EXPECT_EQ(diff(kCommon, "\x1b[2;4r\x1b[H", "\x1b[H"), "scroll region differs");
  EXPECT_EQ(diff(kCommon,
                 "\x1b"
                 "7",
                 ""),
            "saved cursor differs");
  EXPECT_EQ(diff(kCommon, "\x1b[?1049h", "").rfind("alternate screen", 0), 0u);
  // The same screen, different lines scrolled into history.
  const std::string scroll = "\r\n\r\n\r\n\r\n\r\n";
  EXPECT_EQ(diff("first\r\n" + scroll, "", "").size(), 0u);
  EXPECT_EQ(first_difference(*fed("one\r\n" + scroll + "\x1b[2J\x1b[H"),
                             *fed("two\r\n" + scroll + "\x1b[2J\x1b[H"))
                .rfind("history line", 0),
            0u);
}

}  // namespace
}  // namespace backscroll::testing
