// OutputEvents: what the mirror thread reads in one actor's output that belongs on its event
// track (docs/recorder.md): title changes, bells, shell integration marks (OSC 133 / 633), and
// the agent status the rule table reads from each title. It hears them from the mirror's
// VtScanner (term::VtEvents) as the bytes are parsed, in stream order, stamps them with the wall
// clock of the turn that parsed them, and hands them over in batches (take()).
//
// Bounded whatever the output: a run of bells within kBellWindow of its first is one event with
// a count (the first bell is reported at once, the rest when the window ends); and every event
// costs a token of a bucket (kBurst, refilled at kPerSecond): past it events are counted, not
// kept, and a `dropped` event with the count comes before the next one kept. The current title
// and agent status are always exact (state()), whatever was dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/recorder/track_event.hpp"
#include "engine/term/status_rules.hpp"
#include "engine/term/vt_scanner.hpp"

namespace backscroll::recorder {

// An event as the mirror thread read it, before the io thread numbers it.
struct OutputEvent {
  EventKind kind;
  Cursor cursor;
  std::int64_t time_ms;
  control::Json fields;
};

// What the output says now: for the ring header (zero-copy readers) and `status`.
struct OutputState {
  std::string title;
  std::uint64_t bells = 0;
  term::AgentStatus status = term::AgentStatus::unknown;
  std::string agent;  // the rule's agent, "" when none
};

class OutputEvents final : public term::VtEvents {
 public:
  static constexpr std::int64_t kBellWindowMs = 250;
  static constexpr std::uint32_t kBurst = 256;
  static constexpr std::uint32_t kPerSecond = 64;
  // Titles whose classification is remembered (spinners cycle through a few).
  static constexpr std::size_t kClassifiedTitles = 256;

  // `rules` must outlive this.
  explicit OutputEvents(const term::StatusRules& rules) : rules_(&rules) {}

  // The wall clock of the bytes about to be parsed (the mirror thread sets it once per turn).
  void set_now(std::int64_t now_ms) noexcept { now_ms_ = now_ms; }
  // A fresh terminal (a clear or a new session): no title, status unknown; the bell count goes
  // on. Nothing is recorded for it (the io thread records the clear or the spawn).
  void reset() noexcept;
  // Appends the events ready to record to `out`, in stream order: all but a bell run whose
  // window is still open at `now_ms`.
  void take(std::vector<OutputEvent>& out, std::int64_t now_ms);
  // Whether take() has or will have something: events, an open bell run, or a count of dropped
  // events waiting for a token (the last events of a flood must not hide their own loss).
  bool has_pending() const noexcept {
    return !ready_.empty() || bell_run_.has_value() || dropped_ > 0;
  }

  const OutputState& state() const noexcept { return state_; }
  // Counts the changes of state() (a title, a bell, a reset): the mirror thread hands the state
  // over when it moved, rate limit or not.
  std::uint64_t state_version() const noexcept { return state_version_; }

  // term::VtEvents (noexcept: only allocation can fail in them, and that ends the process).
  void on_title(std::string_view title, Cursor after) noexcept override;
  void on_bell(Cursor after) noexcept override;
  void on_shell_mark(char mark, std::optional<int> exit_status, Cursor after) noexcept override;

 private:
  struct BellRun {
    Cursor first;
    Cursor last;
    std::uint64_t count;  // after the first, which was reported on its own
    std::int64_t started_ms;
  };
  // Records an event when the bucket has a token, its fields made by fields() only then (a
  // title flood drops most: those cost no JSON); else counts it as dropped.
  template <typename Fields>
  void emit(EventKind kind, Cursor cursor, Fields&& fields);
  void end_bell_run();
  bool take_token() noexcept;
  term::Classification classify(const std::string& title);

  const term::StatusRules* rules_;
  std::int64_t now_ms_ = 0;
  OutputState state_;
  std::uint64_t state_version_ = 0;
  std::vector<OutputEvent> ready_;
  std::optional<BellRun> bell_run_;
  std::optional<std::int64_t> last_bell_ms_;  // the last bell reported on its own
  double tokens_ = kBurst;
  std::int64_t refilled_ms_ = 0;
  std::uint64_t dropped_ = 0;
  Cursor dropped_at_{0};
  std::unordered_map<std::string, term::Classification> classified_;
};

}  // namespace backscroll::recorder
