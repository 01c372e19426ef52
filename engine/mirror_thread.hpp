// MirrorThread: the engine's mirror thread (docs/design.md, "The mirror"). It keeps one Mirror per
// actor, fed from the actor's ring in place (a read-only RingReader mapping of the engine's own
// segment) in batches of at most kBatchBytes per actor in turn, so a flooding actor never
// delays another actor's snapshot. Each mirror is an internal consumer of its actor: it never
// loses a byte, and the consumer gate pauses the PTY while it is too far behind.
//
// The io thread talks to it only through this class: commands go over a ConcurrentQueue
// (single producer: the io thread), replies come back over another one plus the io thread's
// notify eventfd. Events that must apply in stream order (resize, reset) carry the cursor they
// apply at: the io thread takes it as the actor's committed cursor when it enqueues the event,
// so every byte before it was committed before the event and every later byte after it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <concurrentqueue/concurrentqueue.h>

#include "engine/consumer_gate.hpp"
#include "engine/recorder/keyframe.hpp"
#include "engine/recorder/output_events.hpp"
#include "engine/term/mirror.hpp"
#include "engine/term/status_rules.hpp"
#include "engine/wake_signal.hpp"
#include "shm/ring_reader.hpp"

namespace backscroll::engine {

using MirrorActorId = std::uint64_t;

struct SnapshotRequest {
  std::uint64_t token = 0;  // the io thread's handle for the reply
  term::SnapshotOptions options;
  // Answer only once the mirror has applied everything before this cursor (an attach that
  // resized first wants a snapshot at its size). Cursor{0}: answer from the parsed state now.
  Cursor not_before{0};
  // Instead of a snapshot: the terminal's final plain text (Mirror::final_text; deletion).
  bool plain_text = false;
  // A clear that keeps the screen: the mirror drops its history first (Mirror::drop_history),
  // then answers the snapshot; never one held from before a jump.
  bool drop_history = false;
  // When the mirror thread took the request from its queue (set there).
  std::chrono::steady_clock::time_point taken_in{};
};

struct SnapshotReply {
  std::uint64_t token = 0;
  bool found = false;  // false: the actor was removed before the mirror answered
  term::MirrorSnapshot taken;
  // The request's taken_in, when the mirror started its answer (caught up: the build or the
  // held snapshot) and when the reply was queued: where a snapshot's time went (the `timing`
  // option of the snapshot op).
  std::chrono::steady_clock::time_point taken_in{};
  std::chrono::steady_clock::time_point started{};
  std::chrono::steady_clock::time_point queued{};
};

// Events a mirror read in its actor's output (recorder::OutputEvents), for the io thread to
// record on the actor's event track.
struct OutputEventBatch {
  MirrorActorId id = 0;
  std::vector<recorder::OutputEvent> events;  // in stream order
  std::vector<recorder::Keyframe> keyframes;  // in stream order
  // What the output says after the bytes parsed so far (up to `state_cursor`), when it changed
  // since the last batch: exact whatever the rate limit dropped.
  std::optional<recorder::OutputState> state{};
  Cursor state_cursor{0};
};

// Where an actor's mirror starts (MirrorThread::add_actor). Numbered as the io thread's
// KeyframeStore numbers them: the stretch the stream is in and the size changes applied so far
// (a restored actor's recording goes on from those it read back). With `cold`, the terminal
// is rebuilt from a keyframe and the bytes after it up to the start (recorder::resume): a
// restored actor shows its last screen (docs/recorder.md, "Cold restore").
struct MirrorStart {
  std::uint64_t stretch = 0;
  std::uint64_t sizes_applied = 0;
  struct Cold {
    recorder::Keyframe keyframe;
    std::string bytes;                          // the stream [keyframe.cursor, start)
    std::vector<recorder::SizeChange> changes;  // KeyframeStore::size_changes
  };
  std::optional<Cold> cold{};
};

// What one actor's mirror holds now, for the io thread: its history's memory (status, the
// memory budget) and the cursor its screen shows (Mirror::parsed; the snapshot lane compares
// it with its kept snapshot's). The mirror thread stores them in each turn (`parsed` before
// the turn's answers), the io thread loads them: relaxed, figures that order nothing else (a
// snapshot travels in the reply queue, which orders its bytes). (How far the mirror has read the
// ring is its consumer's position.)
struct MirrorUsage {
  std::atomic<std::uint64_t> history_bytes{0};
  std::atomic<std::uint64_t> parsed{0};
};

struct MirrorStats {
  std::uint64_t bytes = 0;    // fed to mirrors
  std::uint64_t skipped = 0;  // jumped over (Mirror::skip_ahead), not fed
  std::uint64_t resyncs = 0;  // times a mirror lost bytes (lapped) and restarted fresh
  std::uint64_t snapshots = 0;
  std::uint64_t held_snapshots = 0;  // of those, answered with the one held from before a jump
  std::uint64_t keyframes = 0;       // taken (docs/recorder.md)
};

class MirrorThread {
 public:
  // Bytes fed to one actor's mirror before the next actor's turn: the mirror parses ~35-55
  // MB/s (mirror_bench), so a turn takes ~0.3-0.5 ms.
  static constexpr std::size_t kBatchBytes = 16 * 1024;
  // A turn feeds slices of at most this and ends early when a command is waiting: a snapshot
  // request waits for at most one slice (~50 us), not a whole turn.
  static constexpr std::size_t kSliceBytes = 2 * 1024;
  // A turn hands the mirror's look ahead (Mirror::look_ahead) up to this many bytes past the
  // fed ones per byte it may feed, in pieces of kLookAheadPiece between which a waiting command
  // ends the turn. The scan runs at ~1 GB/s, the mirror at ~40 MB/s: the look ahead stays ahead
  // of a flood, and a snapshot waiting for the committed cursor is answered after the last
  // lines that can still be seen are parsed, not the whole backlog.
  static constexpr std::size_t kLookAheadPerFedByte = 32;
  static constexpr std::size_t kLookAheadPiece = 64 * 1024;
  // After a look-ahead jump, a snapshot waits until the screen and the history lines it draws,
  // up to kReadyHistoryLines, are exact (a default snapshot draws 512): the slot is fed on
  // (not coasting) while a request waits.
  static constexpr std::size_t kReadyHistoryLines = 600;
  // Coasting through a flood (docs/plain-scroll-skip.md): once a mirror is ready
  // (kReadyHistoryLines), it is not fed while its actor floods: the committed cursor keeps
  // moving (within kCoastQuiet) at kCoastPaceBytes per kCoastPaceWindow or faster (3.3 MB/s; a
  // progress bar or a spinner never is, so their screens stay current). It only looks ahead
  // every kCoastTick and jumps again once the landing would be kCoastJumpBytes ahead: the
  // keyframes' stream spacing (kKeyframeStreamBytes), so that the history lines parsed again
  // after each landing (it must be ready before it coasts on) serve one keyframe each; at
  // most three eighths of the ring, under the consumer gate's high water with the lines a
  // landing needs after it. When the stream pauses or slows down, it parses the rest.
  static constexpr std::uint64_t kCoastJumpBytes = 3u << 20;
  static constexpr std::chrono::milliseconds kCoastQuiet{20};
  static constexpr std::uint64_t kCoastPaceBytes = 32u << 10;
  static constexpr std::chrono::milliseconds kCoastPaceWindow{10};
  static constexpr int kCoastTickMs = 2;
  // A mirror that caught up with a stream it parses whole (a full-screen redraw, a stream
  // slower than kCoastPaceBytes per kCoastPaceWindow) gathers the next bytes for a tick instead
  // of waking at every commit: kBatchTickMs, shorter when the bytes it gathers meanwhile would
  // pass kBatchTickBytes (about 0.5 ms of the fast path's parse, the most a snapshot asked
  // meanwhile waits for) or a quarter of the ring, never under kCoastTickMs (nor over it for a
  // burst's first tick, whose pace is not known yet). A stream of 2 MB/s woke it at every 2 ms
  // tick, 236 times per MB; now 63 (docs/performance.md, twelfth session). Not for coasting,
  // whose jumps a longer tick spaces further apart, and so its keyframes: `snapshot --at`'s
  // p99 grew by a third with an 8 ms coasting tick.
  static constexpr int kBatchTickMs = 8;
  static constexpr std::uint64_t kBatchTickBytes = 256u << 10;
  // Snapshots asked during a flood: after each jump, the mirror re-parses the lines a snapshot
  // draws (up to kReadyHistoryLines) before it can answer from the new position. When a
  // snapshot was asked within kHoldSnapshotFor, a jump from a ready state first builds one with
  // the same options from the state it leaves (exact, tagged with the cursor before the jump); a
  // request with those options that arrives before the mirror is ready again gets it at once. Only
  // for requests of at most kReadyHistoryLines (a build of well under 1 ms at 80x24).
  static constexpr std::chrono::seconds kHoldSnapshotFor{5};
  // Keyframes (docs/recorder.md): after kKeyframeParseTime spent parsing (a replay from it
  // costs about as much), every kKeyframeParsedBytes parsed, kKeyframeStreamBytes of the
  // stream (parsed or jumped over; each at most a quarter and a half of the ring, so the ring
  // always holds one and the bytes after it), kKeyframeActivity with output, a request (a
  // seal), and at once after a resize; otherwise never two within kKeyframeGap; a fallback
  // waits for kKeyframeRetryBytes more before the next attempt.
  static constexpr std::chrono::milliseconds kKeyframeParseTime{25};
  static constexpr std::uint64_t kKeyframeParsedBytes = 1u << 20;
  // 3 MiB: on a flood the mirror jumps over, a keyframe (about 0.5 ms to build with 512 history
  // lines) per 3 MiB costs ~1.4% of the engine's CPU per MB; `snapshot --at`'s p99 over a 50.7
  // MB transcript stays at 27-37 ms (goal 50; 8 MiB gave 56 ms). docs/performance.md.
  static constexpr std::uint64_t kKeyframeStreamBytes = 3u << 20;
  static_assert(kCoastJumpBytes == kKeyframeStreamBytes, "one landing per keyframe (above)");
  static constexpr std::chrono::seconds kKeyframeActivity{30};
  static constexpr std::chrono::milliseconds kKeyframeGap{25};
  static constexpr std::uint64_t kKeyframeRetryBytes = 256u << 10;

