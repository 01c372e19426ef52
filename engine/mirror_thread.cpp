#include "engine/mirror_thread.hpp"

#include "engine/eventfd_signal.hpp"
#include "engine/recorder/screen_at.hpp"
#include "engine/wall_clock.hpp"
#include "engine/worker_loop.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>

namespace backscroll::engine {

// One actor's mirror. Mirror thread only.
struct MirrorThread::Slot {
  struct Event {
    enum class Kind : std::uint8_t { resize, reset, keyframe } kind;
    Cursor at;
    std::uint16_t cols;  // resize
    std::uint16_t rows;
  };

  MirrorActorId id;
  std::unique_ptr<shm::RingReader> ring;
  std::shared_ptr<InternalConsumer> consumer;
  std::shared_ptr<MirrorUsage> usage;  // may be null
  std::unique_ptr<term::Mirror> mirror;
  // Hears the mirror's scanner (titles, bells, shell marks); reset with the mirror.
  std::unique_ptr<recorder::OutputEvents> output;
  std::deque<Event> events;              // in stream order (the io thread's order)
  std::vector<SnapshotRequest> waiting;  // not_before not reached yet
  // The ring's committed cursor, loaded before the commands of this round were drained: every
  // event at or before it is in `events` (see the class comment).
  Cursor limit;
  // The largest limit seen and when it last grew: the stream is flooding while that is recent.
  Cursor seen{0};
  std::chrono::steady_clock::time_point grew;
  Cursor seen_at_tick{0};  // `seen` when the thread last slept on its batching tick
  // The stream's pace, measured over windows of at least kCoastPaceWindow: whether it grew by
  // kCoastPaceBytes per window or more (a flood the mirror may coast through).
  Cursor pace_from{0};
  std::chrono::steady_clock::time_point pace_since;
  bool fast = false;
  bool coasting = false;  // the last turn stopped feeding while the stream went on
  // The last turn caught up with a flooding stream: the mirror gathers the next bytes for
  // its batching tick (kBatchTickMs or less) instead of waking at every commit (a wake per 4
  // KiB read cost more than the parse once the fast path made the parse cheap).
  bool batching = false;
  // The last snapshot request's options and when it came; the snapshot a jump held for them
  // (kHoldSnapshotFor), kept until the mirror is ready again, an event is queued or it jumps
  // again before that.
  struct Held {
    term::SnapshotOptions options;
    term::MirrorSnapshot taken;
  };
  std::optional<term::SnapshotOptions> asked;
  std::chrono::steady_clock::time_point asked_at;
  std::optional<Held> held;
  Cursor answered{0};  // the newest cursor a snapshot was answered at
  // Keyframes: bytes fed so far; where the last keyframe (or fresh terminal) was and how much
  // had been fed then; when; whether one is due whatever the spacing; no attempt before
  // `keyframe_retry` bytes fed (after a fallback).
  std::uint64_t fed = 0;
  std::chrono::steady_clock::duration parse_time{0};  // spent feeding the mirror
  Cursor keyframe_at{0};
  std::uint64_t keyframe_fed = 0;
  std::chrono::steady_clock::duration keyframe_parse_time{0};
  std::chrono::steady_clock::time_point keyframe_time;
  bool keyframe_due = false;
  std::uint64_t keyframe_retry = 0;
  std::uint64_t resizes_applied = 0;  // Keyframe::sizes_applied: every resize command counts
  std::uint64_t keyframe_sizes = 0;   // resizes_applied at the last keyframe
  std::uint64_t stretch = 0;          // Keyframe::stretch: resets applied
  std::int64_t now_ms = 0;            // the wall clock of this turn
  bool keyframe_waiting = false;      // due, but too soon after the last one (or not ready)
  bool resynced = false;              // resync() since the last reset(): no keyframes
  std::vector<recorder::Keyframe> keyframes;  // taken, not yet sent
  std::uint64_t sent_state_version = 0;       // OutputEvents::state_version() last sent

