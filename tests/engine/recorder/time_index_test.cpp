// TimeIndex (engine/recorder/time_index.hpp): one sample per second of activity, a cursor for
// a time (`--at-time`) and the time the stream went past a cursor (a reader's lag in seconds).
#include <gtest/gtest.h>

#include "engine/recorder/time_index.hpp"

namespace backscroll::testing {
namespace {

using recorder::TimeIndex;

TEST(TimeIndex, KeepsTheLastSampleOfEachSecond) {
  TimeIndex index;
  EXPECT_FALSE(index.note(1'000, Cursor{10}));
  EXPECT_FALSE(index.note(1'900, Cursor{20}));  // the same second: replaces
  const auto finished = index.note(2'100, Cursor{30});
  ASSERT_TRUE(finished);
  EXPECT_EQ(finished->time_ms, 1'900);
  EXPECT_EQ(finished->cursor, Cursor{20});
  EXPECT_FALSE(index.note(1'500, Cursor{40})) << "a step back in time is ignored";
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.cursor_at(999), std::nullopt);
  EXPECT_EQ(index.cursor_at(1'950), Cursor{20});
  EXPECT_EQ(index.cursor_at(5'000), Cursor{30});
}

TEST(TimeIndex, SaysWhenTheStreamWentPastACursor) {
  TimeIndex index;
  index.note(1'000, Cursor{100});
  index.note(2'000, Cursor{200});
  index.note(3'000, Cursor{300});
  EXPECT_EQ(index.time_past(Cursor{0}), 1'000);
  EXPECT_EQ(index.time_past(Cursor{99}), 1'000);
  EXPECT_EQ(index.time_past(Cursor{100}), 2'000);  // byte 100 came in the next second
  EXPECT_EQ(index.time_past(Cursor{250}), 3'000);
  EXPECT_EQ(index.time_past(Cursor{300}), std::nullopt);  // nothing after it yet
  EXPECT_EQ(index.time_past(Cursor{400}), std::nullopt);
}

}  // namespace
}  // namespace backscroll::testing
