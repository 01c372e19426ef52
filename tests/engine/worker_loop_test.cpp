// paced_tick_ms: how long a follower thread (the mirror, the writer) sleeps between looks at
// streaming rings. At the pace bytes came, no slot may gather more than its room while the
// thread sleeps (a quarter of its ring: the consumer gate would pause the PTY for the sleep;
// or less: the mirror's bound on what a snapshot waits for).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/worker_loop.hpp"

namespace backscroll::testing {
namespace {

struct FakeSlot {
  std::uint64_t room;
  std::uint64_t came = 0;  // handed out once, then 0 (as a slot's mark moves on)
  int asked = 0;
};

std::vector<std::unique_ptr<FakeSlot>> slots(std::initializer_list<std::uint64_t> rooms) {
  std::vector<std::unique_ptr<FakeSlot>> out;
  for (std::uint64_t room : rooms) out.push_back(std::make_unique<FakeSlot>(FakeSlot{room}));
  return out;
}

int tick(std::vector<std::unique_ptr<FakeSlot>>& s, int max_ms, double elapsed_ms) {
  return engine::paced_tick_ms(
      s, max_ms, elapsed_ms,
      [](FakeSlot& slot) {
        ++slot.asked;
        const std::uint64_t came = slot.came;
        slot.came = 0;
        return came;
      },
      [](const FakeSlot& slot) { return slot.room; });
}

TEST(PacedTick, QuietSlotsSleepTheWholeTick) {
  auto s = slots({256u << 10, 2560u << 10});
  EXPECT_EQ(tick(s, 8, 8.0), 8);
  s[0]->came = 1u << 20;
  EXPECT_EQ(tick(s, 8, 0.0), 8) << "no time measured yet: nothing to pace";
}

TEST(PacedTick, AFastSlotShortensItToTheTimeItsRoomFills) {
  // 256 KiB of room, 64 KiB in 1 ms: full in 4 ms.
  auto s = slots({2560u << 10, 256u << 10});
  s[1]->came = 64u << 10;
  EXPECT_EQ(tick(s, 8, 1.0), 4);
  // The same pace into 2.5 MiB of room takes 40 ms: the tick stays whole.
  s[0]->came = 64u << 10;
  EXPECT_EQ(tick(s, 8, 1.0), 8);
  // The pace is bytes per elapsed time: 64 KiB over 2 ms fills 256 KiB in 8 ms.
  s[1]->came = 64u << 10;
  EXPECT_EQ(tick(s, 10, 2.0), 8);
}

TEST(PacedTick, TheFastestSlotDecidesAndEachSlotIsAskedOnce) {
  auto s = slots({256u << 10, 256u << 10, 256u << 10});
  s[0]->came = 32u << 10;   // full in 8 ms
  s[1]->came = 128u << 10;  // in 2 ms
  s[2]->came = 64u << 10;   // in 4 ms
  EXPECT_EQ(tick(s, 10, 1.0), 2);
  for (const auto& slot : s) EXPECT_EQ(slot->asked, 1);
  EXPECT_EQ(tick(s, 10, 1.0), 10) << "the marks moved on: nothing came since";
}

TEST(PacedTick, NeverUnderOneMillisecond) {
  auto s = slots({16u << 10});
  s[0]->came = 1u << 20;  // 16 KiB of room fills in under 16 us
  EXPECT_EQ(tick(s, 8, 1.0), 1);
}

}  // namespace
}  // namespace backscroll::testing