  void apply(const Event& e) {
    switch (e.kind) {
      case Event::Kind::reset: reset(std::max(e.at, mirror->position())); break;
      case Event::Kind::resize:
        mirror->resize(e.cols, e.rows);
        ++resizes_applied;
        keyframe_due = true;
        break;
      case Event::Kind::keyframe: keyframe_due = true; break;
    }
  }
  // A keyframe of the state now (mirror->snapshot), unless it falls back or shows nothing new.
  bool take_keyframe(std::int64_t time_ms) {
    term::SnapshotOptions options;
    options.scrollback_lines = recorder::kKeyframeHistoryLines;
    term::MirrorSnapshot taken = mirror->snapshot(options);
    const bool resized = resizes_applied != keyframe_sizes;
    if (taken.snapshot.fallback_reason || (taken.cursor <= keyframe_at && !resized)) return false;
    keyframe_at = taken.cursor;
    keyframe_sizes = resizes_applied;
    keyframe_fed = fed;
    keyframe_parse_time = parse_time;
    keyframe_time = std::chrono::steady_clock::now();
    keyframe_due = false;
    keyframes.push_back(recorder::Keyframe{
        taken.cursor, stretch, static_cast<std::uint16_t>(taken.snapshot.cols),
        static_cast<std::uint16_t>(taken.snapshot.rows), resizes_applied, time_ms,
        std::move(taken.snapshot.bytes), taken.snapshot.scrollback_lines});
    return true;
  }
  // A fresh terminal from `at` on: itself a keyframe (the io thread keeps it). A keyframe asked
  // for at the stream's end (a seal, the session's last screen) is taken first.
  void reset(Cursor at) {
    if (keyframe_due && !resynced && mirror->history_ready(recorder::kKeyframeHistoryLines)) {
      take_keyframe(now_ms);
    }
    ++stretch;
    mirror->reset(at);
    output->reset();
    keyframe_at = at;
    keyframe_fed = fed;
    keyframe_parse_time = parse_time;
    keyframe_due = false;
    keyframe_retry = 0;
    resynced = false;
  }
  // Lost bytes (lapped): a fresh terminal that is not the stream's, so no keyframe is taken
  // from it until the io thread's next reset; the stretch numbering stays the io thread's.
  void resync(Cursor at) {
    mirror->reset(at);
    output->reset();
    resynced = true;
  }
  // Applies the events due at the mirror's position. A reset applies as soon as it is next:
  // the bytes before it were cleared or belong to an ended session, and are skipped.
  bool apply_due_events() {
    bool applied = false;
    while (!events.empty() &&
           (events.front().kind == Event::Kind::reset || events.front().at <= mirror->position())) {
      apply(events.front());
      events.pop_front();
      applied = true;
    }
    return applied;
  }
  // Everything before `cursor` has been fed and every event at or before it applied.
  bool caught_up_to(Cursor cursor) const {
    return mirror->position() >= cursor && (events.empty() || events.front().at > cursor);
  }
};

MirrorThread::MirrorThread(int notify_fd, term::ScrollbackLimits limits,
                           const term::StatusRules& rules, bool keyframes)
    : notify_fd_(notify_fd), limits_(limits), rules_(&rules), keyframes_(keyframes) {
  thread_ = std::thread([this] { run(); });
}

MirrorThread::~MirrorThread() {
  stopping_.store(true, std::memory_order_relaxed);
  send(std::monostate{});
  thread_.join();
}

void MirrorThread::send(Command command) {
  commands_.enqueue(std::move(command));
  command_waiting_.store(true, std::memory_order_relaxed);
  wake_.wake();
}

void MirrorThread::wake() noexcept { wake_.wake_for_data(); }

void MirrorThread::add_actor(MirrorActorId id, shm::RingReader ring,
                             std::shared_ptr<InternalConsumer> consumer, std::uint16_t cols,
                             std::uint16_t rows, MirrorStart start,
                             std::shared_ptr<MirrorUsage> usage) {
  send(Add{id, std::make_unique<shm::RingReader>(std::move(ring)), std::move(consumer), cols, rows,
           std::move(start), std::move(usage)});
}
void MirrorThread::remove_actor(MirrorActorId id) { send(Remove{id}); }
void MirrorThread::resize(MirrorActorId id, Cursor at, std::uint16_t cols, std::uint16_t rows) {
  send(Resize{id, at, cols, rows});
}
void MirrorThread::reset(MirrorActorId id, Cursor at) { send(Reset{id, at}); }
void MirrorThread::observe_jumps_for_tests(std::function<void(MirrorActorId)> observer) {
  send(ObserveJumps{0, std::move(observer)});
}
void MirrorThread::request_keyframe(MirrorActorId id, Cursor at) { send(KeyframeAt{id, at}); }
void MirrorThread::request_snapshot(MirrorActorId id, SnapshotRequest request) {
  send(Snap{id, request});
}

MirrorStats MirrorThread::stats() const noexcept {
  return MirrorStats{stat_bytes_.load(std::memory_order_relaxed),
                     stat_skipped_.load(std::memory_order_relaxed),
                     stat_resyncs_.load(std::memory_order_relaxed),
                     stat_snapshots_.load(std::memory_order_relaxed),
                     stat_held_snapshots_.load(std::memory_order_relaxed),
                     stat_keyframes_.load(std::memory_order_relaxed)};
}

void MirrorThread::run() {
  ::pthread_setname_np(::pthread_self(), "bs-mirror");  // for top, perf and the benchmarks
  run_worker(
      wake_, slots_, [this] { return drain_commands(); },
      [this](Slot& slot) {
        // An actor with a snapshot waiting for its cursor gets a bigger share.
        const std::int64_t now = wall_clock_ms();
        slot.now_ms = now;
        slot.output->set_now(now);
        const bool worked = pump(slot, slot.waiting.empty() ? kBatchBytes : 16 * kBatchBytes);
        // Before the answers: the lane then finds this turn's answers at the published cursor.
        if (slot.usage)
          slot.usage->parsed.store(value(slot.mirror->parsed()), std::memory_order_relaxed);
        answer_ready(slot);
        maybe_keyframe(slot, now);
        if (slot.usage) {
          slot.usage->history_bytes.store(slot.mirror->screen().scrollback_bytes(),
                                          std::memory_order_relaxed);
        }
        if (slot.output->has_pending() || !slot.keyframes.empty() ||
            slot.output->state_version() != slot.sent_state_version) {
          send_output_events(slot, now);
        }
        return worked;
      },
      [this] { return has_work(); },
      [this] {
        const auto any = [this](auto pred) {
          return std::any_of(slots_.begin(), slots_.end(), pred);
        };
        const bool paced = batch_ticking_;  // the last sleep was a batching one
        batch_ticking_ = false;
        if (any([](const auto& s) { return s->coasting; })) return WorkerSleep{kCoastTickMs, false};
        if (any([](const auto& s) { return s->batching; })) {
          batch_ticking_ = true;
          return WorkerSleep{batch_tick_ms(paced), false};
        }
        // A run of bells is reported when its window ends, a keyframe taken when its gap
        // ends, output or not.
        if (any([](const auto& s) { return s->keyframe_waiting; })) {
          return WorkerSleep{static_cast<int>(kKeyframeGap.count()), true};
        }
        if (any([](const auto& s) { return s->output->has_pending(); })) {
          return WorkerSleep{static_cast<int>(recorder::OutputEvents::kBellWindowMs), true};
        }
        return WorkerSleep{};
      });
}

int MirrorThread::batch_tick_ms(bool paced) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(now - last_batch_tick_).count();
  last_batch_tick_ = now;
  const int tick = paced_tick_ms(
      slots_, kBatchTickMs, elapsed_ms,
      [](Slot& slot) {
        // A slot added since the last turn has seen nothing yet.
        const std::uint64_t came =
            slot.seen > slot.seen_at_tick ? slot.seen - slot.seen_at_tick : 0;
        slot.seen_at_tick = std::max(slot.seen, slot.seen_at_tick);
        return came;
      },
      [](const Slot& slot) {
        return std::min<std::uint64_t>(kBatchTickBytes, slot.ring->capacity() / 4);
      });
  // The first tick of a burst has no pace measured over batching ticks (the last one may be
  // long ago): the shortest.
  return paced ? std::max(tick, kCoastTickMs) : kCoastTickMs;
}

