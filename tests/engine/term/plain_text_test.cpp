// The plain text of a mirror (deletion's <actor>.scrollback): history lines then the main
// screen, no attributes, wide characters once, combining marks kept, trailing blanks and empty
// rows cut; with the alternate screen active, the main screen underneath.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/term/mirror.hpp"
#include "engine/term/plain_text.hpp"

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

// capture's lines (term::screen_lines): the visible screen (the alternate one while active),
// every row; with SGR, a sequence at each change of pen, coloured blanks kept, a reset at the
// end of a line whose last pen was not the default.
TEST(ScreenLines, TheVisibleScreenRowByRowAndTheHistoryBeforeIt) {
  term::Mirror mirror(Cursor{0}, 20, 3);
  mirror.feed("one\r\ntwo\r\nthree\r\nfour");
  const term::ScreenLines lines = term::screen_lines(mirror.screen(), 10, false);
  EXPECT_EQ(lines.history, (std::vector<std::string>{"one"}));
  EXPECT_EQ(lines.screen, (std::vector<std::string>{"two", "three", "four"}));
  mirror.feed("\x1b[?1049h\x1b[Hframe");
  EXPECT_EQ(term::screen_lines(mirror.screen(), 0, false).screen,
            (std::vector<std::string>{"frame", "", ""}));
}

TEST(ScreenLines, WithSgrEachChangeOfPenAndAResetAtTheEnd) {
  term::Mirror mirror(Cursor{0}, 20, 2);
  mirror.feed("a\x1b[1;31mb\x1b[mc\r\n\x1b[44m  \x1b[m");
  const term::ScreenLines lines = term::screen_lines(mirror.screen(), 0, true);
  EXPECT_EQ(lines.screen[0], "a\x1b[0;1;31mb\x1b[0mc");
  EXPECT_EQ(lines.screen[1], "\x1b[0;44m  \x1b[0m") << "coloured blanks are part of the picture";
}

}  // namespace
}  // namespace backscroll::testing
