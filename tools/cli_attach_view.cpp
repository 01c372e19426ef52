#include "tools/cli_attach_view.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <utility>

#include "tools/cli_output.hpp"

namespace backscroll::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kWaitSlice{
    100};  // how often the session and engine are checked
constexpr std::uint64_t kPumpSliceBytes = 256 * 1024;  // passthrough replays in slices
constexpr std::uint64_t kModelSliceBytes = 16 * 1024;  // render: frames go on during a flood
constexpr std::size_t kKeptResizes = 64;               // for a start whose snapshot is older
// The local model's history: what a growing screen takes back (the engine's sizes end at 1000
// rows), as the actor's own terminal does.
constexpr term::ScrollbackLimits kModelHistory{.max_lines = 1000, .max_bytes = 4u << 20};

// A snapshot draws on a fresh terminal: reset the modes, the region and the pen, clear.
constexpr std::string_view kFreshTerminal = "\x1b[!p\x1b[0m\x1b[r\x1b[H\x1b[2J";
// Render mode draws on the alternate screen (the user's scrollback is left alone) and leaves it
// restoring the pen, the cursor's visibility and its position.
constexpr std::string_view kEnterAlternate = "\x1b[?1049h";
constexpr std::string_view kLeaveAlternate = "\x1b[0m\x1b[?25h\x1b[?1049l";

std::uint16_t model_dimension(std::uint16_t v) {
  return std::clamp<std::uint16_t>(v, 1, 1000);  // the engine's sizes are 1..1000
}

}  // namespace

AttachView::AttachView(const shm::RingReader& reader, int notify_fd, int terminal_cols,
                       int terminal_rows, bool canvas)
    : reader_(reader), notify_fd_(notify_fd), canvas_(canvas) {
  renderer_.set_terminal(terminal_cols, terminal_rows);
}

// ---- the input side ----

void AttachView::post(const std::function<void(Commands&)>& change) {
  {
    const std::lock_guard lock(mutex_);
    change(commands_);
  }
  bell_.ring();
}

void AttachView::start(ViewStart start, std::vector<ActorResize> resizes) {
  post([&](Commands& c) {
    c.starts.push_back(std::move(start));
    c.resizes.insert(c.resizes.end(), resizes.begin(), resizes.end());
  });
}

void AttachView::resized(std::vector<ActorResize> resizes) {
  if (resizes.empty()) return;
  post([&](Commands& c) { c.resizes.insert(c.resizes.end(), resizes.begin(), resizes.end()); });
}

void AttachView::set_terminal(int cols, int rows) {
  post([&](Commands& c) { c.terminal = std::pair{cols, rows}; });
}

void AttachView::set_status(std::string line) {
  post([&](Commands& c) { c.status = std::move(line); });
}

void AttachView::show_hint(std::string line, std::chrono::milliseconds how_long) {
  post([&](Commands& c) { c.hint = std::pair{std::move(line), Clock::now() + how_long}; });
}

void AttachView::redraw() {
  post([](Commands& c) { c.redraw = true; });
}

void AttachView::stop() {
  post([](Commands& c) { c.stop = true; });
}

unsigned AttachView::take_answers_due() {
  const std::lock_guard lock(mutex_);
  return std::exchange(answers_due_, 0);
}

// ---- the output thread ----

void AttachView::notify(char message) noexcept {
  while (::write(notify_fd_, &message, 1) < 0 && errno == EINTR) {
  }
}

Result<void> AttachView::apply(Commands commands) {
  if (commands.terminal) {
    renderer_.set_terminal(commands.terminal->first, commands.terminal->second);
    dirty_ = true;
  }
  if (commands.status) {
    status_ = std::move(*commands.status);
    dirty_ = true;
  }
  if (commands.hint) {
    hint_ = std::move(commands.hint->first);
    hint_until_ = commands.hint->second;
    dirty_ = true;
  }
  if (commands.redraw) {
    renderer_.invalidate();
    dirty_ = true;
  }
  for (ViewStart& s : commands.starts) {
    if (auto r = begin(std::move(s)); !r) return r;
  }
  for (const ActorResize& r : commands.resizes) add_resize(r);
  return {};
}

