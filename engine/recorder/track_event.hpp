// TrackEvent: one entry of an actor's event track (docs/recorder.md): something that happened to
// the actor or in its output, stamped with the byte cursor that caused it and the wall-clock time
// the engine saw it. The kind-specific fields are JSON with the stable names of docs/recorder.md,
// so the protocol, the CLI and the durable form carry them unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "shm/control_frame.hpp"
#include "shm/cursor.hpp"

namespace backscroll::recorder {

enum class EventKind : std::uint8_t {
  spawn,          // a session started: session, pid, argv, cwd, cols, rows
  resize,         // cols, rows: bytes before the cursor were written at the old size
  clear,          // history below the cursor was discarded
  title,          // title (OSC 0/2, CSI 23 t)
  bell,           // count: bells from the cursor up to `last`, coalesced (docs/recorder.md)
  prompt,         // OSC 133;A: the shell prints its prompt
  command_start,  // OSC 133;C: the command line was accepted, its output follows
  command_end,    // OSC 133;D: exit_status (null when the shell gave none)
  status,         // the agent status the rule table reads from the title: status, previous, agent
  exit,           // the program ended: session, pid, exit_code, term_signal
  seal,           // the session's last byte was read: session, end (= cursor)
  keyframe,       // the mirror kept the screen at this cursor: cols, rows
  dropped,        // count: stream events over the rate limit, not recorded, before the cursor
  foreground,     // the terminal's foreground program changed: pid, command, argv, cwd
};
inline constexpr std::size_t kEventKinds = static_cast<std::size_t>(EventKind::foreground) + 1;

std::string_view to_string(EventKind kind) noexcept;
std::optional<EventKind> parse_event_kind(std::string_view name) noexcept;

// Events read from the output itself (titles, bells, prompts, statuses, keyframes) against
// events the io thread records as it acts (spawn, resize, clear, exit, seal). At one cursor the
// stream's events come first: the bytes that caused them are before the cursor, and the io
// thread's event at a cursor applies to the bytes after it.
enum class EventOrigin : std::uint8_t { stream = 0, control = 1 };
EventOrigin origin_of(EventKind kind) noexcept;
// Titles, bells and keyframes are many: they have a bound of their own, so a spinner in the
// title bar or a long flood never pushes a spawn or an exit out of the track.
bool is_minor(EventKind kind) noexcept;

struct TrackEvent {
  std::uint64_t seq = 0;  // the actor's recording order, from 1; never reused
  Cursor cursor{0};
  std::int64_t time_ms = 0;  // wall clock, ms since the Unix epoch
  EventKind kind = EventKind::spawn;
  control::Json fields = control::Json::object();

  // Stream order: by cursor, the stream's events before the io thread's at one cursor, then by
  // recording order.
  bool before(const TrackEvent& other) const noexcept;
  // {"actor", "seq", "kind", "cursor", "time_ms", ...fields}: the protocol's and the CLI's form.
  control::Json to_json(std::string_view actor) const;
};

}  // namespace backscroll::recorder
