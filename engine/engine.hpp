// Engine: the daemon backscrolld (docs/architecture.md). It owns the io thread's loop, timers, the
// control thread and every actor, routes control requests to actors, fans events out to
// subscribers and runs the clean shutdown (stop, drain and seal every actor, close the rings).
// Everything here runs on the io thread; other threads reach it only through the notify eventfd
// (the workers' answers, the control thread's requests) and signals (signalfd).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/actor.hpp"
#include "engine/attachments.hpp"
#include "engine/control_thread.hpp"
#include "engine/memory_budget.hpp"
#include "engine/mirror_thread.hpp"
#include "engine/reader_registry.hpp"
#include "engine/recorder/recording.hpp"
#include "engine/replay_thread.hpp"
#include "engine/runtime_dir.hpp"
#include "engine/settings.hpp"
#include "engine/snapshot_lane.hpp"
#include "engine/snapshot_request.hpp"
#include "engine/store/session_cache.hpp"
#include "engine/timer_queue.hpp"
#include "engine/transcripts.hpp"
#include "engine/uring_loop.hpp"
#include "shm/places.hpp"

namespace backscroll::engine {

// {pid, command, argv, cwd}: status's `foreground`, the `foreground` event's fields.
control::Json foreground_json(const Foreground& f);

struct EngineSettings {
  ActorSettings actor;
  // The mirror thread (snapshots). Off only for benchmarks that measure the drain without it:
  // snapshots then answer raw_replay with reason "no_mirror".
  bool mirror = true;
  // The mirror thread's keyframes (docs/recorder.md). Off only to measure their cost.
  bool keyframes = true;
  term::ScrollbackLimits scrollback;
  // History lines in a snapshot when the request names none (settings.yaml
  // snapshot.scrollback_lines; at most kMaxSnapshotScrollback).
  std::uint64_t snapshot_scrollback = 512;
  // Durable transcripts (settings.yaml terminal_transcript.persist): off, history lives in
  // memory only and every engine start is a new epoch.
  bool persist = false;
  store::TranscriptOptions transcript;  // retain_bytes = per_actor_bytes
  // Each actor's event track (docs/recorder.md).
  recorder::TrackLimits track;
  // Deletion snapshots older than this are purged (settings.yaml retention_days).
  std::chrono::hours retention{24 * 7};
  // What all actors together may reserve (settings.yaml memory_budget; engine/memory_budget.hpp),
  // in bytes; 0: an eighth of the machine's RAM (memory_budget_of).
  std::uint64_t memory_budget = 0;
  // A stopped actor's ring is released this long after its seal (its tail stays in the
  // completed-session cache, everything retained in its transcript).
  std::chrono::milliseconds release_idle_ring{60'000};
  // Each actor in a cgroup of its own where the engine may make them (backscrolld --cgroups
  // auto; engine/cgroup_tree.hpp). Off (--cgroups off): the session token and the subreaper
  // alone find the actors' processes.
  bool cgroups = true;
  // After stop requests at shutdown, give up waiting for seals after grace + drain + this.
  std::chrono::milliseconds shutdown_slack{2000};
  // settings.yaml as the engine started with it, and as last applied (a reload,
  // engine/settings_reload.hpp); which of its values backscrolld's flags override.
  Settings file_at_start;
  Settings file_now;
  bool ring_bytes_from_flag = false;
  bool persist_from_flag = false;
};

inline constexpr std::size_t kMaxDeferredPerConnection = 64;  // stop/restart/delete awaiting seal
inline constexpr std::uint64_t kMaxGraceMs = 600'000;         // a stop's grace period
inline constexpr std::size_t kMaxPendingSnapshotsPerConnection = 64;
inline constexpr std::uint64_t kDefaultEventsPerReply = 1000;  // `events` without a limit
inline constexpr std::uint64_t kMaxEventsPerReply = 10'000;
// A snapshot at a past cursor replays at most this many bytes after its keyframe (keyframes
// come every 1 MiB parsed or 3 MiB of stream; more means the mirror could not take one).
inline constexpr std::uint64_t kMaxReplayBytes = 64u << 20;

class Engine final : public ActorHost, public RequestHandler, public TranscriptListener {
 public:
  // Claims the runtime directory (refusing if another engine runs), cleans up after a crashed
  // predecessor, opens the control socket and the loop.
  static Result<std::unique_ptr<Engine>> create(const Places& places, EngineSettings settings);
  ~Engine();

