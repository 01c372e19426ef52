#include "engine/recorder/track_event.hpp"

#include <array>

namespace backscroll::recorder {
namespace {

constexpr std::array<std::string_view, kEventKinds> kNames = {
    "spawn",       "resize", "clear", "title", "bell",     "prompt",  "command_start",
    "command_end", "status", "exit",  "seal",  "keyframe", "dropped", "foreground",
};

}  // namespace

std::string_view to_string(EventKind kind) noexcept {
  return kNames[static_cast<std::size_t>(kind)];
}

std::optional<EventKind> parse_event_kind(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<EventKind>(i);
  }
  return std::nullopt;
}

EventOrigin origin_of(EventKind kind) noexcept {
  switch (kind) {
    case EventKind::spawn:
    case EventKind::resize:
    case EventKind::clear:
    case EventKind::exit:
    case EventKind::seal:
    case EventKind::foreground: return EventOrigin::control;
    default: return EventOrigin::stream;
  }
}

bool is_minor(EventKind kind) noexcept {
  return kind == EventKind::title || kind == EventKind::bell || kind == EventKind::keyframe;
}

bool TrackEvent::before(const TrackEvent& other) const noexcept {
  if (cursor != other.cursor) return cursor < other.cursor;
  const auto a = origin_of(kind);
  const auto b = origin_of(other.kind);
  if (a != b) return a < b;
  return seq < other.seq;
}

control::Json TrackEvent::to_json(std::string_view actor) const {
  control::Json out{{"actor", actor},
                    {"seq", seq},
                    {"kind", to_string(kind)},
                    {"cursor", value(cursor)},
                    {"time_ms", time_ms}};
  for (const auto& [key, field] : fields.items()) out[key] = field;
  return out;
}

}  // namespace backscroll::recorder
