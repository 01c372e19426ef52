// `backscroll attach` when the terminal is not the actor's size or the client does not own the
// actor (docs/cli.md, "Size"), on pseudo-terminals of the test's:
// - `--read-only` watches: it never resizes the actor, window changes included, and typed keys
//   never reach it (a hint says so);
// - of two CLI controllers at different sizes, the displaced one shows the actor's screen at the
//   actor's size, cropped or padded, never wrapped, with a notice on its last row, and follows
//   the owner's resizes; its own window changes never resize the actor; `t` takes control back at
//   its terminal's size, and the other one becomes the displaced one; when the owner leaves, the
//   other gets the actor back at its current size;
// - the terminal's answers to queries in replayed output never reach the actor.
// What a terminal shows is compared with the actor's screen as the engine's snapshot draws it
// on a fresh terminal model (the same emulator the test's terminal is).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/term/utf8.hpp"
#include "tests/tools/cli_process.hpp"

namespace backscroll::testing {
namespace {

using term::Cell;

// 40 numbered lines in eight colours, longer than the narrow terminals here, then `cat`: the
// screen stays as the lines left it (and keys typed into the actor would be echoed).
std::vector<std::string> rows_printer(const std::string& name) {
  return {"spawn",
          name,
          "--",
          "sh",
          "-c",
          "i=1; while [ $i -le 40 ]; do printf '\\033[3%dmrow %02d: the quick brown fox jumps over "
          "the lazy dog 0123456789 abcdefghijklmnopqrstuvwxyz\\033[m\\n' $((i % 8)) $i; "
          "i=$((i+1)); done; printf 'all-rows-printed\\n'; exec cat"};
}

// What a cell shows: its text and the colours it shows it in. An erased cell and a printed
// space look the same: a background.
std::string shown(const Cell& c) {
  std::string out;
  if (c.kind == Cell::Kind::continuation) return out;
  const bool space = c.kind == Cell::Kind::glyph && c.nchars == 1 && c.chars[0] == U' ';
  if (c.kind == Cell::Kind::erased || space) {
    out = " ";
  } else {
    for (int i = 0; i < c.nchars; ++i) term::append_utf8(out, c.chars[static_cast<std::size_t>(i)]);
    out += "|fg" + std::to_string(static_cast<int>(c.pen.fg.kind)) + ":" +
           std::to_string(c.pen.fg.index_or_red) + (c.pen.bold ? "b" : "");
  }
  out += "|bg" + std::to_string(static_cast<int>(c.pen.bg.kind)) + ":" +
         std::to_string(c.pen.bg.index_or_red) + (c.pen.reverse ? "r" : "");
  return out;
}

std::string row_text(const term::MirrorScreen& s, int row) {
  std::string out;
  for (int col = 0; col < s.cols(); ++col) {
    const Cell c = s.cell(row, col);
    if (c.kind == Cell::Kind::continuation) continue;
    if (c.kind == Cell::Kind::erased) {
      out += ' ';
    } else {
      for (int i = 0; i < c.nchars; ++i)
        term::append_utf8(out, c.chars[static_cast<std::size_t>(i)]);
    }
  }
  return out;
}

class CliAttachSize : public CliTest {
 protected:
  std::unique_ptr<PtyCli> attach(std::vector<std::string> args, unsigned short cols,
                                 unsigned short rows) {
    args.insert(args.begin(), "--no-autostart");
    return std::make_unique<PtyCli>(args, runtime_dir(), cols, rows);
  }

  std::string size_of(const std::string& actor) {
    const Json s = engine_.status(actor);
    return std::to_string(s.at("cols").get<int>()) + "x" + std::to_string(s.at("rows").get<int>());
  }

  // The actor's screen as the engine's snapshot draws it on a fresh terminal.
  std::unique_ptr<term::MirrorScreen> actor_screen(const std::string& actor) {
    const Frame snap = engine_.call("snapshot", {{"actor", actor}});
    if (snap.header.value("format", "") != "snapshot_v1") {
      raise_failure("no snapshot of " + actor + ": " + snap.header.dump());
    }
    auto screen = std::make_unique<term::MirrorScreen>(snap.header.at("cols").get<int>(),
                                                       snap.header.at("rows").get<int>());
    screen->feed(snap.payload);
    return screen;
  }

  // The first difference between the terminal and the actor's screen: the actor's top-left
  // rectangle that fits (above the notice row, when `notice`), blank cells around it; "" when
  // they agree.
  std::string difference(const PtyCli& pty, const std::string& actor, bool notice) {
    const auto want = actor_screen(actor);
    const term::MirrorScreen& got = pty.emulator();
    const int rows = notice ? got.rows() - 1 : got.rows();
    for (int row = 0; row < rows; ++row) {
      for (int col = 0; col < got.cols(); ++col) {
        const bool inside = row < want->rows() && col < want->cols();
        const std::string expected = inside ? shown(want->cell(row, col)) : shown(Cell{});
        const std::string actual = shown(got.cell(row, col));
        if (expected != actual) {
          std::ostringstream why;
          why << "cell (" << row << "," << col << "): terminal '" << actual << "', actor '"
              << expected << "' (actor " << want->cols() << "x" << want->rows() << ", terminal "
              << got.cols() << "x" << got.rows() << ")\nterminal row: '" << row_text(got, row)
              << "'\nactor row:    '" << (row < want->rows() ? row_text(*want, row) : "") << "'";
          return why.str();
        }
      }
    }
    return "";
  }

