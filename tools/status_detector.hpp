// StatusDetector: the status of one actor, derived from its raw output stream: the window title
// (OSC 0/2 and CSI 23 t, through engine/term/vt_scanner.hpp; OSC 1 is the icon name, not a title),
// the bells, the time of the last output, and the agent status the rule table reads from the
// title (status_rules.hpp). Pure: it sees only the bytes it is given, in stream order, and a
// clock value per call. Coordinates: cursors (VtScanner's positions).
//
// Two phases. *Restoring*: the bytes are history (what the ring retained when the detector
// started, or after a lap); they only build up the state, and finish_restore() hands the result
// over to be reported once, as the initial (or resync) state. Orca's rule: status restored from
// history never fires the events a live transition fires. *Live*: every title set that changes
// the title or what the rules make of it, and every bell, is one change, in stream order. The
// changes do not depend on how the stream is cut into scan() calls (tests split at every byte).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/term/status_rules.hpp"
#include "engine/term/vt_scanner.hpp"
#include "shm/cursor.hpp"

namespace backscroll::status {

// The rule table is the terminal model's (engine/term/status_rules.hpp): the engine reads the
// agent status from titles with it too.
using term::AgentStatus;
using term::Classification;
using term::StatusRules;

struct ActorStatus {
  AgentStatus status = AgentStatus::unknown;
  std::string agent;  // the matching rule's agent; "" when none
  std::string title;  // sanitized UTF-8 (VtScanner); "" before any title was set
  std::uint64_t bells = 0;
  // Wall clock (ms since the Unix epoch) of the last live output seen; none while only history
  // was seen (the ring keeps no timestamps).
  std::optional<std::int64_t> last_output_ms;
  Cursor cursor{0};  // the state describes the stream up to here

  // Equal in what a change reports (the time and cursor aside).
  bool same_report(const ActorStatus& other) const noexcept {
    return status == other.status && agent == other.agent && title == other.title &&
           bells == other.bells;
  }
};

enum class StatusEventKind : std::uint8_t {
  initial,  // the state restored from history when following started
  change,   // a live change of the title, the status or the bell count
  resync,   // the follower was lapped: the state restored from what the ring still holds
};
std::string_view to_string(StatusEventKind kind) noexcept;

struct StatusEvent {
  StatusEventKind kind = StatusEventKind::change;
  ActorStatus state;                    // after the event
  std::optional<AgentStatus> previous;  // the status before; none for initial
  std::uint64_t skipped = 0;            // resync: bytes lost to the lap, never scanned
};

class StatusDetector final : private term::VtEvents {
 public:
  // Starts restoring at `start`. `bells_before`: bells counted by an earlier detector of the
  // same actor (after a lap the count goes on); the title never carries over: it comes from the
  // bytes this detector sees.
  StatusDetector(const StatusRules& rules, Cursor start, std::uint64_t bells_before = 0);

  // The next bytes of the stream. `now_ms` (wall clock) is the time of live output.
  void scan(std::string_view bytes, std::int64_t now_ms);
  bool restoring() const noexcept { return restoring_; }
  // Ends the restoring phase: the state the history leaves, to report once (not a change).
  const ActorStatus& finish_restore();
  // The changes of the live scans since the last call, in stream order.
  std::vector<StatusEvent> take_changes();

  // Current only in the live phase (restoring, it is built by finish_restore()).
  const ActorStatus& state() const noexcept { return state_; }
  Cursor position() const noexcept { return scanner_.position(); }

 private:
  // term::VtEvents, during live scans only.
  // noexcept: only allocation can fail in them, and that ends the process anyway.
  void on_title(std::string_view title, Cursor after) noexcept override;
  void on_bell(Cursor after) noexcept override;
  void report(ActorStatus next, Cursor after);
  Classification classify(const std::string& title);

  const StatusRules* rules_;
  term::VtScanner scanner_;
  bool restoring_ = true;
  std::uint64_t bells_before_;
  std::int64_t now_ms_ = 0;  // the live scan() in progress
  ActorStatus state_;
  std::vector<StatusEvent> changes_;
  // Spinners cycle through a few titles: their classification is remembered (bounded).
  std::unordered_map<std::string, Classification> classified_;
};

}  // namespace backscroll::status
