#include "engine/recorder/event_track.hpp"

#include <algorithm>

namespace backscroll::recorder {

const TrackEvent& EventTrack::insert(Group& group, TrackEvent event) {
  // Events arrive nearly in order (a stream event at most a mirror's lag behind): search from
  // the back.
  auto it = group.end();
  while (it != group.begin() && event.before(*std::prev(it))) --it;
  return *group.insert(it, std::move(event));
}

std::optional<TrackEvent> EventTrack::record(EventKind kind, Cursor cursor, std::int64_t time_ms,
                                             control::Json fields) {
  if (below_floor(kind, cursor)) return std::nullopt;
  TrackEvent event{next_seq_++, cursor, time_ms, kind, std::move(fields)};
  keep(event);
  return event;
}

void EventTrack::restore(TrackEvent event) {
  if (event.seq < next_seq_ || below_floor(event.kind, event.cursor)) return;
  next_seq_ = std::max(next_seq_, event.seq + 1);
  keep(std::move(event));
}

bool EventTrack::keep(TrackEvent event) {
  Group& group = is_minor(event.kind) ? minor_ : major_;
  const std::size_t limit = is_minor(event.kind) ? limits_.minor_events : limits_.events;
  if (group.size() >= limit && !group.empty()) {
    // Full: the oldest goes, unless the new one would be the oldest itself.
    ++evicted_;
    if (event.before(group.front())) return false;
    group.pop_front();
  }
  insert(group, std::move(event));
  return true;
}

bool EventTrack::below_floor(EventKind kind, Cursor cursor) const noexcept {
  return cursor < floor_ ||
         (cursor == floor_ && floor_ != Cursor{0} && origin_of(kind) == EventOrigin::stream);
}

void EventTrack::discard_below(Cursor floor) {
  floor_ = std::max(floor_, floor);
  // Stream order puts them first: every cursor below the floor, then at the floor the events
  // read from the output before the io thread's.
  for (Group* group : {&major_, &minor_}) {
    while (!group->empty() && below_floor(group->front().kind, group->front().cursor)) {
      group->pop_front();
    }
  }
}

EventPage EventTrack::query(const EventQuery& q) const {
  const auto wanted = [&q](const TrackEvent& e) {
    return (q.kinds & mask_of(e.kind)) != 0 && e.cursor >= q.from && (!q.to || e.cursor < *q.to) &&
           (!q.since_ms || e.time_ms >= *q.since_ms);
  };
  const auto first_at = [&q](const Group& group) {
    return std::partition_point(group.begin(), group.end(),
                                [&q](const TrackEvent& e) { return e.cursor < q.from; });
  };
  EventPage page;
  std::size_t skipped = 0;
  auto a = first_at(major_);
  auto b = first_at(minor_);
  // Merge the two groups in stream order.
  while (a != major_.end() || b != minor_.end()) {
    const bool take_a = b == minor_.end() || (a != major_.end() && a->before(*b));
    const TrackEvent& e = take_a ? *a++ : *b++;
    if (q.to && e.cursor >= *q.to) {
      if (take_a) a = major_.end();
      else b = minor_.end();
      continue;
    }
    if (!wanted(e)) continue;
    if (skipped < q.skip) {
      ++skipped;
      continue;
    }
    if (page.events.size() == q.limit) {
      page.more = true;
      break;
    }
    page.events.push_back(e);
  }
  return page;
}

std::optional<TrackEvent> EventTrack::nth(EventKind kind, std::int64_t index) const {
  const Group& group = is_minor(kind) ? minor_ : major_;
  std::vector<const TrackEvent*> of_kind;
  for (const TrackEvent& e : group) {
    if (e.kind == kind) of_kind.push_back(&e);
  }
  const auto n = static_cast<std::int64_t>(of_kind.size());
  const std::int64_t at = index < 0 ? n + index : index;
  if (at < 0 || at >= n) return std::nullopt;
  return *of_kind[static_cast<std::size_t>(at)];
}

}  // namespace backscroll::recorder