std::unique_ptr<term::Mirror> MirrorThread::resume(const MirrorStart::Cold& cold,
                                                   Cursor start) const {
  recorder::ScreenAt request{&cold.keyframe, cold.bytes, cold.changes, {}, limits_};
  return recorder::resume(request, start);
}

bool MirrorThread::drain_commands() {
  command_waiting_.store(false, std::memory_order_relaxed);
  Command command;
  while (commands_.try_dequeue(command)) {
    if (std::holds_alternative<std::monostate>(command)) return false;
    const MirrorActorId id = std::visit(
        [](const auto& c) -> MirrorActorId {
          if constexpr (std::is_same_v<std::decay_t<decltype(c)>, std::monostate>) return 0;
          else return c.id;
        },
        command);
    auto it =
        std::find_if(slots_.begin(), slots_.end(), [id](const auto& s) { return s->id == id; });
    Slot* slot = it == slots_.end() ? nullptr : it->get();

    if (auto* observe = std::get_if<ObserveJumps>(&command)) {
      jump_observer_ = std::move(observe->observer);
    } else if (auto* add = std::get_if<Add>(&command)) {
      auto fresh = std::make_unique<Slot>();
      fresh->id = add->id;
      fresh->ring = std::move(add->ring);
      fresh->consumer = std::move(add->consumer);
      fresh->usage = std::move(add->usage);
      const Cursor start = fresh->consumer->position();
      if (add->start.cold) fresh->mirror = resume(*add->start.cold, start);
      if (!fresh->mirror) {
        fresh->mirror = std::make_unique<term::Mirror>(start, add->cols, add->rows, limits_);
      }
      fresh->stretch = add->start.stretch;
      fresh->resizes_applied = fresh->keyframe_sizes = add->start.sizes_applied;
      fresh->output = std::make_unique<recorder::OutputEvents>(*rules_);
      fresh->mirror->set_events(fresh->output.get());
      fresh->limit = start;  // its committed cursor is loaded next round, after this drain
      fresh->pace_from = fresh->seen_at_tick = start;
      fresh->pace_since = std::chrono::steady_clock::now();
      fresh->keyframe_at = start;  // a fresh terminal: the io thread's first keyframe
      fresh->keyframe_time = std::chrono::steady_clock::now();
      slots_.push_back(std::move(fresh));
    } else if (std::holds_alternative<Remove>(command)) {
      if (!slot) continue;
      slot->consumer->detach();
      for (const SnapshotRequest& r : slot->waiting) reply(r, false);
      slots_.erase(it);
    } else if (auto* resize = std::get_if<Resize>(&command)) {
      if (!slot) continue;
      slot->events.push_back({Slot::Event::Kind::resize, resize->at, resize->cols, resize->rows});
      slot->held.reset();  // a snapshot asked after it must not show the size before it
    } else if (auto* reset = std::get_if<Reset>(&command)) {
      if (!slot) continue;
      slot->events.push_back({Slot::Event::Kind::reset, reset->at, 0, 0});
      slot->held.reset();
    } else if (auto* keyframe = std::get_if<KeyframeAt>(&command)) {
      if (!slot) continue;
      slot->events.push_back({Slot::Event::Kind::keyframe, keyframe->at, 0, 0});
    } else if (auto* snap = std::get_if<Snap>(&command)) {
      if (!slot) {
        reply(SnapshotReply{snap->request.token, false, {}});
        continue;
      }
      snap->request.taken_in = std::chrono::steady_clock::now();
      if (!snap->request.plain_text && !snap->request.drop_history) {
        slot->asked = snap->request.options;
        slot->asked_at = snap->request.taken_in;
      }
      slot->waiting.push_back(snap->request);
      answer_ready(*slot);
    }
  }
  return true;
}

