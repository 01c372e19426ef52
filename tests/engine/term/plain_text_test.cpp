// The plain text of a mirror (deletion's <actor>.scrollback): history lines then the main
// screen, no attributes, wide characters once, combining marks kept, trailing blanks and empty
// rows cut; with the alternate screen active, the main screen underneath.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/term/mirror.hpp"
#include "engine/term/plain_lines.hpp"
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

// PlainLines (engine/term/plain_lines.hpp): a raw stream as plain text lines with cursors.

struct Got {
  std::uint64_t begin, end;
  std::string text;
  bool operator==(const Got&) const = default;
};
std::ostream& operator<<(std::ostream& out, const Got& g) {
  return out << "[" << g.begin << "," << g.end << ") '" << g.text << "'";
}

// The lines of `stream`, fed in pieces of `piece` bytes, from cursor `start`.
std::vector<Got> plain_lines(std::string_view stream, std::size_t piece = 1 << 20,
                             std::uint64_t start = 0) {
  term::PlainLines lines{Cursor{start}};
  std::vector<Got> out;
  const auto take = [&] {
    for (const term::PlainLine& l : lines.lines()) {
      out.push_back({value(l.begin), value(l.end), std::string(lines.text_of(l))});
    }
    lines.clear();
  };
  for (std::size_t i = 0; i < stream.size(); i += piece) {
    lines.feed(stream.substr(i, piece));
    take();
  }
  lines.finish();
  take();
  return out;
}

TEST(PlainLines, EscapeSequencesAndControlsAreDroppedAndLinesKeepTheirCursors) {
  const std::string stream =
      "plain\r\n\x1b[1;31mred\x1b[m and \x1b]2;a title\x07text\r\n\x1bP1;2qDCS\x1b\\"
      "after\x1b(B\x07\n\xe4\xb8\x96\xe7\x95\x8c\tend";
  EXPECT_EQ(plain_lines(stream), (std::vector<Got>{{0, 7, "plain"},
                                                   {7, 43, "red and text"},
                                                   {43, 64, "after"},
                                                   {64, 74, "\xe4\xb8\x96\xe7\x95\x8c\tend"}}));
}

TEST(PlainLines, CarriageReturnsBackspacesAndEraseInLineOverwriteAsATerminalShows) {
  EXPECT_EQ(plain_lines("progress 10%\rprogress 99%\n").at(0).text, "progress 99%");
  EXPECT_EQ(plain_lines("abcdef\rxy\n").at(0).text, "xycdef");
  EXPECT_EQ(plain_lines("abcdef\rxy\x1b[K\n").at(0).text, "xy");
  EXPECT_EQ(plain_lines("abc\b\bX\n").at(0).text, "aXc");
  EXPECT_EQ(plain_lines("abc\r\x1b[2Kdone\n").at(0).text, "done");
  // Overwrites count characters, not columns: a wide character overwritten by a narrow one
  // goes whole (a terminal would keep half of its cells for the next character).
  EXPECT_EQ(plain_lines("\xe4\xb8\x96x\ra\n").at(0).text, "ax");
}

TEST(PlainLines, ALongLineIsCutIntoPiecesThatCoverItsBytes) {
  const std::string stream(term::PlainLines::kMaxLineBytes * 2 + 10, 'x');
  const auto got = plain_lines(stream + "\n", 4093, 100);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].text.size(), term::PlainLines::kMaxLineBytes);
  EXPECT_EQ(got[0].begin, 100u);
  EXPECT_EQ(got[1].begin, got[0].end);
  EXPECT_EQ(got[2].end, 100 + stream.size() + 1);
}

TEST(PlainLines, AnySplitOfTheStreamGivesTheSameLines) {
  std::string stream;
  for (int i = 0; i < 200; ++i) {
    stream += "line " + std::to_string(i) + " \x1b[3" + std::to_string(i % 8) + "mcolour\x1b[m";
    stream += i % 7 == 0 ? "\r\x1b[Kredrawn\r\n" : i % 5 == 0 ? "\x1b]0;t\x1b\\\n" : "\r\n";
    if (i % 11 == 0) stream += "\xe2\x9c\xb3 \xc3\xa9\b\b";
  }
  const auto whole = plain_lines(stream);
  for (std::size_t piece : {1u, 2u, 3u, 7u, 64u, 1000u}) {
    EXPECT_EQ(plain_lines(stream, piece), whole) << "pieces of " << piece;
  }
  // The lines cover the stream: each begins where the one before ended.
  for (std::size_t i = 1; i < whole.size(); ++i) ASSERT_EQ(whole[i].begin, whole[i - 1].end);
  EXPECT_EQ(whole.back().end, stream.size());
}

}  // namespace
}  // namespace backscroll::testing
