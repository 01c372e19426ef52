// The plain text of a mirror (deletion's <actor>.scrollback): history lines then the main
// screen, no attributes, wide characters once, combining marks kept, trailing blanks and empty
// rows cut; with the alternate screen active, the main screen underneath.
#include <gtest/gtest.h>

#include "engine/term/mirror.hpp"

namespace backscroll::testing {
namespace {

std::string text_of(std::string_view stream, std::uint16_t cols = 20, std::uint16_t rows = 3) {
  term::Mirror mirror(Cursor{0}, cols, rows);
  mirror.feed(stream);
  return mirror.final_text().snapshot.bytes;
}

TEST(PlainText, HistoryThenScreenWithoutAttributesOrTrailingBlanks) {
  EXPECT_EQ(text_of("one\r\n\x1b[1;31mtwo\x1b[m   \r\nthree\r\nfour"), "one\ntwo\nthree\nfour\n");
  EXPECT_EQ(text_of("only\r\n"), "only\n") << "empty rows below the text are cut";
  EXPECT_EQ(text_of(""), "");
  EXPECT_EQ(text_of("a\x1b[5Cb"), "a     b\n") << "erased cells between glyphs are spaces";
}

TEST(PlainText, WideCharactersOnceAndCombiningMarksKept) {
  EXPECT_EQ(text_of("\xe4\xb8\xad\xe6\x96\x87|e\xcc\x81"), "\xe4\xb8\xad\xe6\x96\x87|e\xcc\x81\n");
}

TEST(PlainText, TheMainScreenUnderAFullScreenProgram) {
  EXPECT_EQ(text_of("$ vim\r\n\x1b[?1049h\x1b[Hframe of the editor"), "$ vim\n");
}

}  // namespace
}  // namespace backscroll::testing