// Feeds the slot's mirror at most `budget` bytes, in slices, applying events at their cursors;
// stops early when a command is waiting (run() drains it next).
bool MirrorThread::pump(Slot& slot, std::size_t budget) {
  term::Mirror& mirror = *slot.mirror;
  bool worked = false;
  std::size_t look_ahead_budget = budget * kLookAheadPerFedByte;
  const auto now = std::chrono::steady_clock::now();
  if (slot.limit > slot.seen) {
    slot.seen = slot.limit;
    slot.grew = now;
  }
  // The pace over the window since the last measure (kCoastPaceWindow or longer).
  if (const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - slot.pace_since);
      ms >= kCoastPaceWindow) {
    const std::uint64_t grown = slot.limit - slot.pace_from;
    slot.fast = grown * static_cast<std::uint64_t>(kCoastPaceWindow.count()) >=
                kCoastPaceBytes * static_cast<std::uint64_t>(ms.count());
    slot.pace_from = slot.limit;
    slot.pace_since = now;
  }
  // Not with a request or a resize/reset waiting: those need the mirror to reach a cursor.
  const bool flooding =
      now - slot.grew < kCoastQuiet && slot.waiting.empty() && slot.events.empty();
  slot.coasting = false;
  slot.batching = false;
  for (;;) {
    worked |= slot.apply_due_events();
    Cursor end = slot.limit;
    if (!slot.events.empty()) end = std::min(end, slot.events.front().at);
    const bool coast =
        flooding && slot.fast && mirror.position() < end && mirror.may_coast(kReadyHistoryLines);
    // While it parses the history lines after a jump, a nearer jump would start those lines
    // over (a flood can outrun the parse that way: never ready, no snapshot answered, none
    // held): the mirror jumps only as far as a coasting one, which keeps the ring from lapping
    // it. Unless a request waits for a cursor ahead (an attach after a resize): then the
    // nearest jump serves it best.
    const bool cursor_wait =
        std::any_of(slot.waiting.begin(), slot.waiting.end(),
                    [&](const SnapshotRequest& r) { return !slot.caught_up_to(r.not_before); });
    const bool far_only = coast || (!cursor_wait && !mirror.history_ready(kReadyHistoryLines));
    const std::uint64_t far_jump = std::min(kCoastJumpBytes, slot.ring->capacity() / 8 * 3);
    if (mirror.position() < end &&
        look_ahead(slot, end, look_ahead_budget, far_only ? far_jump : 0)) {
      worked = true;
      continue;  // an event may be due at the new position
    }
    if (coast) {
      slot.coasting = true;  // the next jump passes what is left to parse
      break;
    }
    if (mirror.position() >= end || budget == 0) break;
    // After a jump, the rows above the landing line are fed before a command is served.
    if (worked && command_waiting_.load(std::memory_order_relaxed) && mirror.screen_exact()) break;

    const std::uint64_t slice =
        std::min<std::uint64_t>(std::min(budget, kSliceBytes), end - mirror.position());
    auto view = slot.ring->read(mirror.position(), slice);
    bool lost = !view && view.error().code == Errc::cursor_expired;
    if (view && !view->empty()) {
      const auto parse_start = std::chrono::steady_clock::now();
      mirror.feed(view->first);
      mirror.feed(view->second);
      slot.parse_time += std::chrono::steady_clock::now() - parse_start;
      lost = !slot.ring->intact(view->from);
      budget -= std::min(budget, view->size());
      slot.fed += view->size();
      stat_bytes_.fetch_add(view->size(), std::memory_order_relaxed);
      worked = true;
    }
    if (lost) {
      // Only possible if the gate failed to hold the actor (the mirror is an internal
      // consumer): start a fresh terminal at the oldest retained byte rather than show torn
      // state. Events before that point still apply (their sizes), in order.
      const Cursor oldest = slot.ring->oldest();
      while (!slot.events.empty() && slot.events.front().at <= oldest) {
        if (slot.events.front().kind != Slot::Event::Kind::reset) slot.apply(slot.events.front());
        slot.events.pop_front();
      }
      slot.resync(std::max(oldest, mirror.position()));
      stat_resyncs_.fetch_add(1, std::memory_order_relaxed);
      worked = true;
      break;
    }
    if (!view || view->empty()) break;
  }
  slot.batching = flooding && !slot.coasting && mirror.position() >= slot.limit;
  slot.consumer->advance_to(mirror.position());
  return worked;
}