  // `notify_fd`: the io thread's eventfd, written after a reply or events are queued. `rules`
  // (which must outlive the thread) read the agent status from titles. Starts the thread.
  // `keyframes`: off only to measure what they cost.
  explicit MirrorThread(int notify_fd, term::ScrollbackLimits limits = {},
                        const term::StatusRules& rules = term::StatusRules::defaults(),
                        bool keyframes = true);
  ~MirrorThread();  // stops and joins the thread
  MirrorThread(const MirrorThread&) = delete;
  MirrorThread& operator=(const MirrorThread&) = delete;

  // Io thread only. The mirror starts at the consumer's position(), with a fresh terminal of
  // cols x rows or the one `start.cold` rebuilds; `usage` (optional) hears what it holds.
  void add_actor(MirrorActorId id, shm::RingReader ring, std::shared_ptr<InternalConsumer> consumer,
                 std::uint16_t cols, std::uint16_t rows, MirrorStart start = {},
                 std::shared_ptr<MirrorUsage> usage = nullptr);
  void remove_actor(MirrorActorId id);
  void resize(MirrorActorId id, Cursor at, std::uint16_t cols, std::uint16_t rows);
  // A fresh terminal from `at` on (a clear, a new session); bytes before it are skipped.
  void reset(MirrorActorId id, Cursor at);
  void request_snapshot(MirrorActorId id, SnapshotRequest request);
  // A keyframe once every byte before `at` is parsed (a seal), whatever the spacing.
  void request_keyframe(MirrorActorId id, Cursor at);
  // New bytes were committed; costs an atomic exchange unless the thread sleeps (and nothing
  // when it sleeps coasting through a flood).
  void wake() noexcept;
  // Io thread, after the notify eventfd fired: the next reply, if any.
  bool next_reply(SnapshotReply& out) { return replies_.try_dequeue(out); }
  // Io thread, after the notify eventfd fired: the next batch of output events, if any.
  bool next_events(OutputEventBatch& out) { return output_events_.try_dequeue(out); }

