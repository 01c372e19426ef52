// `clear` (docs/protocol.md; docs/cli.md): by default the history goes and the screen stays, as
// tmux's clear-history. After it, nothing before the floor can be read (history, the screen at
// a past cursor), the snapshot shows the screen the actor showed at the floor without a history
// line, the recording's screen at the floor is that screen, the output goes on without a lost
// byte (also when the clear came during a flood), and later lines scroll into a new history.
// With `screen: true` the actor starts over from a blank terminal.
#include <gtest/gtest.h>

#include <string>

#include "engine/term/mirror.hpp"
#include "engine/term/mirror_compare.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

class Clear : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.start()); }

  // Waits until the mirror has parsed everything committed: a snapshot answers from the state
  // it has reached, tagged with its cursor.
  void settle(const std::string& actor) {
    wait_until(
        [&] {
          return engine_.call("snapshot", {{"actor", actor}, {"scrollback", 0}})
                     .header.at("cursor") == engine_.status(actor).at("committed");
        },
        "the mirror to catch up");
  }
  // A terminal fed the answer to a snapshot request.
  std::unique_ptr<term::Mirror> screen_of(Json request) {
    const Frame answer = engine_.call("snapshot", std::move(request));
    EXPECT_EQ(answer.header.at("format"), "snapshot_v1") << answer.header.dump();
    auto mirror = std::make_unique<term::Mirror>(Cursor{0}, answer.header.at("cols"),
                                                 answer.header.at("rows"));
    mirror->feed(answer.payload);
    last_scrollback_ = answer.header.at("scrollback_lines");
    return mirror;
  }
  static std::string row(const term::Mirror& m, int r) {
    std::string text;
    for (int c = 0; c < m.screen().cols(); ++c) {
      const term::Cell cell = m.screen().cell(r, c);
      text += cell.kind == term::Cell::Kind::glyph ? static_cast<char>(cell.chars[0]) : ' ';
    }
    return text.substr(0, text.find_last_not_of(' ') + 1);
  }

  EngineProcess engine_;
  std::size_t last_scrollback_ = 0;
};

// 60 numbered lines on a 24-row screen (36 of them in the history), then the program waits for
// a line and prints it.
const std::vector<std::string> kNumbered = {
    "sh", "-c",
    "i=0; while [ $i -lt 60 ]; do echo line-$i; i=$((i+1)); done; "
    "while read x; do echo \"got $x\"; done"};

TEST_F(Clear, KeepsTheScreenDropsTheHistoryAndGoesOn) {
  engine_.spawn("n", kNumbered);
  engine_.wait_output("n", "line-59\r\n");
  settle("n");
  const auto before = screen_of({{"actor", "n"}, {"scrollback", 100}});
  ASSERT_GT(last_scrollback_, 30u);

  EventStream events(engine_.places());
  const Json cleared = engine_.call("clear", {{"actor", "n"}}).header;
  EXPECT_EQ(cleared.at("screen_kept"), true);
  const std::uint64_t floor = cleared.at("floor");
  EXPECT_EQ(floor, engine_.status("n").at("committed").get<std::uint64_t>());
  EXPECT_EQ(events.wait_for("cleared", "n").at("screen_kept"), true);

  // The same screen, no history line.
  const auto after = screen_of({{"actor", "n"}, {"scrollback", 100}});
  EXPECT_EQ(last_scrollback_, 0u);
  EXPECT_EQ(term::first_difference(*before, *after, {.history_lines = 0}), "");
  EXPECT_EQ(row(*after, 22), "line-59");
  // Nothing before the floor is served; the screen at the floor is the kept one.
  const Error gone = expect_error(engine_.try_call("history", {{"actor", "n"}, {"from", 0}}),
                                  "history before the clear");
  EXPECT_EQ(gone.code, Errc::cursor_expired);
  EXPECT_EQ(gone.cursor, floor);
  const auto at_floor = screen_of({{"actor", "n"}, {"at", floor}, {"scrollback", 100}});
  EXPECT_EQ(last_scrollback_, 0u);
  EXPECT_EQ(term::first_difference(*before, *at_floor, {.history_lines = 0}), "");

  // Output goes on: the screen scrolls, and its top lines start a new history.
  engine_.call("input", {{"actor", "n"}}, "one\ntwo\nthree\n");
  engine_.wait_output("n", "got three\r\n");
  settle("n");
  const auto later = screen_of({{"actor", "n"}, {"scrollback", 100}});
  EXPECT_GT(last_scrollback_, 0u);
  EXPECT_LE(last_scrollback_, 6u);  // at most the lines the new output pushed
  EXPECT_EQ(row(*later, 22), "got three");
  EXPECT_EQ(engine_.history("n", floor).find("line-"), std::string::npos);
}

