// screen_at (docs/recorder.md, "The screen at any cursor"): the screen rebuilt from the newest
// keyframe at or before a cursor plus the bytes after it is the screen a mirror fed every byte up
// to that cursor shows (term::first_difference: cells, cursor, pen, modes, title, the history
// lines the answer draws), across resizes and keyframes of every kind; over recordings of real
// programs and random streams, at random cursors. The mirror itself is checked against libvterm
// and xterm.js elsewhere (tests/engine/term): here the replay must add no difference of its own.
#include "engine/recorder/screen_at.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/recorder/keyframe_store.hpp"
#include "engine/term/mirror_compare.hpp"
#include "engine/term/mirror_screen.hpp"
#include "tests/corpus/recordings.hpp"

namespace backscroll::recorder {
namespace {

struct Stream {
  std::string bytes;
  std::uint16_t cols = 80;
  std::uint16_t rows = 24;
  std::vector<SizeChange> resizes{};  // in cursor order
};

// A mirror fed `stream` up to `end`, resized at each change's cursor, as the mirror thread does.
// `keyframe_every`: with a store, a keyframe is kept each time that many bytes were fed since
// the last one (when the mirror can take one, as the mirror thread tries).
std::unique_ptr<term::Mirror> live(const Stream& stream, std::uint64_t end,
                                   KeyframeStore* store = nullptr, std::uint64_t keyframe_every = 0,
                                   std::uint64_t chunk = 997) {
  auto owned = std::make_unique<term::Mirror>(Cursor{0}, stream.cols, stream.rows);
  term::Mirror& mirror = *owned;
  if (store) store->add_fresh(Cursor{0}, stream.cols, stream.rows, 0);
  std::uint64_t resized = 0;  // the mirror thread's count (Keyframe::sizes_applied)
  std::uint64_t at = 0;
  std::uint64_t last_keyframe = 0;
  std::size_t next = 0;
  const auto take_keyframe = [&] {
    term::SnapshotOptions options;
    options.scrollback_lines = kKeyframeHistoryLines;
    term::MirrorSnapshot taken = mirror.snapshot(options);
    if (taken.snapshot.fallback_reason) return;
    store->add(Keyframe{taken.cursor, 0, static_cast<std::uint16_t>(taken.snapshot.cols),
                        static_cast<std::uint16_t>(taken.snapshot.rows), resized, 0,
                        std::move(taken.snapshot.bytes), taken.snapshot.scrollback_lines});
    last_keyframe = at;
  };
  while (at < end || (next < stream.resizes.size() && stream.resizes[next].cursor <= Cursor{end})) {
    while (next < stream.resizes.size() && stream.resizes[next].cursor <= Cursor{at}) {
      const SizeChange& change = stream.resizes[next];
      mirror.resize(change.cols, change.rows);
      ++resized;
      if (store) store->add_size_change(change.cursor, change.cols, change.rows);
      ++next;
      // As the mirror thread: a keyframe at once after a resize, when it can take one.
      if (store && keyframe_every > 0 &&
          (next == stream.resizes.size() || stream.resizes[next].cursor > Cursor{at})) {
        take_keyframe();
      }
    }
    if (at >= end) break;
    std::uint64_t upto = std::min(end, at + chunk);
    if (next < stream.resizes.size()) upto = std::min(upto, value(stream.resizes[next].cursor));
    mirror.feed(std::string_view(stream.bytes).substr(at, upto - at));
    at = upto;
    if (store && keyframe_every > 0 && at - last_keyframe >= keyframe_every) take_keyframe();
  }
  return owned;
}

// "" when the screen rebuilt at `target` is the live mirror's there, else the difference.
std::string check_at(const Stream& stream, const KeyframeStore& store, std::uint64_t target) {
  const Keyframe* keyframe = store.at_or_before(Cursor{target});
  if (!keyframe) return "no keyframe at or before " + std::to_string(target);
  const std::vector<SizeChange> changes = store.size_changes(*keyframe, Cursor{target});
  term::SnapshotOptions options;
  options.scrollback_lines = 300;
  const std::string_view bytes =
      std::string_view(stream.bytes)
          .substr(value(keyframe->cursor), target - value(keyframe->cursor));
  const term::MirrorSnapshot got = screen_at({keyframe, bytes, changes, options, {}});
  if (got.cursor > Cursor{target}) return "tagged past the target";
  if (got.snapshot.fallback_reason == "widened_since_keyframe") {
    // Declared (screen_at.hpp): only across a change wider than a keyframe with history.
    const bool widened = std::any_of(changes.begin(), changes.end(),
                                     [&](const SizeChange& c) { return c.cols > keyframe->cols; });
    if (std::getenv("BACKSCROLL_SCREEN_AT_FALLBACKS")) std::fprintf(stderr, "widened\n");
    return widened && keyframe->history_lines > 0 ? "" : "widened_since_keyframe without cause";
  }
  if (got.snapshot.fallback_reason) {
    // As the live mirror at the same point would.
    const term::MirrorSnapshot own = live(stream, target, nullptr, 0, 4093)->snapshot(options);
    if (own.snapshot.fallback_reason == got.snapshot.fallback_reason) return "";
    return "fell back (" + *got.snapshot.fallback_reason + ") where the live mirror does not (" +
           own.snapshot.fallback_reason.value_or("none") + ")";
  }
  // The reference: every byte up to where the answer is tagged.
  const auto reference = live(stream, value(got.cursor), nullptr, 0, 4093);
  term::Mirror replayed(Cursor{0}, static_cast<std::uint16_t>(got.snapshot.cols),
                        static_cast<std::uint16_t>(got.snapshot.rows));
  replayed.feed(got.snapshot.bytes);
  term::CompareOptions compare;
  compare.history_lines = got.snapshot.scrollback_lines;
  // Titles pushed with CSI 22 t are in no snapshot (docs/snapshot.md): a pop may differ.
  compare.titles = stream.bytes.find("\x1b[22") == std::string::npos;
  const std::string diff = term::first_difference(*reference, replayed, compare);
  if (!diff.empty()) {
    return "at " + std::to_string(target) + " from keyframe " +
           std::to_string(value(keyframe->cursor)) + ": " + diff;
  }
  return "";
}

TEST(ScreenAt, AtAKeyframeItIsTheKeyframe) {
  Stream s{"hello\r\n\x1b[1;31mred\x1b[m world\x1b[3;5H"};
  KeyframeStore store;
  live(s, s.bytes.size(), &store, 4);
  ASSERT_GE(store.size(), 2u);
  const Keyframe* k = store.newest();
  EXPECT_EQ(check_at(s, store, value(k->cursor)), "");
  EXPECT_EQ(check_at(s, store, 0), "");  // the fresh terminal
}

TEST(ScreenAt, ResizesAfterTheKeyframeAreAppliedWhereTheyHappened) {
  Stream s;
  for (int i = 0; i < 60; ++i) s.bytes += "line " + std::to_string(i) + " of a long text\r\n";
  s.resizes = {{1, Cursor{300}, 40, 10}, {2, Cursor{700}, 100, 30}, {3, Cursor{700}, 20, 5}};
  KeyframeStore store;
  live(s, s.bytes.size(), &store, 0);  // the fresh keyframe at 0 only
  for (std::uint64_t at : {299u, 300u, 301u, 699u, 700u, 900u}) {
    EXPECT_EQ(check_at(s, store, at), "") << at;
  }
  const term::MirrorSnapshot end = screen_at({store.at_or_before(Cursor{900}),
                                              std::string_view(s.bytes).substr(0, 900),
                                              store.size_changes(*store.oldest(), Cursor{900}),
                                              {},
                                              {}});
  EXPECT_EQ(end.snapshot.cols, 20);
  EXPECT_EQ(end.snapshot.rows, 5);
}

TEST(ScreenAt, ACursorInsideASequenceIsAnsweredAtTheCleanCursorBeforeIt) {
  Stream s{"abc\x1b[31mdef\x1b[1;2H"};
  KeyframeStore store;
  live(s, s.bytes.size(), &store, 0);
  const term::MirrorSnapshot got =
      screen_at({store.oldest(), std::string_view(s.bytes).substr(0, 5), {}, {}, {}});
  EXPECT_EQ(got.cursor, Cursor{3});  // "abc", then ESC [ unfinished
  EXPECT_FALSE(got.snapshot.fallback_reason);
}

TEST(ScreenAt, RecordingsOfRealProgramsAtManyCursorsAndKeyframeSpacings) {
  for (const std::string_view name : testing::kRecordings) {
    Stream s{testing::read_recording(name)};
    ASSERT_FALSE(s.bytes.empty()) << name;
    const std::uint64_t n = s.bytes.size();
    s.resizes = {{1, Cursor{n / 3}, 100, 30}, {2, Cursor{2 * n / 3}, 80, 24}};
    for (std::uint64_t spacing : {0u, 701u, 4096u}) {
      KeyframeStore store;
      live(s, n, &store, spacing);
      for (std::uint64_t i = 0; i <= 24; ++i) {
        const std::uint64_t at = n * i / 24;
        ASSERT_EQ(check_at(s, store, at), "") << name << " spacing " << spacing;
      }
    }
  }
}

// Pieces of a random stream: text that wraps and scrolls, colours, cursor moves, erasures,
// scroll regions, the alternate screen, titles, wide and combining characters.
rc::Gen<std::string> piece() {
  using rc::gen::element;
  using rc::gen::inRange;
  return rc::gen::exec([]() -> std::string {
    const auto n = [](int lo, int hi) { return *inRange(lo, hi + 1); };
    switch (*inRange(0, 9)) {
      case 0:
        return std::string(static_cast<std::size_t>(n(1, 120)), static_cast<char>('a' + n(0, 25)));
      case 1:
        return *element<std::string>("\r\n", "\n", "\r", "\b", "\t", "\x1bM",
                                     "\x1b"
                                     "7",
                                     "\x1b"
                                     "8");
      case 2: return "\x1b[" + std::to_string(n(1, 30)) + ";" + std::to_string(n(1, 90)) + "H";
      case 3: return "\x1b[" + std::to_string(n(0, 3)) + *element<std::string>("J", "K");
      case 4:
        return *element<std::string>("\x1b[1;31m", "\x1b[m", "\x1b[38;5;200m", "\x1b[48;2;1;2;3m",
                                     "\x1b[7m", "\x1b[38:2::9:8:7m");
      case 5: return "\x1b[" + std::to_string(n(1, 10)) + ";" + std::to_string(n(11, 24)) + "r";
      case 6: return *element<std::string>("\x1b[?1049h", "\x1b[?1049l", "\x1b[?25l", "\x1b[?25h");
      case 7: return "\x1b]2;title " + std::to_string(n(0, 99)) + "\x07";
      case 8:
        return *element<std::string>("\xe7\x95\x8c", "e\xcc\x81", "\xf0\x9f\x98\x80", "\xc3\xa9");
      default:
        return "\x1b[" + std::to_string(n(1, 5)) +
               *element<std::string>("L", "M", "@", "P", "S", "T");
    }
  });
}

RC_GTEST_PROP(ScreenAtProperty, EqualsTheMirrorFedEveryByteUpToTheCursor, ()) {
  Stream s;
  const auto pieces = *rc::gen::container<std::vector<std::string>>(piece());
  for (const std::string& p : pieces) s.bytes += p;
  const std::uint64_t n = s.bytes.size();
  const auto changes = *rc::gen::inRange(0, 4);
  std::vector<std::uint64_t> at;
  for (int i = 0; i < changes; ++i) at.push_back(*rc::gen::inRange<std::uint64_t>(0, n + 1));
  std::sort(at.begin(), at.end());
  for (std::uint64_t c : at) {
    s.resizes.push_back({0, Cursor{c}, static_cast<std::uint16_t>(*rc::gen::inRange(10, 120)),
                         static_cast<std::uint16_t>(*rc::gen::inRange(3, 40))});
  }
  KeyframeStore store;
  live(s, n, &store, *rc::gen::inRange<std::uint64_t>(0, 2000),
       *rc::gen::inRange<std::uint64_t>(1, 700));
  // Cursors the store can still answer (the oldest keyframes go past its bound).
  const std::uint64_t oldest = value(store.oldest()->cursor);
  for (int i = 0; i < 4; ++i) {
    const auto target = *rc::gen::inRange<std::uint64_t>(oldest, n + 1);
    const std::string diff = check_at(s, store, target);
    RC_ASSERT(diff == "");
  }
}

// Feeds `mirror` (at cursor `from`) the rest of the stream, with the resizes after `from` where
// they happened: a restored actor going on.
void feed_rest(term::Mirror& mirror, const Stream& s, std::uint64_t from) {
  std::uint64_t at = from;
  for (const SizeChange& c : s.resizes) {
    if (c.cursor <= Cursor{from}) continue;
    mirror.feed(std::string_view(s.bytes).substr(at, value(c.cursor) - at));
    mirror.resize(c.cols, c.rows);
    at = value(c.cursor);
  }
  mirror.feed(std::string_view(s.bytes).substr(at));
}

// Cold restore (screen_at.hpp, resume): a mirror rebuilt from a keyframe and the bytes after it,
// continuing at a clean cursor and then fed the rest of the stream, is the mirror fed every byte.
RC_GTEST_PROP(ScreenAtProperty, AResumedMirrorGoesOnAsTheMirrorFedEveryByte, ()) {
  Stream s;
  std::vector<std::uint64_t> clean{0};  // the pieces' boundaries
  for (const std::string& p : *rc::gen::container<std::vector<std::string>>(piece())) {
    s.bytes += p;
    clean.push_back(s.bytes.size());
  }
  const std::uint64_t n = s.bytes.size();
  for (int i = *rc::gen::inRange(0, 4); i > 0; --i) {
    s.resizes.push_back({0, Cursor{*rc::gen::inRange<std::uint64_t>(0, n + 1)},
                         static_cast<std::uint16_t>(*rc::gen::inRange(10, 120)),
                         static_cast<std::uint16_t>(*rc::gen::inRange(3, 40))});
  }
  std::sort(s.resizes.begin(), s.resizes.end(),
            [](const SizeChange& a, const SizeChange& b) { return a.cursor < b.cursor; });
  KeyframeStore store;
  live(s, n, &store, *rc::gen::inRange<std::uint64_t>(0, 2000));
  const std::uint64_t split = *rc::gen::elementOf(clean);
  const Keyframe* keyframe = store.at_or_before(Cursor{split});
  RC_PRE(keyframe != nullptr);
  const std::vector<SizeChange> changes = store.size_changes(*keyframe, Cursor{split});
  const std::string_view bytes =
      std::string_view(s.bytes).substr(value(keyframe->cursor), split - value(keyframe->cursor));
  const std::unique_ptr<term::Mirror> resumed =
      resume({keyframe, bytes, changes, {}, {}}, Cursor{split});
  if (!resumed) {
    RC_ASSERT(widens_history(*keyframe, changes));
    return;
  }
  RC_ASSERT(resumed->position() == Cursor{split});
  feed_rest(*resumed, s, split);
  const auto reference = live(s, n, nullptr, 0, 4093);
  term::CompareOptions compare;
  compare.history_lines = kKeyframeHistoryLines;
  compare.titles = s.bytes.find("\x1b[22") == std::string::npos;
  // The resumed mirror's history lines are as wide as the keyframe drew them (a wide glyph
  // across its last column erased), the reference's as wide as they were written: a screen
  // made wider than the keyframe after the split may pull some back, the same left of the
  // keyframe's last column (docs/recorder.md, "Cold restore").
  const bool widened_after =
      keyframe->history_lines > 0 &&
      std::any_of(s.resizes.begin(), s.resizes.end(), [&](const SizeChange& c) {
        return c.cursor > Cursor{split} && c.cols > keyframe->cols;
      });
  if (widened_after) compare.columns = keyframe->cols - 1;
  RC_CLASSIFY(widened_after, "widened after the split");
  const std::string diff = term::first_difference(*reference, *resumed, compare);
  RC_ASSERT(diff == "");
  if (widened_after) {
    // From the keyframe's last column on, a screen cell differs only by being erased.
    const term::MirrorScreen& want = reference->screen();
    const term::MirrorScreen& got = resumed->screen();
    for (int r = 0; r < want.rows(); ++r) {
      for (int c = keyframe->cols - 1; c < want.cols(); ++c) {
        const term::Cell cell = got.cell(r, c);
        RC_ASSERT(cell == want.cell(r, c) || cell.kind == term::Cell::Kind::erased);
      }
    }
  }
}

// The case the property above found (a line written at 80 columns, kept in the history through
// a resize to 34, a restart from a 34-column keyframe, then a resize to 35): the same as the
// live mirror in the keyframe's columns, and the one column past them erased, as declared.
TEST(ScreenAt, AResumedMirrorWidenedPastItsKeyframeShowsHistoryAsWideAsTheKeyframe) {
  Stream s{"\x1b[1;11r\t" + std::string(27, 'a') + "\x1b[10;10H\x1b[?25h" + std::string(146, 'a') +
           "\x1b[38;5;200m"};
  s.resizes = {{0, Cursor{78}, 34, 3}, {0, Cursor{113}, 35, 11}};
  constexpr std::uint64_t kSplit = 112;
  KeyframeStore store;
  live(s, s.bytes.size(), &store, 1);
  const Keyframe* keyframe = store.at_or_before(Cursor{kSplit});
  ASSERT_NE(keyframe, nullptr);
  ASSERT_EQ(keyframe->cols, 34);
  ASSERT_GT(keyframe->history_lines, 0u);
  const std::string_view bytes =
      std::string_view(s.bytes).substr(value(keyframe->cursor), kSplit - value(keyframe->cursor));
  const std::unique_ptr<term::Mirror> resumed = resume(
      {keyframe, bytes, store.size_changes(*keyframe, Cursor{kSplit}), {}, {}}, Cursor{kSplit});
  ASSERT_TRUE(resumed);
  feed_rest(*resumed, s, kSplit);
  const auto reference = live(s, s.bytes.size());
  term::CompareOptions compare;
  compare.history_lines = kKeyframeHistoryLines;
  EXPECT_EQ(term::first_difference(*reference, *resumed, compare),
            "cell (0,34): glyph U+0061 w1 fg default bg default vs erased fg default bg default");
  compare.columns = 34;
  EXPECT_EQ(term::first_difference(*reference, *resumed, compare), "");
}

TEST(ScreenAt, AResumeThatEndsInsideASequenceShowsTheScreenBeforeIt) {
  Stream s{"abc\x1b[31mdef\x1b[1;2"};  // the stream ends inside CSI 1;2H
  KeyframeStore store;
  live(s, s.bytes.size(), &store, 0);
  const std::unique_ptr<term::Mirror> resumed =
      resume({store.oldest(), s.bytes, {}, {}, {}}, Cursor{1000});
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->position(), Cursor{1000});
  const auto before = live(s, s.bytes.size() - 5, nullptr);  // up to "def"
  EXPECT_EQ(term::first_difference(*before, *resumed, {}), "");
  const term::MirrorSnapshot taken = resumed->snapshot();
  EXPECT_FALSE(taken.snapshot.fallback_reason);
  EXPECT_EQ(taken.cursor, Cursor{1000});
}

// A crash in a flood leaves megabytes between the newest keyframe and the end: the resume
// jumps over what scrolls past a keyframe's depth of history (cheap), keeps that depth, and
// lets the history grow to the live bound afterwards.
TEST(ScreenAt, AResumeJumpsOverAFloodKeepsAKeyframesHistoryThenGrows) {
  const auto lines = [](int from, int to) {
    std::string out;
    for (int i = from; i < to; ++i) out += "flood line " + std::to_string(i) + "\r\n";
    return out;
  };
  Stream s{lines(0, 20'000)};
  KeyframeStore store;
  live(s, 0, &store, 0);  // the fresh terminal's keyframe only
  const std::unique_ptr<term::Mirror> resumed =
      resume({store.oldest(), s.bytes, {}, {}, {}}, Cursor{s.bytes.size()});
  ASSERT_TRUE(resumed);
  EXPECT_GT(resumed->skipped_bytes(), s.bytes.size() / 10 * 9);  // all but ~540 lines
  term::SnapshotOptions all;
  all.scrollback_lines = 10'000;
  EXPECT_EQ(resumed->snapshot(all).snapshot.scrollback_lines, kKeyframeHistoryLines);
  term::CompareOptions compare;
  compare.history_lines = kKeyframeHistoryLines;
  EXPECT_EQ(term::first_difference(*live(s, s.bytes.size()), *resumed, compare), "");

  const std::string more = lines(20'000, 21'000);
  resumed->feed(more);
  s.bytes += more;
  EXPECT_EQ(resumed->snapshot(all).snapshot.scrollback_lines, kKeyframeHistoryLines + 1000);
  compare.history_lines = kKeyframeHistoryLines + 1000;
  EXPECT_EQ(term::first_difference(*live(s, s.bytes.size()), *resumed, compare), "");
}

}  // namespace
}  // namespace backscroll::recorder
