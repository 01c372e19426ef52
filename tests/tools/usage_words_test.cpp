// The near-miss suggestions of usage errors (tools/cli_usage.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace backscroll::cli