  MirrorStats stats() const noexcept;

  // Tests only: `observer` runs on the mirror thread right after each look-ahead jump, before
  // the lines after the landing are parsed, so a test can hold the mirror in that window (a
  // request then meets the snapshot held from before the jump). Set through the command queue:
  // only the mirror thread touches it.
  void observe_jumps_for_tests(std::function<void(MirrorActorId)> observer);

 private:
  struct Add {
    MirrorActorId id;
    std::unique_ptr<shm::RingReader> ring;
    std::shared_ptr<InternalConsumer> consumer;
    std::uint16_t cols;
    std::uint16_t rows;
    MirrorStart start;
    std::shared_ptr<MirrorUsage> usage;
  };
  struct Remove {
    MirrorActorId id;
  };
  struct Resize {
    MirrorActorId id;
    Cursor at;
    std::uint16_t cols;
    std::uint16_t rows;
  };
  struct Reset {
    MirrorActorId id;
    Cursor at;
  };
  struct KeyframeAt {
    MirrorActorId id;
    Cursor at;
  };
  struct Snap {
    MirrorActorId id;
    SnapshotRequest request;
  };
  struct ObserveJumps {
    MirrorActorId id;  // unused (0)
    std::function<void(MirrorActorId)> observer;
  };
  using Command = std::variant<std::monostate /* stop */, Add, Remove, Resize, Reset, KeyframeAt,
                               Snap, ObserveJumps>;
  struct Slot;