  // Runs until shutdown completes (SIGTERM, SIGINT or the `shutdown` op). Returns the exit code.
  int run() noexcept;
  // Thread-safe: asks the io thread to shut down (tests; signal handling uses signalfd).
  void request_shutdown() noexcept;

  // For in-process tests: an internal consumer on `actor` (io thread, before or between runs).
  std::shared_ptr<InternalConsumer> attach_consumer(const std::string& actor);

  // ActorHost
  UringLoop& loop() noexcept override { return *loop_; }
  TimerQueue& timers() noexcept override { return timers_; }
  CgroupTree* cgroups() noexcept override { return cgroups_.get(); }
  void kill_leftovers_at(const Actor& actor,
                         std::chrono::steady_clock::time_point at) noexcept override;
  void on_committed(Actor& actor) noexcept override;
  void on_exited(Actor& actor, const shm::SessionRecord& session) noexcept override;
  void on_sealed(Actor& actor, const shm::SessionRecord& session) noexcept override;

  // RequestHandler: what the control thread hands over (ControlThread::handle).
  void on_request(ConnectionId connection, control::Frame request) noexcept override;
  void on_disconnect(ConnectionId connection) noexcept override;

  // TranscriptListener
  Actor* transcript_actor(const std::string& name) noexcept override;
  void transcript_event(const control::Json& event) override { broadcast(event); }
  void transcript_sealed(Actor& actor, const shm::SessionRecord& session, bool durable) override {
    report_sealed(actor, session, durable);
  }

 private:
  // A stop/restart/delete request answered when the actor's session is sealed.
  struct Deferred {
    enum class Kind { stop, restart, remove } kind;
    ConnectionId connection;
    control::Json id;
  };

  Engine(const Places& places, EngineSettings settings, RuntimeDir dir,
         std::unique_ptr<UringLoop> loop, int signal_fd, int notify_fd);

  Result<control::Json> dispatch(ConnectionId connection, const control::Frame& request);
  Result<control::Json> op_spawn(const control::Json& request);
  Result<control::Json> op_status(const control::Json& request) const;
  Result<control::Json> op_list() const;
  // Re-reads settings.yaml and applies what can change live (engine/settings_reload.hpp):
  // {file, applied: [{key, from, to}], needs_restart: [...]}; a malformed file changes nothing.
  Result<control::Json> op_reload();
  // Readers that announce themselves (reader_ops.cpp, engine/reader_registry.hpp).
  Result<control::Json> op_reader(ConnectionId connection, const control::Json& request);
  // Status's view of an actor's consumers: each announced reader's lag, the mirror's, the
  // transcript writer's.
  control::Json readers_status(const Actor& actor) const;
  Result<control::Json> op_input(ConnectionId connection, const control::Frame& request);
  Result<control::Json> op_resize(const control::Json& request);
  // clear (clear_ops.cpp): keeps the screen unless asked not to, answered once the mirror
  // gave it (finish_clear()).
  Result<control::Json> op_clear(ConnectionId connection, const control::Json& request);
  struct PendingClear {
    std::vector<std::pair<ConnectionId, control::Json>> waiters;  // connection, request id
    std::uint64_t token = 0;                                      // of the mirror's answer
    int rounds = 0;                                               // questions asked
  };
  void ask_kept_screen(Actor& actor);
  // The old clear: the ring, the mirror and the recording from a fresh terminal at the floor.
  control::Json clear_everything(Actor& actor, const char* why);
  void finish_clear_below(Actor& actor, Cursor floor);
  // The `cleared` event and the answer's fields.
  control::Json cleared(Actor& actor, Cursor floor, bool screen_kept, const char* why);
  // The mirror's answer to a clear's question; false when `token` is none of theirs.
  bool finish_clear(std::uint64_t token, const SnapshotReply& reply);
  Result<control::Json> op_history(ConnectionId connection, const control::Json& request);
  // stop / restart / delete: replies now when idle, else when sealed.
  Result<control::Json> op_lifecycle(ConnectionId connection, const control::Json& request,
                                     Deferred::Kind kind);
  // A client's snapshot the mirror thread is building.
  struct PendingSnapshot {
    ConnectionId connection;
    control::Json id;
    std::string actor;
    control::Json reply;  // fields the answer carries besides the snapshot's (attach)
    // A request of the present screen: its options and the lane's generation for the actor
    // when asked (the lane keeps the answer if no event came since). Empty for the others.
    term::SnapshotOptions options{};
    std::optional<std::uint64_t> generation{};
    // With the request's `timing` option: when the io thread asked the mirror.
    std::optional<std::chrono::steady_clock::time_point> asked{};
  };
  // The actor's mirror changes without new bytes (an event): the lane's snapshot is stale.
  void mirror_changed(const std::string& actor);

