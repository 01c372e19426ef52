// SessionCache: the completed-session cache (docs/transcripts.md, "Stopped actors").
// - Each actor keeps at most per_actor bytes, the newest of its stream; all actors at most total.
// - What it serves is exactly the stream at those cursors; a tail that continues the held one
//   extends it, one that does not replaces it.
// - Least recently used first out: an evicted actor was used (put or hit) before every actor
//   that stays; the actor just put always stays.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <string>

#include "engine/store/session_cache.hpp"

namespace backscroll::testing {
namespace {

using store::SessionCache;

// The byte every actor's stream has at `cursor` (a function: any served range is checkable).
char stream_byte(int actor, std::uint64_t cursor) {
  return static_cast<char>('a' + (cursor * 7 + static_cast<std::uint64_t>(actor) * 13) % 26);
}
std::string stream(int actor, std::uint64_t from, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = stream_byte(actor, from + i);
  return s;
}

TEST(SessionCache, KeepsTheNewestBytesAndExtendsAContinuedTail) {
  SessionCache cache(100, 1000);
  cache.put("a", Cursor{0}, stream(0, 0, 60));
  cache.put("a", Cursor{60}, stream(0, 60, 60));  // continues: 120 bytes, the last 100 kept
  EXPECT_EQ(cache.range("a"), (std::pair{Cursor{20}, Cursor{120}}));
  EXPECT_EQ(cache.get("a", Cursor{20}, Cursor{1000}, 1000), stream(0, 20, 100));
  EXPECT_EQ(cache.get("a", Cursor{50}, Cursor{70}, 1000), stream(0, 50, 20));
  EXPECT_EQ(cache.get("a", Cursor{50}, Cursor{1000}, 5), stream(0, 50, 5));
  EXPECT_FALSE(cache.get("a", Cursor{19}, Cursor{1000}, 1000)) << "evicted bytes are not served";
  EXPECT_FALSE(cache.get("a", Cursor{120}, Cursor{1000}, 1000)) << "nothing past the tail";
  cache.put("a", Cursor{500}, stream(0, 500, 10));  // a gap (a clear): replaced
  EXPECT_EQ(cache.range("a"), (std::pair{Cursor{500}, Cursor{510}}));
  EXPECT_EQ(cache.bytes(), 10u);
  cache.erase("a");
  EXPECT_FALSE(cache.range("a"));
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(SessionCache, TheLeastRecentlyUsedGoFirst) {
  SessionCache cache(100, 250);
  cache.put("a", Cursor{0}, stream(0, 0, 100));
  cache.put("b", Cursor{0}, stream(1, 0, 100));
  EXPECT_TRUE(cache.get("a", Cursor{0}, Cursor{10}, 10));  // a is now the most recent
  cache.put("c", Cursor{0}, stream(2, 0, 100));            // 300 > 250: b goes
  EXPECT_EQ(cache.order(), (std::vector<std::string>{"a", "c"}));
  EXPECT_FALSE(cache.range("b"));
  EXPECT_EQ(cache.bytes(), 200u);
}

RC_GTEST_PROP(SessionCache, BoundsContentAndLruOrderHold, ()) {
  const auto per_actor = *rc::gen::inRange<std::size_t>(1, 400);
  const auto total = *rc::gen::inRange<std::size_t>(per_actor, 2000);
  SessionCache cache(per_actor, total);
  std::map<int, std::uint64_t> next;  // each actor's next cursor
  std::map<int, std::uint64_t> used;  // when each actor was last put or hit
  std::uint64_t clock = 0;
  const auto steps = *rc::gen::inRange(1, 200);
  for (int step = 0; step < steps; ++step) {
    const int actor = *rc::gen::inRange(0, 8);
    const std::string name = "actor" + std::to_string(actor);
    ++clock;
    if (*rc::gen::inRange(0, 3) > 0) {
      std::uint64_t& at = next[actor];
      if (*rc::gen::inRange(0, 5) == 0) at += *rc::gen::inRange<std::uint64_t>(1, 500);  // gap
      const auto n = *rc::gen::inRange<std::size_t>(0, 600);
      std::map<std::string, std::uint64_t> before;
      for (const auto& s : cache.order()) before[s] = 0;
      cache.put(name, Cursor{at}, stream(actor, at, n));
      at += n;
      used[actor] = clock;
      // The actor just put stays, holding its newest bytes.
      const auto range = cache.range(name);
      RC_ASSERT(range.has_value());
      RC_ASSERT(range->second == Cursor{at});
      // Evicted: used before every actor that stays (other than the one just put).
      for (const auto& [gone, unused] : before) {
        if (cache.range(gone)) continue;
        const int g = std::stoi(gone.substr(5));
        for (const auto& kept : cache.order()) {
          const int k = std::stoi(kept.substr(5));
          if (k != actor) RC_ASSERT(used[g] < used[k]);
        }
      }
    } else {
      const auto range = cache.range(name);
      if (!range) continue;
      const std::uint64_t from = value(range->first) + *rc::gen::inRange<std::uint64_t>(
                                                           0, range->second - range->first + 1);
      const auto got = cache.get(name, Cursor{from}, Cursor{from + 300}, 1000);
      if (Cursor{from} == range->second) {
        RC_ASSERT(!got.has_value());
        continue;
      }
      RC_ASSERT(got.has_value());
      RC_ASSERT(*got == stream(actor, from, got->size()));
      RC_ASSERT(got->size() == std::min<std::uint64_t>(300, value(range->second) - from));
      used[actor] = clock;
    }
    std::size_t sum = 0;
    for (const auto& s : cache.order()) {
      const auto r = cache.range(s);
      RC_ASSERT(r->second - r->first <= per_actor);
      sum += r->second - r->first;
    }
    RC_ASSERT(sum == cache.bytes());
    RC_ASSERT(cache.bytes() <= total);
  }
}

}  // namespace
}  // namespace backscroll::testing