// Hands the mirror up to `budget` bytes past what it has fed (never past `end`: the next event
// or the committed cursor), then lets it jump over scrolling text that can never be seen again.
bool MirrorThread::look_ahead(Slot& slot, Cursor end, std::size_t& budget,
                              std::uint64_t jump_at_least) {
  term::Mirror& mirror = *slot.mirror;
  while (budget > 0) {
    const std::optional<Cursor> from = mirror.look_ahead_from();
    if (!from || *from >= end) break;
    const auto view = slot.ring->read(
        *from, std::min<std::uint64_t>(std::min(budget, kLookAheadPiece), end - *from));
    if (!view || view->empty()) break;
    mirror.look_ahead(view->first);
    mirror.look_ahead(view->second);
    if (!slot.ring->intact(view->from)) {
      mirror.drop_look_ahead();
      break;
    }
    budget -= std::min(budget, view->size());
    if (command_waiting_.load(std::memory_order_relaxed)) break;
  }
  const Cursor before = mirror.position();
  // The state this jump leaves, for the requests that come before the mirror is ready again
  // (kHoldSnapshotFor). A held snapshot covers one catch-up only: a jump before the mirror is
  // ready again drops it (it would only get older).
  std::optional<Slot::Held> held;
  if (wants_held_snapshot(slot) && mirror.can_skip(jump_at_least))
    held = Slot::Held{*slot.asked, mirror.snapshot(*slot.asked)};
  if (!mirror.skip_ahead(jump_at_least)) return false;
  slot.held = std::move(held);
  stat_skipped_.fetch_add(mirror.position() - before, std::memory_order_relaxed);
  if (jump_observer_) jump_observer_(slot.id);
  return true;
}

