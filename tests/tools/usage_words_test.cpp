// The near-miss suggestions of usage errors (tools/cli_usage.hpp) and values typed as seconds
// (tools/cli_args.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/cli_args.hpp"
#include "tools/cli_usage.hpp"

namespace backscroll::cli {
namespace {

TEST(EditDistance, CountsEditsAndSwapsOfNeighbours) {
  EXPECT_EQ(edit_distance("list", "list"), 0u);
  EXPECT_EQ(edit_distance("lsit", "list"), 1u);  // a swap
  EXPECT_EQ(edit_distance("lst", "list"), 1u);
  EXPECT_EQ(edit_distance("lists", "list"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(Nearest, SuggestsOneCloseNameOrNone) {
  const std::vector<std::string> commands = {"spawn",   "list",   "status", "stop",  "restart",
                                             "restore", "delete", "search", "events"};
  EXPECT_EQ(nearest("lsit", commands), "list");
  EXPECT_EQ(nearest("spwan", commands), "spawn");
  EXPECT_EQ(nearest("statsu", commands), "status");
  EXPECT_EQ(nearest("delte", commands), "delete");
  EXPECT_EQ(nearest("rest", commands), std::nullopt);  // restart or restore: say neither
  EXPECT_EQ(nearest("stp", commands), "stop");         // one edit, short word
  EXPECT_EQ(nearest("xyz", commands), std::nullopt);
  EXPECT_EQ(nearest("sto", commands), "stop");     // a unique prefix... or one edit
  EXPECT_EQ(nearest("even", commands), "events");  // a unique prefix
  EXPECT_EQ(nearest("", commands), std::nullopt);
}

TEST(Seconds, TakesWholeAndDecimalSecondsUpToADay) {
  using std::chrono::milliseconds;
  EXPECT_EQ(parse_seconds("30"), milliseconds(30'000));
  EXPECT_EQ(parse_seconds("0.5"), milliseconds(500));
  EXPECT_EQ(parse_seconds("1.25"), milliseconds(1'250));
  EXPECT_EQ(parse_seconds("0.001"), milliseconds(1));
  EXPECT_EQ(parse_seconds("86400"), milliseconds(86'400'000));
  for (const char* bad : {"", "0", "0.0", "-1", "1.", ".5", "1.2345", "86401", "1e3", "abc"}) {
    EXPECT_FALSE(parse_seconds(bad)) << bad;
  }
}

}  // namespace
}  // namespace backscroll::cli
