// EventTrack: one actor's recorded events in stream order (docs/recorder.md), bounded. The io
// thread owns it: it records what it does itself (a spawn, a resize, an exit) at the committed
// cursor, and what the mirror thread read in the output (a title, a bell, a prompt) when that
// arrives, later and at an older cursor; each lands in its place by cursor (TrackEvent::before).
//
// Bounds: the minor kinds (titles, bells, keyframes) and all others are kept apart, each up to
// its own limit; past it the oldest of that group goes. A clear discards every event read from
// the bytes it cleared (they may hold what the user cleared away).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "engine/recorder/track_event.hpp"

namespace backscroll::recorder {

struct TrackLimits {
  std::size_t events = 4096;        // every kind but the minor ones
  std::size_t minor_events = 4096;  // titles, bells and keyframes
};

// A set of kinds: bit (1 << kind).
using KindMask = std::uint32_t;
inline constexpr KindMask kAllKinds = (KindMask{1} << kEventKinds) - 1;
constexpr KindMask mask_of(EventKind kind) noexcept {
  return KindMask{1} << static_cast<unsigned>(kind);
}

struct EventQuery {
  Cursor from{0};                          // at or after this cursor
  std::optional<Cursor> to{};              // before this cursor
  std::optional<std::int64_t> since_ms{};  // at or after this wall-clock time
  KindMask kinds = kAllKinds;
  std::size_t skip = 0;      // matching events passed over first (the next page at one cursor)
  std::size_t limit = 1000;  // the oldest matching events first
};

struct EventPage {
  std::vector<TrackEvent> events;  // in stream order
  bool more = false;               // more matched than `limit`: ask again from the next cursor
};

class EventTrack {
 public:
  explicit EventTrack(TrackLimits limits = {}) : limits_(limits) {}

  // Records an event; returns it with its seq (also when it is older than everything a full
  // group keeps, and so is not kept). None for an event below the last clear's floor (the
  // mirror read it before the clear, and reports it after): it is not recorded at all.
  std::optional<TrackEvent> record(EventKind kind, Cursor cursor, std::int64_t time_ms,
                                   control::Json fields = control::Json::object());
  // An event read back with its seq (a recording loaded from the transcript, in the order
  // written: seqs increase): kept under the same bounds and floor; numbering goes on after it.
  // One whose seq is not past every seq so far (a record repeated by damage) is ignored.
  void restore(TrackEvent event);
  // A clear at `floor`: the events read from the bytes it cleared go (cursor <= floor for
  // those read from the output, < floor for the io thread's), and so does any reported later.
  void discard_below(Cursor floor);

  EventPage query(const EventQuery& query) const;
  // The `index`-th event of `kind` in stream order (0 the oldest kept), or counted from the newest
  // when negative (-1 the newest); none when there are not that many.
  std::optional<TrackEvent> nth(EventKind kind, std::int64_t index) const;

  std::size_t size() const noexcept { return major_.size() + minor_.size(); }
  // Events pushed out by the bounds since the track began (a clear's are not counted).
  std::uint64_t evicted() const noexcept { return evicted_; }
  std::uint64_t last_seq() const noexcept { return next_seq_ - 1; }

 private:
  using Group = std::deque<TrackEvent>;
  static const TrackEvent& insert(Group& group, TrackEvent event);
  // Keeps `event` within its group's bound; false when it is older than everything a full
  // group keeps.
  bool keep(TrackEvent event);
  bool below_floor(EventKind kind, Cursor cursor) const noexcept;

  TrackLimits limits_;
  Group major_;
  Group minor_;
  Cursor floor_{0};
  std::uint64_t next_seq_ = 1;
  std::uint64_t evicted_ = 0;
};

}  // namespace backscroll::recorder