  void send(Command command);
  void run();
  bool drain_commands();
  bool pump(Slot& slot, std::size_t budget);
  bool look_ahead(Slot& slot, Cursor end, std::size_t& budget, std::uint64_t jump_at_least);
  void answer_ready(Slot& slot);
  bool wants_held_snapshot(const Slot& slot) const;
  // Queues the answer to `r` (stamped with when it was queued) and wakes the io thread.
  void reply(const SnapshotRequest& r, bool found, term::MirrorSnapshot taken = {},
             std::chrono::steady_clock::time_point started = {});
  void reply(SnapshotReply r);
  // Hands the output events the slot's mirror read (those ready at `now_ms`) to the io thread.
  void send_output_events(Slot& slot, std::int64_t now_ms);
  // The terminal `cold` rebuilds, continuing at `start`; null when it cannot (a fresh one then).
  std::unique_ptr<term::Mirror> resume(const MirrorStart::Cold& cold, Cursor start) const;
  // Takes a keyframe when one is due and the mirror can (docs/recorder.md).
  void maybe_keyframe(Slot& slot, std::int64_t now_ms);
  bool has_work();
  // The batching tick (kCoastTickMs to kBatchTickMs) from each actor's pace since the last one
  // (paced_tick_ms); kCoastTickMs unless the last sleep was a batching one too (`paced`).
  int batch_tick_ms(bool paced);

  int notify_fd_;
  WakeSignal wake_;  // with the rings' committed cursors and commands_ (wake_signal.hpp)
  term::ScrollbackLimits limits_;
  const term::StatusRules* rules_;
  bool keyframes_;
  moodycamel::ConcurrentQueue<Command> commands_;
  moodycamel::ConcurrentQueue<SnapshotReply> replies_;
  moodycamel::ConcurrentQueue<OutputEventBatch> output_events_;
  // A hint that commands_ may hold something: set after an enqueue, cleared before a drain.
  // Only ends a turn early (relaxed: the queue itself orders the command's contents).
  std::atomic<bool> command_waiting_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> stat_bytes_{0};
  std::atomic<std::uint64_t> stat_skipped_{0};
  std::atomic<std::uint64_t> stat_resyncs_{0};
  std::atomic<std::uint64_t> stat_snapshots_{0};
  std::atomic<std::uint64_t> stat_held_snapshots_{0};
  std::atomic<std::uint64_t> stat_keyframes_{0};
  std::vector<std::unique_ptr<Slot>> slots_;               // mirror thread only
  std::function<void(MirrorActorId)> jump_observer_;       // mirror thread only
  std::chrono::steady_clock::time_point last_batch_tick_;  // mirror thread only
  bool batch_ticking_ = false;                             // mirror thread only
  std::thread thread_;
};

}  // namespace backscroll::engine