Result<void> AttachView::finish_catch_up() {
  if (!catch_up_end_) return {};
  catch_up_end_.reset();
  // The terminal answers in order: once it answered this, it answered every query before.
  if (auto w = write_all(STDOUT_FILENO, kStatusRequest); !w) return w;
  {
    const std::lock_guard lock(mutex_);
    answers_due_ += status_requests_.take() + 1;
  }
  notify(kCatchUpDone);
  return {};
}

Result<void> AttachView::begin(ViewStart start) {
  // A catch-up cut short still ends with its sentinel: the input side counts on its answer.
  if (auto r = finish_catch_up(); !r) return r;
  std::string out;
  const bool render = start.mode == ViewMode::render;
  const bool from_passthrough = started_ && mode_ == ViewMode::passthrough;
  // The program's modes, switched on in passthrough, do not belong to a rendered view (on the
  // canvas the screen stays: the view is drawn there next).
  if (render && from_passthrough) out += modes_.reset_sequence(/*leave_alternate=*/!canvas_);
  const bool alternate = canvas_ || render;
  if (alternate && !on_alternate_) out += kEnterAlternate;
  if (!alternate && on_alternate_) out += kLeaveAlternate;
  if (render && (!started_ || from_passthrough)) renderer_.invalidate();  // unknown contents
  on_alternate_ = alternate;
  modes_ = DetachModes{};
  switch_at_.reset();
  scout_.reset();
  awaiting_start_ = false;
  follower_.emplace(reader_, start.cursor);
  start_cursor_ = start.cursor;
  actor_size_ = {start.cols, start.rows};
  if (!render) {
    out += kFreshTerminal;
    out += start.snapshot;
    if (auto w = write_all(STDOUT_FILENO, out); !w) return w;
    modes_.observe(std::as_bytes(std::span(start.snapshot.data(), start.snapshot.size())));
    if (canvas_) scout_.emplace(reader_, start.cursor);
    model_.reset();
    // Everything committed so far is old output: its queries' answers must not reach the actor.
    catch_up_end_ = reader_.committed();
    status_requests_ = StatusRequestCounter{};
  } else {
    if (auto w = write_all(STDOUT_FILENO, out); !w) return w;
    model_ = std::make_unique<term::Mirror>(Cursor{0}, model_dimension(start.cols),
                                            model_dimension(start.rows), kModelHistory);
    model_->feed(start.snapshot);
    std::erase_if(resizes_, [&](const ActorResize& r) { return r.at < start.cursor; });
    dirty_ = true;
  }
  mode_ = start.mode;
  started_ = true;
  return {};
}

void AttachView::add_resize(const ActorResize& resize) {
  if (resize.at >= start_cursor_ && mode_ == ViewMode::passthrough && canvas_ && follower_) {
    // The actor's terminal shows again what a smaller screen hid (lines taken back from its
    // history, columns it kept); the canvas has neither: go on from a snapshot after it.
    const bool grows = resize.cols > actor_size_.first || resize.rows > actor_size_.second;
    actor_size_ = {resize.cols, resize.rows};
    if (grows) switch_at_ = min(switch_at_.value_or(resize.at), resize.at);
  }
  if (mode_ == ViewMode::render && model_) {
    if (resize.at < start_cursor_) return;  // the snapshot was taken after it
    if (resize.at < follower_->cursor()) {
      // Bytes after it were laid out at the old size: show the new size now, and start again
      // from a snapshot to be exact.
      resize_model(resize);
      dirty_ = true;
      notify(kResyncWanted);
      return;
    }
  }
  resizes_.push_back(resize);
  if (resizes_.size() > kKeptResizes) resizes_.pop_front();
}

void AttachView::resize_model(const ActorResize& resize) {
  const term::MirrorScreen& screen = model_->screen();
  // The actor's terminal keeps what a narrower or shorter screen hid and shows it again when it
  // grows; a snapshot holds only what was visible. Growing, the model is exact again only
  // from a snapshot taken after the resize.
  const bool grows = resize.cols > screen.cols() || resize.rows > screen.rows();
  model_->resize(model_dimension(resize.cols), model_dimension(resize.rows));
  if (grows) notify(kResyncWanted);
}