  // Snapshots (snapshot_ops.cpp): what a request asks for, checked before anything changes.
  Result<control::Json> op_snapshot(ConnectionId connection, const control::Json& request);
  Result<SnapshotAsk> check_snapshot_request(ConnectionId connection,
                                             const control::Json& request) const;
  // Asks the mirror for a snapshot of `actor`, answered on `connection` with `reply` merged in.
  // Returns the answer when it is known at once (raw replay), else null (answer_snapshots()).
  control::Json request_snapshot(ConnectionId connection, const SnapshotAsk& ask,
                                 const Actor& actor, Cursor not_before, control::Json reply);
  // The mirror's replies, each to the request its token names: a client's snapshot or a
  // deletion's final text.
  void answer_snapshots();
  void answer_snapshot(PendingSnapshot pending, const SnapshotReply& reply);
  void mirror_add(Actor& actor, std::optional<MirrorStart::Cold> cold = std::nullopt);
  void mirror_reset(const Actor& actor, Cursor at);
  // Attachments and size ownership (attachment_ops.cpp; the table and its rules:
  // attachments.hpp).
  Result<control::Json> op_attach(ConnectionId connection, const control::Json& request);
  Result<control::Json> op_detach(ConnectionId connection, const control::Json& request);
  Result<control::Json> op_take_control(ConnectionId connection, const control::Json& request);
  // The request's `attachment` when it is one of this connection's, else bad_request.
  Result<std::uint64_t> own_attachment(ConnectionId connection, const control::Json& request) const;
  // `attachment` (a controller of `actor`) becomes the owner; the event `controller` says why.
  void make_owner(Actor& actor, std::uint64_t attachment, const char* reason);
  // Resizes a live actor to its owner's recorded size when it differs; true when it did.
  bool apply_owner_size(Actor& actor);
  // Ends an attachment (detach, its connection closed); an owner leaving hands control back.
  void end_attachment(std::uint64_t attachment);
  // An event about `actor` to every subscriber and to every other connection holding one of
  // its attachments (each connection once).
  void notify_attached(const std::string& actor, const control::Json& event);
  // Resizes the PTY, then tells the mirror at the committed cursor (stream order) and the
  // actor's clients (event `resized`).
  Result<void> resize_actor(Actor& actor, WindowSize size);
  // History (history_ops.cpp) below the ring's floor: the completed-session cache, then the
  // transcript.
  Result<std::string> older_history(const Actor& actor, Cursor from, Cursor to,
                                    std::size_t max_bytes);
  // At a seal: the session's tail into the cache, the ring's release scheduled.
  void keep_sealed_tail(Actor& actor, const shm::SessionRecord& session);
  void release_idle_ring(const std::string& actor);
  // Deletion (deletion_ops.cpp): the mirror's final plain text first, then the deletion
  // archive files, the answers and the removal.
  void begin_deletion(Actor& actor, std::vector<Deferred> waiters);
  void finish_deletion(const std::string& actor, std::optional<std::string> scrollback);
  // Purges deletion archives older than the retention, now and every hour.
  void purge_deleted();
  // Brings back every actor a transcript folder holds (at creation, before any request).
  void restore_actors();
  // A seal, once the transcript synced it (or at once without one): events, then the deferred
  // stop/restart/delete.
  void report_sealed(Actor& actor, const shm::SessionRecord& session, bool durable);

  // The event track (event_ops.cpp): records an event of `actor` and sends it to subscribers
  // (a `track` frame).
  void record_event(const std::string& actor, recorder::EventKind kind, Cursor cursor,
                    control::Json fields = control::Json::object(),
                    std::optional<std::int64_t> time_ms = std::nullopt);
  // The events the mirror thread read in the actors' output, recorded.
  void record_output_events();
  void record_spawn(const Actor& actor, const shm::SessionRecord& session);

