// Recording: what the flight recorder keeps of one actor in memory (docs/recorder.md): its event
// track, its keyframes and its time index. Io thread; lives as long as the actor.
#pragma once

#include "engine/recorder/event_track.hpp"
#include "engine/recorder/keyframe_store.hpp"
#include "engine/recorder/time_index.hpp"

namespace backscroll::recorder {

struct Recording {
  explicit Recording(TrackLimits limits) : events(limits) {}

  EventTrack events;
  KeyframeStore keyframes;
  TimeIndex times;
};

}  // namespace backscroll::recorder
