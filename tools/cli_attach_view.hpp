// AttachView: the output side of `attach` (docs/cli.md), on a thread of its own, the only
// writer to stdout while attached. It follows the actor's ring from a start the input side
// gives it (an engine snapshot answer) in one of two modes:
// - passthrough: the snapshot drawn on a reset terminal, then the raw bytes, as they come. The
//   bytes before the committed cursor at the start are a catch-up: after them it writes the
//   sentinel query `CSI 5 n` and tells the input side how many status answers are due
//   (CatchUpGuard). The modes the program switches on are tracked to undo them at the end.
//   On the alternate canvas (the default: the whole attachment happens on the terminal's
//   alternate screen, so the user's screen and scrollback are untouched) the snapshot is one
//   drawn for it (SnapshotCanvas::alternate), and the stream is read ahead of writing: the
//   bytes stop before the first screen switch (the program's own 1049 h/l, RIS), which the
//   terminal, already on its alternate screen, cannot follow, and the view asks for a fresh
//   snapshot (kResyncWanted) and writes nothing until it comes.
// - render: the snapshot and the raw bytes feed a local terminal model (term::Mirror) at the
//   actor's size, resized at each `resized` event's cursor, and ScreenRenderer draws it into
//   the terminal at the terminal's size, at most once per kFrameInterval, on the terminal's
//   alternate screen, with the input side's status line on the last row.
// Commands from the input side (any thread) take effect at once: they ring a Doorbell the ring
// wait listens to. Messages back go as one byte each on `notify_fd`: kCatchUpDone (take the
// answers due with take_answers_due()), kResyncWanted (the model missed a resize, was lapped,
// or grew past what its snapshot showed: start it again from a fresh snapshot), kEnded
// (outcome() is final).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/term/mirror.hpp"
#include "shm/ring_reader.hpp"
#include "tools/cli_detach_modes.hpp"
#include "tools/cli_ring_follower.hpp"
#include "tools/cli_ring_wait.hpp"
#include "tools/cli_screen_render.hpp"
#include "tools/cli_terminal_input.hpp"

namespace backscroll::cli {

enum class ViewMode { passthrough, render };

// The actor was resized at `at` (event `resized`): bytes before it were written at the old size.
struct ActorResize {
  Cursor at{0};
  std::uint16_t cols = 0;
  std::uint16_t rows = 0;
};

// Where the view (re)starts: an engine snapshot answer.
struct ViewStart {
  ViewMode mode = ViewMode::passthrough;
  Cursor cursor{0};         // the snapshot's cursor, or where a raw replay starts
  std::uint16_t cols = 80;  // the actor's size at `cursor`
  std::uint16_t rows = 24;
  std::string snapshot;  // snapshot_v1 bytes; empty for a raw replay
};

enum class End { detached, exited, deleted, signal, failed };

struct Outcome {
  End end = End::failed;
  Error error;                                // failed
  int signal = 0;                             // signal
  std::optional<shm::SessionRecord> session;  // exited
};

class AttachView {
 public:
  static constexpr char kCatchUpDone = 'c';
  static constexpr char kResyncWanted = 's';
  static constexpr char kEnded = 'e';
  static constexpr std::chrono::milliseconds kFrameInterval{16};  // at most ~60 frames a second

  // `canvas`: draw on the terminal's alternate screen throughout (else passthrough uses the
  // terminal's main screen, snapshot history included, as `attach --history` does).
  AttachView(const shm::RingReader& reader, int notify_fd, int terminal_cols, int terminal_rows,
             bool canvas);

  // ---- the input side (any thread) ----
  // A new start, with the resizes the input side learned of while asking for it (one batch:
  // the output thread sees them together, so none looks late).
  void start(ViewStart start, std::vector<ActorResize> resizes = {});
  void resized(std::vector<ActorResize> resizes);
  void set_terminal(int cols, int rows);
  // The render mode's last row ("": none).
  void set_status(std::string line);
  // A line shown instead of the status for a while (the read-only hint).
  void show_hint(std::string line, std::chrono::milliseconds how_long);
  // The terminal's contents are unknown (after a stop): render mode draws everything again.
  void redraw();
  void stop();
  // Status answers due for the catch-ups finished since the last call (kCatchUpDone).
  unsigned take_answers_due();