bool MirrorThread::wants_held_snapshot(const Slot& slot) const {
  return slot.asked && slot.asked->scrollback_lines <= kReadyHistoryLines &&
         std::chrono::steady_clock::now() - slot.asked_at < kHoldSnapshotFor &&
         slot.mirror->history_ready(std::min(slot.asked->scrollback_lines, kReadyHistoryLines));
}

void MirrorThread::answer_ready(Slot& slot) {
  // Ready again for what the held snapshot was for: fresh answers from here on.
  if (slot.held &&
      slot.mirror->history_ready(std::min(slot.held->options.scrollback_lines, kReadyHistoryLines)))
    slot.held.reset();
  if (slot.waiting.empty()) return;
  slot.apply_due_events();  // a snapshot asked after a clear never shows what was cleared
  std::erase_if(slot.waiting, [&](const SnapshotRequest& r) {
    if (!slot.caught_up_to(r.not_before)) return false;
    const auto started = std::chrono::steady_clock::now();
    // After a jump, the history lines it draws (up to kReadyHistoryLines) are parsed first,
    // unless the snapshot held from before the jump answers it.
    const std::size_t lines = r.plain_text ? kReadyHistoryLines : r.options.scrollback_lines;
    if (!slot.mirror->history_ready(std::min(lines, kReadyHistoryLines))) {
      // Never older than an answer already given, and its bytes after it still in the ring.
      if (r.plain_text || r.drop_history || !slot.held || !(slot.held->options == r.options) ||
          slot.held->taken.cursor < std::max(r.not_before, slot.answered) ||
          slot.held->taken.cursor < slot.ring->oldest())
        return false;
      // Counted before the reply goes out: whoever dequeues it sees the count (the queue orders).
      stat_snapshots_.fetch_add(1, std::memory_order_relaxed);
      stat_held_snapshots_.fetch_add(1, std::memory_order_relaxed);
      reply(r, true, slot.held->taken, started);
      return true;
    }
    if (r.drop_history) {
      slot.mirror->drop_history();
      slot.held.reset();  // it shows the history
    }
    term::MirrorSnapshot taken =
        r.plain_text ? slot.mirror->final_text() : slot.mirror->snapshot(r.options);
    if (!r.plain_text) slot.answered = std::max(slot.answered, taken.cursor);
    stat_snapshots_.fetch_add(1, std::memory_order_relaxed);
    reply(r, true, std::move(taken), started);
    return true;
  });
}

