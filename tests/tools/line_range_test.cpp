// `history --lines A..B` (tools/cli_line_range.hpp): the selection equals the lines a naive
// split of the whole stream would pick, however the stream is cut into pieces.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "tools/cli_line_range.hpp"

namespace backscroll::cli {
namespace {

// The reference: split the whole text, resolve the bounds against the total, join.
std::string naive(const std::string& text, LineRange range) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto nl = text.find('\n', at);
    const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  const auto total = static_cast<std::int64_t>(lines.size());
  const auto resolve = [total](std::int64_t n) { return n > 0 ? n : total + 1 + n; };
  const std::int64_t first = resolve(range.first.value_or(1));
  const std::int64_t last = resolve(range.last.value_or(-1));
  std::string out;
  for (std::int64_t n = std::max<std::int64_t>(first, 1); n <= std::min(last, total); ++n) {
    out += lines[static_cast<std::size_t>(n - 1)];
  }
  return out;
}

std::string select(const std::vector<std::string>& pieces, LineRange range) {
  LineSelector selector(range);
  std::string out;
  for (const auto& piece : pieces) selector.feed(piece, out);
  selector.finish(out);
  return out;
}

TEST(LineRange, Parses) {
  EXPECT_EQ(parse_line_range("3..7")->first, 3);
  EXPECT_EQ(parse_line_range("3..7")->last, 7);
  EXPECT_EQ(parse_line_range("-10..")->first, -10);
  EXPECT_FALSE(parse_line_range("-10..")->last);
  EXPECT_EQ(parse_line_range("..-2")->last, -2);
  EXPECT_EQ(parse_line_range("5")->first, 5);
  EXPECT_EQ(parse_line_range("5")->last, 5);
  EXPECT_EQ(parse_line_range("2..-1")->last, -1);
  for (const char* bad :
       {"", "..", "0..3", "3..0", "7..3", "-1..-3", "a..b", "1...3", "+1..2", "1..2..3", "1 ..2"}) {
    EXPECT_FALSE(parse_line_range(bad)) << bad;
  }
}

TEST(LineRange, ExamplesByHand) {
  const std::vector<std::string> text = {"one\ntw", "o\nthree\n", "four"};
  EXPECT_EQ(select(text, {2, 3}), "two\nthree\n");
  EXPECT_EQ(select(text, {-2, std::nullopt}), "three\nfour");
  EXPECT_EQ(select(text, {std::nullopt, -2}), "one\ntwo\nthree\n");
  EXPECT_EQ(select(text, {-3, -2}), "two\nthree\n");
  EXPECT_EQ(select(text, {4, 4}), "four");
  EXPECT_EQ(select(text, {9, 12}), "");
  EXPECT_EQ(select({"a\n"}, {-1, -1}), "a\n");  // a final '\n' starts no line
}

TEST(LineRange, StopsEarlyPastAPositiveEnd) {
  LineSelector selector({1, 2});
  std::string out;
  selector.feed("a\nb\n", out);
  EXPECT_TRUE(selector.done());
  EXPECT_EQ(out, "a\nb\n");
}

RC_GTEST_PROP(LineRange, EqualsTheNaiveSplitForEveryRangeAndCut, ()) {
  const auto text = *rc::gen::container<std::string>(rc::gen::element('a', 'b', '\n'));
  const auto bound = [] {
    return rc::gen::oneOf(rc::gen::just(std::optional<std::int64_t>()),
                          rc::gen::map(rc::gen::inRange<std::int64_t>(1, 12),
                                       [](std::int64_t n) { return std::optional(n); }),
                          rc::gen::map(rc::gen::inRange<std::int64_t>(1, 12),
                                       [](std::int64_t n) { return std::optional(-n); }));
  };
  LineRange range{*bound(), *bound()};
  // Cut the text at random places.
  std::vector<std::string> pieces;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto n = *rc::gen::inRange<std::size_t>(1, text.size() - at + 1);
    pieces.push_back(text.substr(at, n));
    at += n;
  }
  RC_ASSERT(select(pieces, range) == naive(text, range));
}

}  // namespace
}  // namespace backscroll::cli
