#include "tools/cli_tail.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "tools/cli_capture.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_reader_announcer.hpp"
#include "tools/cli_ring_follower.hpp"

namespace backscroll::cli {
namespace {

constexpr std::chrono::milliseconds kWaitSlice{500};

void warn_skipped(const RingFollower::Progress& progress) {
  if (progress.skipped > 0) {
    warn("tail: lapped, skipped " + std::to_string(progress.skipped) + " bytes");
  }
}

// Drains what is committed now; laps are warned about, write errors end the command.
Result<void> drain(RingFollower& follower) {
  auto progress = follower.pump(STDOUT_FILENO);
  if (!progress) return tl::unexpected(progress.error());
  warn_skipped(*progress);
  return {};
}

// Writes the bytes [from, floor) that only the engine's history still has; returns the cursor
// where the ring takes over. A cursor no longer retained goes on at the oldest one
// (cursor_expired says which), with a warning when the user named it.
Result<Cursor> write_older(const EngineTarget& engine, const TailArgs& args, Cursor from,
                           Cursor floor) {
  auto client = engine.connect_existing();
  if (!client) return tl::unexpected(client.error());
  while (from < floor) {
    auto r = client->call("history",
                          {{"actor", args.actor}, {"from", value(from)}, {"to", value(floor)}});
    if (!r && r.error().code == Errc::cursor_expired && r.error().cursor &&
        Cursor{*r.error().cursor} > from) {
      const Cursor oldest{*r.error().cursor};
      if (args.from) warn("tail: lapped, skipped " + std::to_string(oldest - from) + " bytes");
      from = oldest;
      continue;
    }
    if (!r) return tl::unexpected(r.error());
    if (auto w = write_all(STDOUT_FILENO, r->payload); !w) return tl::unexpected(w.error());
    const Cursor to{r->header.value("to", value(from))};
    if (to <= from) break;  // nothing more below the floor
    from = to;
  }
  return from;
}

// The last `n` lines of the actor's screen and history (trailing empty rows left out), as
// capture renders them; returns the cursor they show the stream up to.
Result<Cursor> write_last_lines(const EngineTarget& engine, const std::string& actor,
                                std::size_t n) {
  auto captured = capture_screen(engine, actor, n, /*sgr=*/false);
  if (!captured) return tl::unexpected(captured.error());
  std::vector<std::string> all = std::move(captured->lines.history);
  for (std::string& row : captured->lines.screen) all.push_back(std::move(row));
  while (!all.empty() && all.back().empty()) all.pop_back();
  std::string out;
  for (std::size_t i = all.size() - std::min(n, all.size()); i < all.size(); ++i) {
    out += all[i] + "\n";
  }
  if (auto w = write_all(STDOUT_FILENO, out); !w) return tl::unexpected(w.error());
  return captured->cursor;
}

}  // namespace

int run_tail(const EngineTarget& engine, const TailArgs& args) {
  auto reader = open_ring(engine.places, args.actor);
  if (!reader) return report(reader.error());
  Cursor start = args.from.value_or(Cursor{0});
  if (args.lines) {
    auto shown = write_last_lines(engine, args.actor, *args.lines);
    if (!shown) return report(shown.error());
    if (!args.follow && !args.until_exit) return kExitOk;
    start = *shown;
  }
  if (start > reader->committed()) {
    return report(Error{Errc::cursor_in_future,
                        "cursor " + std::to_string(value(start)) +
                            " is past the committed cursor " +
                            std::to_string(value(reader->committed())),
                        value(reader->committed())});
  }
  if (const Cursor floor = reader->oldest(); start < floor) {
    auto older = write_older(engine, args, start, floor);
    if (!older) return report(older.error());
    start = *older;
  }
  RingFollower follower(*reader, start);
  if (!args.follow && !args.until_exit) {
    if (auto r = drain(follower); !r) return report(r.error());
    return kExitOk;
  }

  SessionWatch session;
  (void)session.ended(*reader);  // picks the session to watch: the newest now
  ReaderAnnouncer announcer(engine.places, args.actor, "tail");  // status and top show it
  for (;;) {
    // Taken before looking, so a wake from here on ends the wait below.
    const std::uint32_t wake_seen = reader->wake_seen();
    if (auto r = drain(follower); !r) return report(r.error());
    announcer.report(follower.cursor());
    if (args.until_exit) {
      // Every byte of the session written: end with the program's own status.
      if (const auto end = session.ended(*reader); end && follower.cursor() >= end->end) {
        return end->status;
      }
    }
    switch (reader->wait(follower.cursor(), kWaitSlice, wake_seen)) {
      case shm::WaitResult::ready:
      case shm::WaitResult::woken:  // the session may have ended: looked at above
        break;
      case shm::WaitResult::closed:
        // Deleted (or the engine is stopping): write what is left, then end normally.
        if (auto r = drain(follower); !r) return report(r.error());
        return kExitOk;
      case shm::WaitResult::timeout:
        if (!ring_owner_alive(*reader)) {
          if (auto r = drain(follower); !r) return report(r.error());
          return report(ring_owner_gone(*reader, args.actor));
        }
        break;
    }
  }
}

}  // namespace backscroll::cli
