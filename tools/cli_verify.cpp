#include "tools/cli_verify.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "engine/term/mirror.hpp"
#include "engine/term/mirror_compare.hpp"
#include "engine/term/snapshot_grammar.hpp"
#include "shm/control_frame.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_ring_follower.hpp"

namespace backscroll::cli {
namespace {

using term::Mirror;

// The bytes [from, committed) of the ring, or from its oldest cursor when `from` was lapped.
Result<std::string> copy_retained(const shm::RingReader& reader, Cursor& from) {
  for (;;) {
    const Cursor end = reader.committed();
    from = std::max(from, reader.oldest());
    std::string bytes(static_cast<std::size_t>(end - from), '\0');
    auto copied = reader.copy(from, std::as_writable_bytes(std::span(bytes.data(), bytes.size())));
    if (copied) {
      bytes.resize(static_cast<std::size_t>(*copied - from));
      return bytes;
    }
    if (copied.error().code != Errc::cursor_expired) return tl::unexpected(copied.error());
  }
}

// Feeds `bytes` in pieces of random sizes (the mirror's result must not depend on them).
void feed_in_pieces(Mirror& m, std::string_view bytes, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::size_t> size(1, 64 * 1024);
  while (!bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), size(rng));
    m.feed(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
}

}  // namespace

int run_verify(const Places& places, const VerifyArgs& args) {
  auto reader = open_ring(places, args.actor);
  if (!reader) return report(reader.error());
  const auto meta = reader->meta();
  if (!meta) return report(ring_owner_gone(*reader, args.actor));
  const std::uint64_t seed = args.seed != 0 ? args.seed : std::random_device{}();
  std::mt19937_64 rng(seed);

  // The newest `window` bytes of the current session: a fresh terminal starts at the session's
  // start, or (when that is older) at the first byte checked.
  const Cursor committed = reader->committed();
  Cursor start = committed - std::min(args.window, value(committed));
  const auto session = reader->session(meta->session);
  if (session) start = std::max(start, Cursor{session->start});
  auto bytes = copy_retained(*reader, start);
  if (!bytes) return report(bytes.error());
  // The engine keeps sizes within 1..1000 (kMaxWindowDimension).
  const auto cols = static_cast<std::uint16_t>(std::clamp<std::uint32_t>(meta->cols, 1, 1000));
  const auto rows = static_cast<std::uint16_t>(std::clamp<std::uint32_t>(meta->rows, 1, 1000));

  // Random cursors, and the end: the snapshot a client opening the actor now would get.
  std::vector<std::uint64_t> cuts(args.cuts);
  std::uniform_int_distribution<std::uint64_t> offset(0, bytes->size());
  for (auto& c : cuts) c = offset(rng);
  cuts.back() = bytes->size();
  std::sort(cuts.begin(), cuts.end());

  // One mirror over everything, snapshots on its way.
  Mirror whole(Cursor{0}, cols, rows);
  struct Taken {
    std::uint64_t cut;
    term::MirrorSnapshot snap;
  };
  std::vector<Taken> taken;
  std::map<std::string, int> fallbacks;
  std::uint64_t fed = 0;
  for (const std::uint64_t cut : cuts) {
    feed_in_pieces(whole, std::string_view(*bytes).substr(fed, cut - fed), rng);
    fed = cut;
    term::MirrorSnapshot s = whole.snapshot();
    if (s.snapshot.fallback_reason) ++fallbacks[*s.snapshot.fallback_reason];
    else taken.push_back({cut, std::move(s)});
  }
  feed_in_pieces(whole, std::string_view(*bytes).substr(fed), rng);

  const std::string where =
      std::to_string(bytes->size()) + " bytes [" + std::to_string(value(start)) + ", " +
      std::to_string(value(start) + bytes->size()) + ") at " + std::to_string(cols) + "x" +
      std::to_string(rows) + ", seed " + std::to_string(seed);
  control::Json verdict{{"name", args.actor},
                        {"ok", true},
                        {"snapshots", taken.size()},
                        {"from", value(start)},
                        {"to", value(start) + bytes->size()},
                        {"cols", cols},
                        {"rows", rows},
                        {"seed", seed},
                        {"raw_replays", fallbacks},
                        {"failure", nullptr}};
  for (const Taken& t : taken) {
    const std::uint64_t tag = value(t.snap.cursor);
    std::string why;
    std::string diff;
    if (!term::is_safe_snapshot(t.snap.snapshot.bytes, &why)) {
      diff = "the snapshot breaks the grammar: " + why;
    } else {
      Mirror replayed(Cursor{0}, cols, rows);
      replayed.feed(t.snap.snapshot.bytes);
      feed_in_pieces(replayed, std::string_view(*bytes).substr(tag), rng);
      diff = term::first_difference(whole, replayed,
                                    {.history_lines = t.snap.snapshot.scrollback_lines});
    }
    if (diff.empty()) continue;
    verdict["ok"] = false;
    verdict["failure"] = {{"cursor", value(start) + t.cut},
                          {"snapshot_cursor", value(start) + tag},
                          {"difference", diff}};
    const std::string at = "cursor " + std::to_string(value(start) + t.cut) + " (snapshot at " +
                           std::to_string(value(start) + tag) + ")";
    const std::string line =
        args.json ? verdict.dump()
                  : "verify " + args.actor + ": FAILED at " + at + " over " + where + ": " + diff;
    (void)write_all(STDOUT_FILENO, line + "\n");
    return kExitError;
  }
  std::string line =
      "verify " + args.actor + ": OK, " + std::to_string(taken.size()) + " snapshots over " + where;
  for (const auto& [reason, n] : fallbacks) {
    line += ", " + std::to_string(n) + " raw_replay (" + reason + ")";
  }
  if (args.json) line = verdict.dump();
  return write_all(STDOUT_FILENO, line + "\n") ? kExitOk : kExitError;
}

}  // namespace backscroll::cli