  // Reads the terminal until it shows the actor's screen (see difference()).
  void wait_shows_actor(PtyCli& pty, const std::string& actor, bool notice) {
    const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
    for (;;) {
      pty.read_for(std::chrono::milliseconds(50));
      const std::string diff = difference(pty, actor, notice);
      if (diff.empty()) return;
      if (std::chrono::steady_clock::now() > deadline) {
        raise_failure("the terminal never showed the actor's screen: " + diff);
      }
    }
  }

  // The terminal's last row (the notice's).
  static std::string last_row(const PtyCli& pty) {
    return row_text(pty.emulator(), pty.emulator().rows() - 1);
  }
  static void wait_last_row(PtyCli& pty, std::string_view needle) {
    const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
    while (last_row(pty).find(needle) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) {
        raise_failure("the last row never showed '" + std::string(needle) + "'; the screen:\n" +
                      pty.screen_text());
      }
      pty.read_for(std::chrono::milliseconds(20));
    }
  }

  std::string file_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

// Passing through on the alternate screen, a taller window: the actor's terminal takes lines
// back from its history, which the alternate screen does not have; the view goes on from a
// snapshot taken after the resize, and shows what the actor shows.
TEST_F(CliAttachSize, GrowingTheWindowShowsTheLinesTheActorTakesBackFromItsHistory) {
  ASSERT_TRUE(Succeeds(cli(rows_printer("g"))));
  engine_.wait_output("g", "all-rows-printed");
  const auto pty = attach({"attach", "g"}, 100, 20);
  wait_shows_actor(*pty, "g", false);
  pty->resize(100, 30);
  wait_until([&] { return size_of("g") == "100x30"; }, "the actor to grow");
  wait_shows_actor(*pty, "g", false);
  pty->type("\x1d");
  pty->wait_for("[detached from g]\r\n");
  EXPECT_EQ(pty->wait_exit(), 0);
}

TEST_F(CliAttachSize, ReadOnlyNeverResizesAndDropsKeysWithAHint) {
  const auto typed = scratch_.path() / "typed";
  ASSERT_TRUE(Succeeds(
      cli({"spawn", "v", "--", "sh", "-c", "echo viewer-ready; exec cat > " + typed.string()})));
  engine_.wait_output("v", "viewer-ready");
  EXPECT_EQ(size_of("v"), "80x24");
  const auto pty = attach({"attach", "v", "-r"}, 100, 30);
  wait_shows_actor(*pty, "v", false);
  EXPECT_EQ(size_of("v"), "80x24");
  EXPECT_TRUE(engine_.status("v").at("controller").is_null());

  pty->type("typed-by-a-viewer\r");
  wait_last_row(*pty, "read-only: keys are not sent | Ctrl-]: detach | v is 80x24");
  // A window change redraws; it never resizes (with no controller, any resize would pass).
  pty->resize(70, 20);
  wait_shows_actor(*pty, "v", true);
  pty->resize(120, 40);
  wait_shows_actor(*pty, "v", false);  // the hint is gone after a while
  EXPECT_EQ(size_of("v"), "80x24");

  pty->type("\x1d");
  pty->wait_for("[detached from v]\r\n");
  EXPECT_EQ(pty->wait_exit(), 0);
  // Nothing reached the program: it would have written the line to the file (and echoed it).
  EXPECT_EQ(file_text(typed), "");
  EXPECT_EQ(engine_.history("v").find("typed-by-a-viewer"), std::string::npos);
}

TEST_F(CliAttachSize, TheDisplacedControllerShowsTheActorAtItsSizeAndTakesControlBack) {
  ASSERT_TRUE(Succeeds(cli(rows_printer("two"))));
  engine_.wait_output("two", "all-rows-printed");
  const auto a = attach({"attach", "two"}, 100, 30);
  wait_shows_actor(*a, "two", false);
  EXPECT_EQ(size_of("two"), "100x30");

  // b takes over at a smaller size: a shows the 60x15 screen in its top-left, blank around it,
  // and says who controls it.
  const auto b = attach({"attach", "two"}, 60, 15);
  wait_until([&] { return size_of("two") == "60x15"; }, "b's size");
  wait_shows_actor(*b, "two", false);
  wait_last_row(*a, "t: take control | Ctrl-]: detach | two is 60x15, controlled by another");
  wait_shows_actor(*a, "two", true);

  // a's window changes: it draws again, the actor keeps b's size.
  a->resize(110, 32);
  wait_last_row(*a, "two is 60x15");
  wait_shows_actor(*a, "two", true);
  EXPECT_EQ(size_of("two"), "60x15");
  // The owner's window grows: the actor follows it, and a's notice and view with it, text the
  // narrower screen hid included (a's model starts again from a snapshot taken after it).
  // b's own terminal never got that text: it shows what the program redraws, as any terminal.
  b->resize(64, 16);
  wait_until([&] { return size_of("two") == "64x16"; }, "b's new size");
  wait_last_row(*a, "two is 64x16");
  wait_shows_actor(*a, "two", true);
  // Keys other than `t` do not reach the actor (cat's terminal would echo them).
  a->type("xyz-while-displaced\r");

  // `t`: a owns it again at its terminal's size; b is displaced, and shows the larger screen
  // cropped to its 60x15 terminal: 60 columns, 14 rows above the notice.
  a->type("t");
  wait_until([&] { return size_of("two") == "110x32"; }, "a's size after t");
  wait_last_row(*b, "t: take control | Ctrl-]: detach | two is 110x32");
  wait_shows_actor(*b, "two", true);
  wait_shows_actor(*a, "two", false);  // passthrough again: no notice
  EXPECT_EQ(last_row(*a).find("take control"), std::string::npos);
  EXPECT_EQ(engine_.history("two").find("xyz-while-displaced"), std::string::npos);

  // b's window change never resizes the actor either.
  b->resize(50, 12);
  wait_shows_actor(*b, "two", true);
  EXPECT_EQ(size_of("two"), "110x32");

  b->type("\x1d");
  b->wait_for("[detached from two]\r\n");
  EXPECT_EQ(b->wait_exit(), 0);
  a->type("\x1d");
  a->wait_for("[detached from two]\r\n");
  EXPECT_EQ(a->wait_exit(), 0);
}

TEST_F(CliAttachSize, WhenTheOwnerLeavesTheDisplacedOneGetsTheActorAtItsCurrentSize) {
  ASSERT_TRUE(Succeeds(cli(rows_printer("back"))));
  engine_.wait_output("back", "all-rows-printed");
  const auto a = attach({"attach", "back"}, 100, 30);
  wait_shows_actor(*a, "back", false);
  const auto b = attach({"attach", "back"}, 60, 15);
  wait_last_row(*a, "back is 60x15");
  // a's window changed while it was displaced; the engine hands back a's attach size, then a
  // resizes the actor to its terminal and draws it straight again.
  a->resize(90, 25);
  wait_shows_actor(*a, "back", true);
  b->type("\x1d");
  b->wait_for("[detached from back]\r\n");
  EXPECT_EQ(b->wait_exit(), 0);
  wait_until([&] { return size_of("back") == "90x25"; }, "a's current size");
  wait_shows_actor(*a, "back", false);
  a->type("typed-by-the-owner\r");
  engine_.wait_output("back", "typed-by-the-owner");
  a->type("\x1d");
  a->wait_for("[detached from back]\r\n");
  EXPECT_EQ(a->wait_exit(), 0);
}

TEST_F(CliAttachSize, AnswersToQueriesInReplayedOutputNeverReachTheActor) {
  const auto typed = scratch_.path() / "typed";
  // A sixel image makes every snapshot a raw replay (docs/snapshot.md): attaching replays the
  // ring from its start, queries included, and the test's terminal answers them.
  ASSERT_TRUE(Succeeds(
      cli({"spawn", "q", "--", "sh", "-c",
           "printf '\\033Pq#0;2;0;0;0#0~~@@\\033\\\\'; printf '\\033[c\\033[6nqueries-asked\\n'; "
           "stty raw -echo; printf 'recording\\n'; exec cat > " +
               typed.string()})));
  engine_.wait_output("q", "recording");
  wait_until(
      [&] {
        return engine_.call("snapshot", {{"actor", "q"}}).header.value("format", "") ==
               "raw_replay";
      },
      "the mirror to have parsed the image");

  // --history: the raw replay is passed through (on the canvas a raw replay is rendered).
  const auto pty = attach({"attach", "q", "--history"}, 100, 30);
  pty->type("early");  // typed at once: while the catch-up is written, queued
  pty->wait_for_screen("recording");
  // DA, CPR and the CLI's own status request, answered in that order.
  wait_until(
      [&] {
        pty->read_for(std::chrono::milliseconds(20));
        return pty->answers().size() >= 3;
      },
      "the terminal to answer the replayed queries and the sentinel");
  EXPECT_EQ(pty->answers().front(), "\x1b[?62;22c");
  EXPECT_EQ(pty->answers().back(), "\x1b[0n");
  pty->type("-late\r");
  wait_until([&] { return file_text(typed).find("-late") != std::string::npos; },
             "the program to get the keys");
  // Exactly the keys, in order: no `ESC [ ? ... c`, no `ESC [ row ; col R`.
  EXPECT_EQ(file_text(typed), "early-late\r");
  pty->type("\x1d");
  pty->wait_for("[detached from q]\r\n");
  EXPECT_EQ(pty->wait_exit(), 0);
}

}  // namespace
}  // namespace backscroll::testing