  // send --when-idle (when_idle_ops.cpp): input held in the engine until the actor waits for
  // input, or its timeout passes (nothing is sent then).
  struct PendingSend {
    std::uint64_t id = 0;
    std::string bytes;
    bool paste = false;
    std::chrono::steady_clock::time_point queued_at;
    std::chrono::steady_clock::time_point deadline;  // max(): none
    std::chrono::milliseconds quiet{0};              // how long a quiet program counts as waiting
    ConnectionId connection = 0;
    control::Json request_id;
  };
  static constexpr std::size_t kMaxPendingSends = 16;  // per actor
  static constexpr std::chrono::milliseconds kSendTick{100};
  static constexpr std::chrono::milliseconds kDefaultQuiet{1000};
  Result<control::Json> queue_send(ConnectionId connection, const control::Frame& request,
                                   Actor& actor, bool paste);
  // Whether the actor waits for input: its agent status is idle or permission, or its shell's
  // last mark is a prompt (OSC 133;A without a ;C after it), or the program it was spawned
  // with is in the foreground and printed nothing for `quiet`.
  bool waits_for_input(const Actor& actor, std::chrono::milliseconds quiet) const;
  // Writes the first pending send of each actor that waits for input, fails the ones past
  // their deadline or whose program ended; ticks every kSendTick while any is pending.
  void deliver_sends();
  void answer_send(const PendingSend& send, Result<control::Json> answer);
  Result<control::Json> op_cancel_send(const control::Json& request);
  control::Json pending_sends_status(const std::string& actor) const;

  // The foreground program (foreground_ops.cpp): looked at on activity, at most every
  // kForegroundEvery, once more after the last.
  static constexpr std::chrono::milliseconds kForegroundEvery{250};
  void watch_foreground(Actor& actor);
  void due_foreground_check(Actor& actor, std::chrono::steady_clock::time_point at);
  // Looks now; records and announces a change.
  void check_foreground(Actor& actor);
  Result<control::Json> op_events(const control::Json& request) const;
  recorder::Recording* recording(const std::string& actor);
  // A fresh terminal from `at` on (a session's start, a clear): a keyframe of its own.
  void record_fresh_terminal(const Actor& actor, Cursor at);
  // The PTY's size changed at `at` (numbered as the mirror applies it).
  void record_size_change(const Actor& actor, Cursor at, WindowSize size);
  // A keyframe from the mirror, kept (and written to the transcript when worth it).
  void keep_keyframe(const std::string& actor, recorder::Recording& r, recorder::Keyframe keyframe);
  // A session ended at `end`: its last screen and time sample are kept durably.
  void record_session_end(const Actor& actor, Cursor end);
  // After a batch of reads: where the actor's stream was at this time (`at_time`).
  void note_activity(const Actor& actor, std::int64_t now_ms);
  // A record of the actor's recording to its transcript's annex (durable_recording.hpp).
  void keep_durably(const std::string& actor, std::string record);
  // Rebuilds a restored actor's recording from its transcript's annex; the terminal its mirror
  // starts from, if one can be rebuilt (cold restore).
  std::optional<MirrorStart::Cold> restore_recording(const Actor& actor, RestorableActor& restored);
  // Whether a session's last screen, asked of the mirror at its seal, has yet to reach the
  // transcript (shutdown waits for it, briefly).
  bool final_keyframes_owed() const;

  // The screen at a past cursor (screen_at_ops.cpp): `snapshot` with `at`, `at_time_ms` or
  // `at_event`, answered by the replay thread.
  Result<control::Json> snapshot_at(ConnectionId connection, const SnapshotAsk& ask,
                                    const Actor& actor, const control::Json& request);
  // Where a past screen is asked for: a cursor, and whether it is a session's end (a seal or
  // exit event: its last screen, not the next session's first at the same cursor).
  struct PastPoint {
    Cursor cursor{0};
    bool session_end = false;
  };
  Result<PastPoint> resolve_at(const Actor& actor, const control::Json& request);
  // Every byte of [from, to) from the ring, the cache or the transcript (history's sources).
  Result<std::string> read_range(const Actor& actor, Cursor from, Cursor to);
  void answer_replays();
  // A session started (spawn, restart): the `spawned` event and its track entry.
  void announce_spawn(const Actor& actor, const shm::SessionRecord& session);