Result<void> AttachView::scout(Cursor until) {
  if (switch_at_) return {};
  auto progress = scout_->pump_to(
      [this](std::span<const std::byte> b) -> Result<void> {
        const std::uint64_t before = modes_.observed();
        const Cursor at = scout_->cursor();  // of b's first byte (pump_to moves on after)
        modes_.observe(b);
        if (const auto first = modes_.first_switch(); first && !switch_at_) {
          // It may have begun in an earlier run (a sequence split between two), never before
          // the start: the snapshot has no switch.
          const std::uint64_t back = before - std::min(before, *first);
          switch_at_ = Cursor{value(at) - std::min(back, value(at))};
        }
        return {};
      },
      until);
  if (!progress) return tl::unexpected(progress.error());
  return {};
}

Result<AttachView::Step> AttachView::pump() {
  if (!follower_ || awaiting_start_) return Step::idle;
  if (mode_ == ViewMode::passthrough) {
    Cursor until = follower_->cursor() + kPumpSliceBytes;
    if (catch_up_end_) until = min(until, *catch_up_end_);
    if (canvas_) {
      if (auto r = scout(until); !r) return tl::unexpected(r.error());
      if (switch_at_) until = min(until, max(*switch_at_, follower_->cursor()));
    }
    auto progress = follower_->pump(STDOUT_FILENO, until, [this](std::span<const std::byte> b) {
      if (!canvas_) modes_.observe(b);  // on the canvas the scout did
      if (catch_up_end_) {
        status_requests_.observe(
            std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
      }
    });
    if (!progress) return tl::unexpected(progress.error());
    if (catch_up_end_ && follower_->cursor() >= *catch_up_end_) {
      if (auto r = finish_catch_up(); !r) return tl::unexpected(r.error());
    }
    if (switch_at_ && follower_->cursor() >= *switch_at_) {
      // The terminal cannot follow the switch on its alternate screen: a snapshot taken after
      // it shows the screen the program switched to.
      awaiting_start_ = true;
      notify(kResyncWanted);
      return Step::idle;
    }
    return progress->written + progress->skipped > 0 ? Step::more : Step::idle;
  }

  Cursor until = follower_->cursor() + kModelSliceBytes;
  if (!resizes_.empty()) until = min(until, max(resizes_.front().at, follower_->cursor()));
  auto progress = follower_->pump_to(
      [this](std::span<const std::byte> b) -> Result<void> {
        model_->feed(b);
        return {};
      },
      until);
  if (!progress) return tl::unexpected(progress.error());
  if (progress->skipped > 0) notify(kResyncWanted);  // lapped: the model missed bytes
  bool moved = progress->written + progress->skipped > 0;
  // Every byte before a resize's cursor was written at the old size.
  while (!resizes_.empty() && resizes_.front().at <= follower_->cursor()) {
    resize_model(resizes_.front());
    resizes_.pop_front();
    moved = true;
  }
  if (moved) dirty_ = true;
  return moved ? Step::more : Step::idle;
}

std::string AttachView::status_line(Clock::time_point now) const {
  if (!hint_.empty() && now < hint_until_) return hint_;
  return status_;
}

Result<std::optional<Clock::time_point>> AttachView::render_if_due(bool now_or_never) {
  const auto now = Clock::now();
  if (!hint_.empty() && now >= hint_until_) {
    hint_.clear();
    dirty_ = true;
  }
  std::optional<Clock::time_point> next;
  if (!hint_.empty()) next = hint_until_;
  if (mode_ != ViewMode::render || !model_ || !dirty_) return next;
  if (!now_or_never && now < last_frame_ + kFrameInterval) {
    const auto due = last_frame_ + kFrameInterval;
    return next ? std::min(*next, due) : due;
  }
  model_->settle();  // a held text run or sequence is drawn too
  const std::string frame = renderer_.frame(model_->screen(), status_line(now));
  if (auto w = write_all(STDOUT_FILENO, frame); !w) return tl::unexpected(w.error());
  last_frame_ = now;
  dirty_ = false;
  return next;
}

std::optional<Outcome> AttachView::session_end() {
  const auto meta = reader_.meta();
  if (meta && watched_ == 0) watched_ = meta->session;
  if (!meta || watched_ == 0) return std::nullopt;
  const auto record = reader_.session(watched_);
  const bool sealed = record && (record->flags & shm::kSessionSealed) != 0;
  if (sealed && follower_->cursor() >= Cursor{record->end}) {
    if (meta->session > watched_) {  // restarted meanwhile: stay with the new session
      watched_ = meta->session;
      return std::nullopt;
    }
    // A delete marks the ring closed before the seal: read the meta again, after the seal.
    if (const auto now = reader_.meta(); now && now->closed) {
      return Outcome{End::deleted, {}, 0, std::nullopt};
    }
    return Outcome{End::exited, {}, 0, record};
  }
  if (!record && meta->session > watched_) watched_ = meta->session;
  return std::nullopt;
}

void AttachView::finish(Outcome outcome) {
  outcome_ = std::move(outcome);
  finished_ = true;
}

void AttachView::run() noexcept {
  try {
    for (;;) {
      const std::uint32_t bell = bell_.seen();
      const std::uint32_t ring = reader_.wake_seen();  // both before looking (wait_ring)
      Commands commands;
      {
        const std::lock_guard lock(mutex_);
        commands = std::exchange(commands_, Commands{});
      }
      if (commands.stop) break;
      if (auto r = apply(std::move(commands)); !r) {
        finish({End::failed, r.error(), 0, std::nullopt});
        break;
      }
      if (!follower_ || awaiting_start_) {
        // No start yet (the input side gives one before run()), or waiting for the next one:
        // commands only. A delete meanwhile ends it (no start will come).
        const RingWake wake = wait_ring(reader_, Cursor{std::numeric_limits<std::uint64_t>::max()},
                                        ring, bell_, bell, kWaitSlice);
        if (wake == RingWake::closed) {
          finish({End::deleted, {}, 0, std::nullopt});
          break;
        }
        continue;
      }
      auto step = pump();
      if (!step) {
        finish({End::failed, step.error(), 0, std::nullopt});
        break;
      }
      auto next_frame = render_if_due(false);
      if (!next_frame) {
        finish({End::failed, next_frame.error(), 0, std::nullopt});
        break;
      }
      if (*step == Step::more) continue;
      if (auto end = session_end()) {
        (void)render_if_due(true);
        finish(std::move(*end));
        break;
      }
      auto timeout = kWaitSlice;
      if (*next_frame) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(**next_frame - Clock::now());
        timeout = std::clamp(left, std::chrono::milliseconds(0), kWaitSlice);
      }
      const RingWake wake = wait_ring(reader_, follower_->cursor(), ring, bell_, bell, timeout);
      if (wake == RingWake::closed) {
        // Deleted: what is left goes out first.
        while (true) {
          auto rest = pump();
          if (!rest || *rest == Step::idle) break;
        }
        (void)render_if_due(true);
        finish({End::deleted, {}, 0, std::nullopt});
        break;
      }
      if (wake == RingWake::timeout && !ring_owner_alive(reader_)) {
        finish({End::failed,
                Error{Errc::engine_unavailable, "the engine that owns this actor is gone",
                      std::nullopt},
                0, std::nullopt});
        break;
      }
    }
  } catch (const std::exception& e) {
    finish({End::failed, Error{Errc::internal, e.what(), std::nullopt}, 0, std::nullopt});
  }
  notify(kEnded);
}

// ---- after run() ----

std::string AttachView::farewell() const {
  std::string out;
  if (started_ && mode_ == ViewMode::passthrough) out += modes_.reset_sequence(!on_alternate_);
  if (on_alternate_) out += kLeaveAlternate;
  return out;
}

bool AttachView::farewell_starts_line() const {
  // Leaving the canvas puts the cursor back where the attach began, at the start of a line;
  // leaving the program's alternate screen, where the line was left.
  if (on_alternate_) return canvas_;
  return modes_.alternate_screen();
}

}  // namespace backscroll::cli