TEST_F(Clear, WithScreenStartsOverFromABlankTerminal) {
  engine_.spawn("n", kNumbered);
  engine_.wait_output("n", "line-59\r\n");
  const Json cleared = engine_.call("clear", {{"actor", "n"}, {"screen", true}}).header;
  EXPECT_EQ(cleared.at("screen_kept"), false);
  EXPECT_EQ(cleared.at("screen_cleared"), "asked");
  const auto after = screen_of({{"actor", "n"}});
  EXPECT_EQ(last_scrollback_, 0u);
  for (int r = 0; r < after->screen().rows(); ++r) EXPECT_EQ(row(*after, r), "") << r;
}

// During a flood the output is held while the mirror catches up; the floor is where it dropped
// the history, and every byte after it is served, in order.
TEST_F(Clear, DuringAFloodKeepsTheScreenAtTheFloorAndLosesNoByte) {
  engine_.spawn("f", {"sh", "-c",
                      "i=0; while [ $i -lt 200000 ]; do echo flood-$i; i=$((i+1)); done; "
                      "echo flood-done; exec sleep 1000"});
  wait_until([&] { return engine_.status("f").at("committed").get<std::uint64_t>() > 200'000; },
             "the flood to start");
  const Json cleared = engine_.call("clear", {{"actor", "f"}}).header;
  ASSERT_EQ(cleared.at("screen_kept"), true) << cleared.dump();
  const std::uint64_t floor = cleared.at("floor");
  const auto at_floor = screen_of({{"actor", "f"}, {"at", floor}, {"scrollback", 100}});
  EXPECT_EQ(last_scrollback_, 0u);
  EXPECT_NE(row(*at_floor, 0).find("flood-"), std::string::npos)
      << "a kept screen, not a blank one";
  engine_.wait_output("f", "flood-done");
  // Every line after the floor, each once, in order: the first one may be cut by the floor.
  const std::string rest = engine_.history("f", floor);
  std::size_t at = rest.find("\r\n") + 2;
  int expected = -1;
  while (true) {
    const std::size_t end = rest.find("\r\n", at);
    if (end == std::string::npos) break;
    const std::string line = rest.substr(at, end - at);
    at = end + 2;
    if (line == "flood-done") break;
    ASSERT_EQ(line.rfind("flood-", 0), 0u) << line;
    const int n = std::stoi(line.substr(6));
    if (expected >= 0) {
      ASSERT_EQ(n, expected) << "a line lost or repeated after the clear";
    }
    expected = n + 1;
  }
  EXPECT_EQ(expected, 200000);
}

TEST_F(Clear, ABadScreenFlagIsRefusedAndClearsNothing) {
  engine_.spawn("n", kNumbered);
  engine_.wait_output("n", "line-59\r\n");
  const Error bad =
      expect_error(engine_.try_call("clear", {{"actor", "n"}, {"screen", "yes"}}), "clear");
  EXPECT_EQ(bad.code, Errc::bad_request);
  EXPECT_NE(engine_.history("n").find("line-0\r\n"), std::string::npos);
}

}  // namespace
}  // namespace backscroll::testing