  // ---- the output thread ----
  void run() noexcept;

  // ---- after run() returned ----
  // Whether the view ended by itself (the session ended, the actor was deleted, an error)
  // rather than by stop(); then outcome() says how.
  bool finished() const noexcept { return finished_; }
  const Outcome& outcome() const noexcept { return outcome_; }
  // Bytes that leave the terminal as the user had it: the program's modes off (passthrough),
  // or back from the alternate screen this view drew on (render).
  std::string farewell() const;
  // Whether the cursor ends at the start of a line of its own after farewell() (else "\r\n").
  bool farewell_starts_line() const;

 private:
  // What the input side asked for since the output thread last looked. Every start is applied
  // in order (each passthrough start owes the input side its sentinel).
  struct Commands {
    std::vector<ViewStart> starts;
    std::vector<ActorResize> resizes;
    std::optional<std::pair<int, int>> terminal;
    std::optional<std::string> status;
    std::optional<std::pair<std::string, std::chrono::steady_clock::time_point>> hint;
    bool redraw = false;
    bool stop = false;
  };
  enum class Step { more, idle, finished };

  void post(const std::function<void(Commands&)>& change);
  void notify(char message) noexcept;
  Result<void> apply(Commands commands);
  Result<void> begin(ViewStart start);
  Result<void> finish_catch_up();
  void add_resize(const ActorResize& resize);
  void resize_model(const ActorResize& resize);
  Result<Step> pump();
  // On the canvas: reads ahead up to `until` while no screen switch is known (switch_at_).
  Result<void> scout(Cursor until);
  Result<void> feed_model(std::span<const std::byte> bytes);
  // Draws a frame when one is due; returns when the next is due, if one waits.
  Result<std::optional<std::chrono::steady_clock::time_point>> render_if_due(bool now_or_never);
  std::string status_line(std::chrono::steady_clock::time_point now) const;
  std::optional<Outcome> session_end();
  void finish(Outcome outcome);

  const shm::RingReader& reader_;
  const int notify_fd_;
  const bool canvas_;
  Doorbell bell_;

  std::mutex mutex_;  // guards commands_ and answers_due_
  Commands commands_;
  unsigned answers_due_ = 0;

  // The output thread's own state.
  bool started_ = false;
  ViewMode mode_ = ViewMode::passthrough;
  std::optional<RingFollower> follower_;
  Cursor start_cursor_{0};                                      // of the last start
  std::pair<std::uint16_t, std::uint16_t> actor_size_{80, 24};  // after the resizes seen
  // passthrough
  DetachModes modes_;
  // on the canvas: reads the stream ahead of `follower_` for the first screen switch
  std::optional<RingFollower> scout_;
  // Where it begins, or where the actor grew (the canvas cannot show what it takes back):
  // passthrough stops there.
  std::optional<Cursor> switch_at_;
  bool awaiting_start_ = false;         // stopped at it: nothing more until the next start
  std::optional<Cursor> catch_up_end_;  // set while a catch-up is being written
  StatusRequestCounter status_requests_;
  // render
  std::unique_ptr<term::Mirror> model_;
  std::deque<ActorResize> resizes_;  // by cursor; kept for the next start in passthrough
  ScreenRenderer renderer_;
  bool dirty_ = false;
  std::chrono::steady_clock::time_point last_frame_{};
  std::string status_;
  std::string hint_;
  std::chrono::steady_clock::time_point hint_until_{};
  bool on_alternate_ = false;  // render mode drew on the terminal's alternate screen
  // the session being watched (its seal ends the view)
  std::uint64_t watched_ = 0;
  bool finished_ = false;
  Outcome outcome_;
};

}  // namespace backscroll::cli
