// Recording: what the flight recorder keeps of one actor in memory (docs/recorder.md): its event
// track, its keyframes and its time index. Io thread; lives as long as the actor.
#pragma once

#include <optional>

#include "engine/recorder/event_track.hpp"
#include "engine/recorder/keyframe_store.hpp"
#include "engine/recorder/output_events.hpp"
#include "engine/recorder/time_index.hpp"

namespace backscroll::recorder {

struct Recording {
  explicit Recording(TrackLimits limits) : events(limits) {}

  EventTrack events;
  KeyframeStore keyframes;
  TimeIndex times;
  // What the output says now (the mirror's latest report), up to `output_cursor`.
  OutputState output;
  Cursor output_cursor{0};

  // What the transcript's annex holds (docs/recorder.md, "Persistence"): the newest keyframe
  // written there, and a session's end whose keyframe is written whatever its size (the
  // screen a cold restore shows).
  Cursor durable_keyframe{0};
  std::optional<Cursor> durable_keyframe_wanted{};
};

}  // namespace backscroll::recorder
