// The durable form of a recording (engine/recorder/durable_recording.hpp): every record reads
// back to what was written; a recording rebuilt from its records answers every query as the
// original did, and numbers on after them; a damaged or unknown record is skipped, counted.
#include "engine/recorder/durable_recording.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

namespace backscroll::recorder {
namespace {

// The records an engine would write for this recording's history, and the recording itself.
struct Written {
  Recording recording{TrackLimits{}};
  std::vector<std::string> records;

  void fresh(std::uint64_t at, std::uint16_t cols, std::uint16_t rows) {
    records.push_back(encode(recording.keyframes.add_fresh(Cursor{at}, cols, rows, 1000)));
  }
  void keyframe(std::uint64_t at, std::string snapshot) {
    const Keyframe k{
        Cursor{at}, recording.keyframes.stretch(), 80, 24, recording.keyframes.next_size_seq() - 1,
        2000,       std::move(snapshot),           7};
    records.push_back(encode(k));
    recording.keyframes.add(k);
  }
  void resize(std::uint64_t at, std::uint16_t cols, std::uint16_t rows) {
    records.push_back(encode(recording.keyframes.add_size_change(Cursor{at}, cols, rows)));
  }
  void event(EventKind kind, std::uint64_t at, control::Json fields = control::Json::object()) {
    const auto e = recording.events.record(kind, Cursor{at}, 3000 + static_cast<std::int64_t>(at),
                                           std::move(fields));
    if (e) records.push_back(encode(*e));
  }
  void time(std::int64_t ms, std::uint64_t at) {
    if (const auto done = recording.times.note(ms, Cursor{at})) records.push_back(encode(*done));
  }
};

Written a_session() {
  Written w;
  w.fresh(0, 80, 24);
  w.event(EventKind::spawn, 0, {{"argv", {"bash", "-l"}}, {"cwd", "/tmp"}});
  w.time(1'000, 10);
  w.event(EventKind::title, 40, {{"title", "caf\xc3\xa9 \xe2\x9c\xb3 agent"}});
  w.keyframe(100, std::string("\x1b[H\x1b[2Jhello\0\xff binary", 21));  // a NUL inside
  w.time(1'500, 150);
  w.time(2'100, 220);  // finishes second 1
  w.resize(200, 100, 30);
  w.event(EventKind::resize, 200, {{"cols", 100}, {"rows", 30}});
  w.keyframe(300, "after the resize");
  w.event(EventKind::command_end, 310, {{"exit_status", nullptr}});
  w.event(EventKind::seal, 400, {{"session", 1}});
  w.fresh(400, 100, 30);
  w.keyframe(450, "next session");
  w.time(3'000, 460);
  return w;
}

std::vector<TrackEvent> all_events(const Recording& r) {
  return r.events.query(EventQuery{}).events;
}

void expect_same_events(const Recording& a, const Recording& b) {
  const auto x = all_events(a), y = all_events(b);
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].to_json("a"), y[i].to_json("a")) << i;
  }
}

TEST(DurableRecording, ARecordingReadBackAnswersEveryQueryAsTheOriginal) {
  const Written w = a_session();
  Recording back{TrackLimits{}};
  const LoadReport report = load(back, w.records, Cursor{0});
  EXPECT_EQ(report.records, w.records.size());
  EXPECT_EQ(report.unreadable, 0u);
  expect_same_events(w.recording, back);
  EXPECT_EQ(back.events.last_seq(), w.recording.events.last_seq());
  for (std::uint64_t at : {0u, 99u, 100u, 250u, 300u, 400u, 420u, 500u}) {
    for (const bool before_fresh : {false, true}) {
      const Keyframe* x = w.recording.keyframes.at_or_before(Cursor{at}, before_fresh);
      const Keyframe* y = back.keyframes.at_or_before(Cursor{at}, before_fresh);
      ASSERT_EQ(x == nullptr, y == nullptr) << at;
      if (!x) continue;
      EXPECT_EQ(y->cursor, x->cursor);
      EXPECT_EQ(y->stretch, x->stretch);
      EXPECT_EQ(y->snapshot, x->snapshot);
      EXPECT_EQ(y->sizes_applied, x->sizes_applied);
      EXPECT_EQ(y->history_lines, x->history_lines);
      EXPECT_EQ(y->cols, x->cols);
      EXPECT_EQ(back.keyframes.size_changes(*y, Cursor{at}, before_fresh).size(),
                w.recording.keyframes.size_changes(*x, Cursor{at}, before_fresh).size());
    }
  }
  // Time samples: the finished seconds were written.
  EXPECT_EQ(back.times.cursor_at(1'999), Cursor{150});
  EXPECT_EQ(back.times.cursor_at(2'500), Cursor{220});
  EXPECT_FALSE(back.times.cursor_at(999));
}

TEST(DurableRecording, NumberingGoesOnAfterWhatWasReadBack) {
  const Written w = a_session();
  Recording back{TrackLimits{}};
  load(back, w.records, Cursor{0});
  EXPECT_EQ(back.keyframes.stretch(), w.recording.keyframes.stretch());
  EXPECT_EQ(back.keyframes.next_size_seq(), w.recording.keyframes.next_size_seq());
  const Keyframe next = back.keyframes.add_fresh(Cursor{500}, 80, 24, 0);
  EXPECT_EQ(next.stretch, w.recording.keyframes.stretch() + 1);
  const auto e = back.events.record(EventKind::bell, Cursor{500}, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->seq, w.recording.events.last_seq() + 1);
}

TEST(DurableRecording, KeyframesBelowTheOldestRetainedByteAreDropped) {
  const Written w = a_session();
  Recording back{TrackLimits{}};
  load(back, w.records, Cursor{250});
  ASSERT_NE(back.keyframes.oldest(), nullptr);
  EXPECT_EQ(back.keyframes.oldest()->cursor, Cursor{300});
  EXPECT_EQ(back.keyframes.at_or_before(Cursor{299}), nullptr);
}

TEST(DurableRecording, UnreadableRecordsAreSkippedAndCounted) {
  Written w = a_session();
  std::vector<std::string> records = w.records;
  records.insert(records.begin() + 2, std::string("\x09unknown type", 13));
  records.insert(records.begin() + 4, std::string());
  records.insert(records.begin() + 6, encode(SizeChange{3, Cursor{5}, 80, 24}).substr(0, 9));
  std::string bad_json = encode(TrackEvent{99, Cursor{5}, 0, EventKind::bell, {}});
  bad_json.back() = '{';
  records.push_back(bad_json);
  Recording back{TrackLimits{}};
  const LoadReport report = load(back, records, Cursor{0});
  EXPECT_EQ(report.unreadable, 4u);
  EXPECT_EQ(report.records, w.records.size());
  expect_same_events(w.recording, back);
}

TEST(DurableRecording, RecordsRepeatedByDamageAreNotKeptTwice) {
  // A block copied over another (a misplaced write) can repeat whole records, each intact.
  const Written w = a_session();
  std::vector<std::string> records;
  for (const std::string& r : w.records) {
    records.push_back(r);
    records.push_back(r);
  }
  records.insert(records.end(), w.records.begin(), w.records.end());
  Recording back{TrackLimits{}};
  load(back, records, Cursor{0});
  expect_same_events(w.recording, back);
  EXPECT_EQ(back.keyframes.size(), w.recording.keyframes.size());
  EXPECT_EQ(back.keyframes.next_size_seq(), w.recording.keyframes.next_size_seq());
}

RC_GTEST_PROP(DurableRecordingProperty, AnyPrefixOrTruncationOfAnyRecordNeverMisreads, ()) {
  // Cut a record anywhere: it is either unreadable or (a keyframe cut inside its snapshot)
  // a keyframe with fewer snapshot bytes; never a crash, never another kind.
  const Written w = a_session();
  const auto i = *rc::gen::inRange<std::size_t>(0, w.records.size());
  const std::string& r = w.records[i];
  const auto cut = *rc::gen::inRange<std::size_t>(0, r.size());
  Recording back{TrackLimits{}};
  const LoadReport report = load(back, std::vector<std::string>{r.substr(0, cut)}, Cursor{0});
  RC_ASSERT(report.records + report.unreadable == 1u);
}

}  // namespace
}  // namespace backscroll::recorder
