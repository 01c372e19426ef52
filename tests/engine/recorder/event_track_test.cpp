// EventTrack (docs/recorder.md, "The event track"): events come out in stream order whatever
// order they were recorded in (a title the mirror reports late lands before the resize the io
// thread recorded at a later cursor, and before the io thread's event at its own cursor), each
// group keeps its own bound, a clear drops what came before its floor, and queries page through
// events that share a cursor without losing or repeating one.
#include "engine/recorder/event_track.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace backscroll::recorder {
namespace {

using control::Json;

std::vector<std::string> kinds_of(const EventPage& page) {
  std::vector<std::string> out;
  for (const TrackEvent& e : page.events) out.emplace_back(to_string(e.kind));
  return out;
}

std::vector<std::uint64_t> cursors_of(const EventPage& page) {
  std::vector<std::uint64_t> out;
  for (const TrackEvent& e : page.events) out.push_back(value(e.cursor));
  return out;
}

TEST(EventTrack, KindsHaveStableNamesThatParseBack) {
  for (std::size_t i = 0; i < kEventKinds; ++i) {
    const auto kind = static_cast<EventKind>(i);
    EXPECT_EQ(parse_event_kind(to_string(kind)), kind) << to_string(kind);
  }
  EXPECT_EQ(to_string(EventKind::command_end), "command_end");
  EXPECT_FALSE(parse_event_kind("Title"));
  EXPECT_FALSE(parse_event_kind(""));
}

TEST(EventTrack, ALateStreamEventLandsInStreamOrder) {
  EventTrack track;
  track.record(EventKind::spawn, Cursor{0}, 1000);
  track.record(EventKind::resize, Cursor{500}, 1003);
  // The mirror read a title ending at 300 and a bell ending at 500, reported after the resize.
  track.record(EventKind::title, Cursor{300}, 1002, {{"title", "t"}});
  track.record(EventKind::bell, Cursor{500}, 1004, {{"count", 1}});
  const EventPage page = track.query({});
  EXPECT_EQ(kinds_of(page), (std::vector<std::string>{"spawn", "title", "bell", "resize"}));
  EXPECT_EQ(cursors_of(page), (std::vector<std::uint64_t>{0, 300, 500, 500}));
  EXPECT_FALSE(page.more);
  // Seqs are the recording order, not the stream order.
  EXPECT_EQ(page.events[1].seq, 3u);
  EXPECT_EQ(page.events[3].seq, 2u);
  EXPECT_EQ(track.last_seq(), 4u);
}

TEST(EventTrack, TheJsonFormCarriesTheCommonFieldsAndTheKindsOwn) {
  EventTrack track;
  const TrackEvent e =
      *track.record(EventKind::command_end, Cursor{42}, 1764686587123, {{"exit_status", 2}});
  const Json j = e.to_json("agent");
  EXPECT_EQ(j, (Json{{"actor", "agent"},
                     {"seq", 1},
                     {"kind", "command_end"},
                     {"cursor", 42},
                     {"time_ms", 1764686587123},
                     {"exit_status", 2}}));
}

TEST(EventTrack, ASpinningTitleNeverPushesOutASpawnOrAnExit) {
  EventTrack track(TrackLimits{.events = 8, .minor_events = 4});
  track.record(EventKind::spawn, Cursor{0}, 0);
  for (std::uint64_t i = 1; i <= 100; ++i) {
    track.record(EventKind::title, Cursor{i * 10}, 0, {{"title", std::to_string(i)}});
  }
  track.record(EventKind::exit, Cursor{2000}, 0);
  const EventPage page = track.query({});
  EXPECT_EQ(kinds_of(page),
            (std::vector<std::string>{"spawn", "title", "title", "title", "title", "exit"}));
  EXPECT_EQ(page.events[1].fields.at("title"), "97");  // the newest four titles
  EXPECT_EQ(track.evicted(), 96u);
  EXPECT_EQ(track.size(), 6u);
}

TEST(EventTrack, AFullGroupDropsItsOldestAndNeverKeepsAnEventOlderThanAllItHolds) {
  EventTrack track(TrackLimits{.events = 3, .minor_events = 3});
  for (std::uint64_t c : {10, 20, 30, 40}) track.record(EventKind::resize, Cursor{c}, 0);
  EXPECT_EQ(cursors_of(track.query({})), (std::vector<std::uint64_t>{20, 30, 40}));
  const TrackEvent late = *track.record(EventKind::prompt, Cursor{5}, 0);
  EXPECT_EQ(late.seq, 5u);  // numbered, sent live, but older than everything kept
  EXPECT_EQ(cursors_of(track.query({})), (std::vector<std::uint64_t>{20, 30, 40}));
  EXPECT_EQ(track.evicted(), 2u);
}

TEST(EventTrack, AClearDropsTheEventsReadFromTheBytesItCleared) {
  EventTrack track;
  track.record(EventKind::spawn, Cursor{0}, 0);
  track.record(EventKind::title, Cursor{10}, 0, {{"title", "secret"}});
  track.record(EventKind::bell, Cursor{30}, 0);  // its BEL is the byte before 30: cleared
  track.record(EventKind::exit, Cursor{30}, 0);  // the io thread's, at the floor: kept
  track.record(EventKind::prompt, Cursor{40}, 0);
  track.discard_below(Cursor{30});
  track.record(EventKind::clear, Cursor{30}, 0);
  // The mirror read a title before the clear and reports it after: it stays out.
  EXPECT_FALSE(track.record(EventKind::title, Cursor{20}, 0, {{"title", "late"}}));
  EXPECT_FALSE(track.record(EventKind::title, Cursor{30}, 0, {{"title", "late too"}}));
  EXPECT_EQ(kinds_of(track.query({})), (std::vector<std::string>{"exit", "clear", "prompt"}));
  EXPECT_EQ(track.evicted(), 0u);  // a clear is not the bound at work
}

TEST(EventTrack, QueriesFilterByCursorTimeAndKind) {
  EventTrack track;
  track.record(EventKind::spawn, Cursor{0}, 100);
  track.record(EventKind::title, Cursor{10}, 200, {{"title", "a"}});
  track.record(EventKind::prompt, Cursor{20}, 300);
  track.record(EventKind::title, Cursor{30}, 400, {{"title", "b"}});
  track.record(EventKind::exit, Cursor{40}, 500);
  EXPECT_EQ(cursors_of(track.query({.from = Cursor{10}, .to = Cursor{40}})),
            (std::vector<std::uint64_t>{10, 20, 30}));
  EXPECT_EQ(cursors_of(track.query({.since_ms = 300})), (std::vector<std::uint64_t>{20, 30, 40}));
  EXPECT_EQ(cursors_of(track.query({.kinds = mask_of(EventKind::title)})),
            (std::vector<std::uint64_t>{10, 30}));
  const EventPage first = track.query({.limit = 2});
  EXPECT_EQ(cursors_of(first), (std::vector<std::uint64_t>{0, 10}));
  EXPECT_TRUE(first.more);
  EXPECT_FALSE(track.query({.limit = 5}).more);
}

TEST(EventTrack, NthCountsFromTheOldestOrBackFromTheNewest) {
  EventTrack track;
  for (std::uint64_t c : {10, 20, 30}) track.record(EventKind::prompt, Cursor{c}, 0);
  track.record(EventKind::title, Cursor{25}, 0);
  EXPECT_EQ(track.nth(EventKind::prompt, 0)->cursor, Cursor{10});
  EXPECT_EQ(track.nth(EventKind::prompt, -1)->cursor, Cursor{30});
  EXPECT_EQ(track.nth(EventKind::prompt, -3)->cursor, Cursor{10});
  EXPECT_FALSE(track.nth(EventKind::prompt, -4));
  EXPECT_FALSE(track.nth(EventKind::prompt, 3));
  EXPECT_EQ(track.nth(EventKind::title, -1)->cursor, Cursor{25});
  EXPECT_FALSE(track.nth(EventKind::exit, -1));
}

// Paging as the CLI does (from = the last page's last cursor, skip = the events already taken
// at that cursor) returns every event once, in order, whatever the page size and however many
// events share a cursor.
RC_GTEST_PROP(EventTrackPaging, PagesReturnEveryEventOnceInOrder, ()) {
  EventTrack track(TrackLimits{.events = 100'000, .minor_events = 100'000});
  const auto n = *rc::gen::inRange<std::size_t>(0, 60);
  for (std::size_t i = 0; i < n; ++i) {
    const auto cursor = *rc::gen::inRange<std::uint64_t>(0, 8);  // many ties
    const auto kind = static_cast<EventKind>(*rc::gen::inRange<std::size_t>(0, kEventKinds));
    track.record(kind, Cursor{cursor}, 0);
  }
  const auto limit = *rc::gen::inRange<std::size_t>(1, 7);
  const std::vector<TrackEvent> all = track.query({.limit = 1000}).events;
  RC_ASSERT(all.size() == n);
  RC_ASSERT(std::is_sorted(all.begin(), all.end(),
                           [](const TrackEvent& a, const TrackEvent& b) { return a.before(b); }));

  std::vector<std::uint64_t> paged;
  EventQuery q{.limit = limit};
  for (std::size_t pages = 0; pages <= n + 1; ++pages) {
    const EventPage page = track.query(q);
    for (const TrackEvent& e : page.events) paged.push_back(e.seq);
    if (!page.more) break;
    const Cursor last = page.events.back().cursor;
    const auto at_last = static_cast<std::size_t>(
        std::count_if(page.events.begin(), page.events.end(),
                      [last](const TrackEvent& e) { return e.cursor == last; }));
    q.skip = (q.from == last ? q.skip : 0) + at_last;
    q.from = last;
  }
  std::vector<std::uint64_t> expected;
  for (const TrackEvent& e : all) expected.push_back(e.seq);
  RC_ASSERT(paged == expected);
}

}  // namespace
}  // namespace backscroll::recorder