void MirrorThread::reply(const SnapshotRequest& r, bool found, term::MirrorSnapshot taken,
                         std::chrono::steady_clock::time_point started) {
  reply(SnapshotReply{r.token, found, std::move(taken), r.taken_in, started});
}

void MirrorThread::reply(SnapshotReply r) {
  r.queued = std::chrono::steady_clock::now();
  replies_.enqueue(std::move(r));
  signal_eventfd(notify_fd_);
}

void MirrorThread::maybe_keyframe(Slot& slot, std::int64_t now_ms) {
  if (!keyframes_) return;
  term::Mirror& mirror = *slot.mirror;
  slot.apply_due_events();  // a keyframe at a cursor shows every event at or before it
  const auto now = std::chrono::steady_clock::now();
  const Cursor at = mirror.position();
  const bool due =
      slot.keyframe_due || slot.parse_time - slot.keyframe_parse_time >= kKeyframeParseTime ||
      slot.fed - slot.keyframe_fed >= std::min(kKeyframeParsedBytes, slot.ring->capacity() / 4) ||
      at - slot.keyframe_at >= std::min(kKeyframeStreamBytes, slot.ring->capacity() / 2) ||
      (at > slot.keyframe_at && now - slot.keyframe_time >= kKeyframeActivity);
  // After a resize at once (a replay across one may have to fall back: screen_at.hpp);
  // otherwise never two within kKeyframeGap.
  const bool resized = slot.resizes_applied != slot.keyframe_sizes;
  slot.keyframe_waiting = false;
  if (!due || (at == slot.keyframe_at && !resized) || slot.fed < slot.keyframe_retry ||
      slot.resynced) {
    return;
  }
  if ((!resized && now - slot.keyframe_time < kKeyframeGap) ||
      !mirror.history_ready(recorder::kKeyframeHistoryLines)) {
    slot.keyframe_waiting = true;  // look again within kKeyframeGap, output or not
    return;
  }
  if (!slot.take_keyframe(now_ms)) slot.keyframe_retry = slot.fed + kKeyframeRetryBytes;
}

void MirrorThread::send_output_events(Slot& slot, std::int64_t now_ms) {
  OutputEventBatch batch{slot.id, {}, std::move(slot.keyframes)};
  slot.keyframes.clear();
  stat_keyframes_.fetch_add(batch.keyframes.size(), std::memory_order_relaxed);
  slot.output->take(batch.events, now_ms);
  if (slot.output->state_version() != slot.sent_state_version) {
    slot.sent_state_version = slot.output->state_version();
    batch.state = slot.output->state();
    batch.state_cursor = slot.mirror->position();
  }
  if (batch.events.empty() && batch.keyframes.empty() && !batch.state) return;
  output_events_.enqueue(std::move(batch));
  signal_eventfd(notify_fd_);
}

bool MirrorThread::has_work() {
  if (commands_.size_approx() > 0) return true;
  for (const auto& slot : slots_) {
    if (!slot->events.empty()) return true;
    // A coasting or batching mirror looks at new bytes on its tick, not at every commit.
    if (!slot->coasting && !slot->batching && slot->ring->committed() > slot->mirror->position())
      return true;
  }
  return false;
}

}  // namespace backscroll::engine
