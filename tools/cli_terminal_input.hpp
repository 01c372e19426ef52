// What the user's terminal sends `attach` on stdin, and the catch-up hygiene built on it
// (docs/cli.md, "Catch-up"). A terminal's stdin mixes the user's keys with the terminal's own
// answers to queries (DA, DSR/CPR, DECRQM, OSC colour reports, DCS replies). While `attach`
// writes old output (a snapshot's catch-up, a replay), the queries in it are answered too, and
// those answers must not reach the actor: it asked long ago, or another client's terminal
// already answered.
// - TerminalInput splits the bytes into units: one byte of text, or one whole escape sequence
//   (held across reads until complete), each marked as a reply or not.
// - CatchUpGuard drops replies from the start of a catch-up until the terminal has answered
//   the sentinel `CSI 5 n` written after it (and every `CSI 5 n` the catch-up itself held),
//   or until kAnswerTimeout after the sentinel (a terminal that does not answer DSR).
// - StatusRequestCounter counts the `CSI 5 n` in the bytes written, across writes.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace backscroll::cli {

class TerminalInput {
 public:
  // A longer sequence is cut here (its bytes still count as one unit, the rest dropped).
  static constexpr std::size_t kMaxUnit = 4096;

  struct Unit {
    std::string bytes;
    bool reply = false;      // a terminal's answer to a query
    bool status_ok = false;  // `CSI 0 n`: the answer to `CSI 5 n`
  };
  // Takes the next complete unit from the front of `bytes`; nullopt when what is left is the
  // start of a sequence (held until the next call completes it).
  std::optional<Unit> next(std::string_view& bytes);
  // An unfinished sequence's bytes, given up (a lone ESC the user typed, when nothing followed).
  std::string take_pending();

 private:
  enum class State { ground, escape, csi, ss3, string, string_escape };
  Unit finish(bool reply, bool status_ok = false);

  State state_ = State::ground;
  bool bel_ends_ = false;  // OSC: BEL ends it as ST does
  std::string unit_;
};

class CatchUpGuard {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kAnswerTimeout{2000};

  // Old output starts going to the terminal: replies are dropped from now on.
  void begin() noexcept { ++in_flight_; }
  // That output is written, and after it the sentinel: `answers` status reports are due (one
  // for the sentinel, one per `CSI 5 n` in the output).
  void sentinel_written(unsigned answers, Clock::time_point now);
  bool active() const noexcept { return in_flight_ > 0 || answered_ < expected_; }
  // Status answers due (sentinels written) and not received yet.
  unsigned answers_outstanding() const noexcept { return expected_ - answered_; }
  // While active, the bytes without the replies in them; else the bytes as they are. A unit
  // split across calls comes out whole in the call that completes it.
  std::string filter(std::string_view bytes);
  // When to stop waiting for answers (nullopt: not waiting for any).
  std::optional<Clock::time_point> deadline() const noexcept;
  // Past the deadline: stops filtering; returns what was held back as an unfinished sequence.
  std::string expire(Clock::time_point now);

 private:
  void settle() noexcept;  // every expected answer came: back to zero

  unsigned in_flight_ = 0;
  unsigned expected_ = 0;
  unsigned answered_ = 0;
  std::optional<Clock::time_point> deadline_;
  TerminalInput input_;
};

// DSR, a status request (`CSI 5 n`): attach asks the terminal with it, and the counter below
// counts the ones the program writes.
inline constexpr std::string_view kStatusRequest = "\x1b[5n";

class StatusRequestCounter {
 public:
  // Counts `CSI 5 n` (ESC [ 5 n) in the bytes, sequences split across calls included.
  void observe(std::string_view bytes) noexcept;
  unsigned take() noexcept;

 private:
  unsigned count_ = 0;
  std::size_t matched_ = 0;  // bytes of kStatusRequest matched so far
};

}  // namespace backscroll::cli