  Result<Actor*> find_actor(const control::Json& request) const;
  // The oldest cursor `history` serves from memory (the ring, or the completed-session cache
  // once an idle ring was released); a transcript may reach further back.
  Cursor oldest_in_memory(const Actor& actor) const;
  control::Json status_of(const Actor& actor) const;
  // Memory (engine/memory_budget.hpp; memory_ops.cpp): what an actor of this size reserves,
  // what one reserves and holds now, what all reserve, and status's view of it.
  ActorMemory reserved_for(WindowSize size) const;
  ActorMemory reserved_memory(const Actor& actor) const;
  ActorMemory used_memory(const Actor& actor) const;
  std::uint64_t reserved_by_actors() const;
  control::Json memory_status(const Actor& actor) const;
  control::Json memory_status() const;
  void finish_deferred(Actor& actor, const shm::SessionRecord& session);
  void remove_actor(const std::string& name);
  void broadcast(const control::Json& event);
  void begin_shutdown() noexcept;
  // Whether `pid` is a live session's leader (kept as a zombie until its seal, never reaped as
  // an orphan).
  bool is_leader(pid_t pid) const noexcept;
  // SIGHUP now, SIGKILL after the grace period (kill_leftovers_at), to the processes the
  // actor's ended sessions left running (Actor::leftovers): at its deletion and at shutdown.
  void end_leftovers(const Actor& actor);
  // SIGKILL at `at` to `left` (the timer holds them); shutdown waits for it.
  void schedule_leftover_kill(Actor::Leftovers left, std::chrono::steady_clock::time_point at);
  // After a seal: deletes the actor at once when spawn asked for it (remove: on_success with
  // status 0, always), else after settings.yaml close_idle_after, if it is still idle in the
  // same session then.
  void schedule_removal(const Actor& actor, const shm::SessionRecord& session);
  bool shutdown_complete() const noexcept;
  void on_signal(int result) noexcept;
  void on_notify(int result) noexcept;

  Places places_;
  EngineSettings settings_;
  RuntimeDir dir_;
  std::unique_ptr<UringLoop> loop_;
  TimerQueue timers_;
  std::unique_ptr<CgroupTree> cgroups_;  // null: the actors have no cgroups
  int signal_fd_;
  // eventfd: the worker threads, the control thread and request_shutdown() wake the io thread
  int notify_fd_;
  SnapshotLane lane_;  // before control_, which answers from it
  std::unique_ptr<ControlThread> control_;
  std::map<std::string, std::unique_ptr<Actor>> actors_;
  // Deleted actors whose ops are still in flight; destroyed once idle.
  std::vector<std::unique_ptr<Actor>> graveyard_;
  std::multimap<std::string, Deferred> deferred_;
  // Actors being deleted: their delete requests, answered once the archive is written.
  std::map<std::string, std::vector<Deferred>> deletions_;
  Attachments attachments_;
  // Requests the mirror thread is answering, by token: clients' snapshots, and the final text
  // of each actor being deleted (the actor's name).
  std::map<std::uint64_t, PendingSnapshot> pending_snapshots_;
  std::map<std::uint64_t, std::string> deletion_texts_;
  std::map<std::string, PendingClear> clears_;             // by actor
  store::SessionCache cache_;                              // stopped actors' tails
  std::map<std::string, recorder::Recording> recordings_;  // per actor, while it exists
  Transcripts transcripts_;
  std::unique_ptr<MirrorThread> mirror_;
  std::unique_ptr<ReplayThread> replay_;  // with the mirror only
  std::map<std::string, MirrorActorId> mirror_ids_;
  // What status reads of an actor's mirror: what it holds, and how far it got (its consumer's
  // position, as the consumer gate sees it). By actor, with the id.
  struct MirrorWatch {
    std::shared_ptr<MirrorUsage> usage;
    std::shared_ptr<InternalConsumer> consumer;
  };
  std::map<std::string, MirrorWatch> mirror_watch_;
  ReaderRegistry readers_;     // announced shm readers (reader_ops.cpp)
  std::uint64_t next_id_ = 1;  // attachment ids, snapshot tokens, mirror ids
  bool workers_wake_owed_ = false;
  std::set<ConnectionId> subscribers_;
  std::vector<Actor*> committed_;  // actors with commits in this batch (wake once each)
  bool shutting_down_ = false;
  int leftover_kills_ = 0;  // kill_leftovers_at() SIGKILLs still due: shutdown waits for them
  std::map<std::string, std::deque<PendingSend>> pending_sends_;
  bool send_tick_ = false;  // deliver_sends() is on the timer queue
  std::uint64_t next_send_id_ = 1;
  bool stopping_loop_ = false;
  std::chrono::steady_clock::time_point shutdown_deadline_{};

  std::array<std::byte, 128> signal_buffer_{};
  std::uint64_t notify_buffer_ = 0;
  std::atomic<bool> shutdown_requested_{false};
  OpSlot<&Engine::on_signal> signal_op_{this};
  OpSlot<&Engine::on_notify> notify_op_{this};
};

}  // namespace backscroll::engine
