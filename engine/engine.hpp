// Engine: the daemon backscrolld (docs/architecture.md). It owns the io thread's loop, timers, the
// control server and every actor, routes control requests to actors, fans events out to
// subscribers and runs the clean shutdown (stop, drain and seal every actor, close the rings).
// Everything here runs on the io thread; other threads reach it only through the consumer
// notify eventfd and signals (signalfd).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/actor.hpp"
#include "engine/control_server.hpp"
#include "engine/mirror_thread.hpp"
#include "engine/runtime_dir.hpp"
#include "engine/store/session_cache.hpp"
#include "engine/timer_queue.hpp"
#include "engine/transcript_writer.hpp"
#include "engine/uring_loop.hpp"
#include "shm/places.hpp"

namespace backscroll::engine {

struct EngineSettings {
  ActorSettings actor;
  // The mirror thread (snapshots). Off only for benchmarks that measure the drain without it:
  // snapshots then answer raw_replay with reason "no_mirror".
  bool mirror = true;
  term::ScrollbackLimits scrollback;
  // History lines in a snapshot when the request names none (settings.yaml
  // snapshot.scrollback_lines; at most kMaxSnapshotScrollback).
  std::uint64_t snapshot_scrollback = 512;
  // Durable transcripts (settings.yaml terminal_transcript.persist): off, history lives in
  // memory only and every engine start is a new epoch.
  bool persist = false;
  store::TranscriptOptions transcript;  // retain_bytes = per_actor_bytes
  // Deletion snapshots older than this are purged (settings.yaml retention_days).
  std::chrono::hours retention{24 * 7};
  // A stopped actor's ring is released this long after its seal (its tail stays in the
  // completed-session cache, everything retained in its transcript).
  std::chrono::milliseconds release_idle_ring{60'000};
  // After stop requests at shutdown, give up waiting for seals after grace + drain + this.
  std::chrono::milliseconds shutdown_slack{2000};
};

inline constexpr std::size_t kMaxIdBytes = 256;                 // a request id's size
inline constexpr std::size_t kMaxDeferredPerConnection = 64;    // stop/restart/delete awaiting seal
inline constexpr std::uint64_t kMaxGraceMs = 600'000;           // a stop's grace period
inline constexpr std::uint64_t kMaxSnapshotScrollback = 10'000; // history lines per snapshot
inline constexpr std::size_t kMaxPendingSnapshotsPerConnection = 64;

class Engine final : public ActorHost, public RequestHandler {
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
  void on_committed(Actor& actor) noexcept override;
  void on_exited(Actor& actor, const shm::SessionRecord& session) noexcept override;
  void on_sealed(Actor& actor, const shm::SessionRecord& session) noexcept override;

  // RequestHandler
  void on_request(ConnectionId connection, control::Frame request) noexcept override;
  void on_disconnect(ConnectionId connection) noexcept override;

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
  Result<control::Json> op_input(const control::Frame& request);
  Result<control::Json> op_resize(const control::Json& request);
  Result<control::Json> op_clear(const control::Json& request);
  Result<control::Json> op_history(ConnectionId connection, const control::Json& request);
  // stop / restart / delete: replies now when idle, else when sealed.
  Result<control::Json> op_lifecycle(ConnectionId connection, const control::Json& request,
                                     Deferred::Kind kind);
  // Attachments and snapshots (attach_ops.cpp).
  Result<control::Json> op_snapshot(ConnectionId connection, const control::Json& request);
  Result<control::Json> op_attach(ConnectionId connection, const control::Json& request);
  Result<control::Json> op_detach(ConnectionId connection, const control::Json& request);
  // What a snapshot request asks for, checked before anything changes.
  struct SnapshotAsk {
    control::Json id;                // the request's, echoed in the answer
    std::uint64_t scrollback = 0;    // history lines
    const char* raw_reason = nullptr;  // "client": no snapshot_v1 in "formats"
  };
  Result<SnapshotAsk> check_snapshot_request(ConnectionId connection,
                                             const control::Json& request) const;
  // Asks the mirror for a snapshot of `actor`, answered on `connection` with `reply` merged in.
  // Returns the answer when it is known at once (raw replay), else null (answer_snapshots()).
  control::Json request_snapshot(ConnectionId connection, const SnapshotAsk& ask,
                                 const Actor& actor, Cursor not_before, control::Json reply);
  // Size ownership (ownership_ops.cpp, docs/protocol.md "Size ownership").
  Result<control::Json> op_take_control(ConnectionId connection, const control::Json& request);
  // The request's `attachment` when it is one of this connection's, else bad_request.
  Result<std::uint64_t> own_attachment(ConnectionId connection, const control::Json& request) const;
  // A resize must come from the actor's owner, or from anyone while it has no controller.
  Result<void> check_resize_owner(const Actor& actor, const control::Json& request) const;
  // The actor's owner: its controller attachment that took control last.
  std::optional<std::uint64_t> owner_of(const std::string& actor) const;
  // `attachment` (a controller of `actor`) becomes the owner; the event `controller` says why.
  void make_owner(Actor& actor, std::uint64_t attachment, const char* reason);
  // Resizes a live actor to its owner's recorded size when it differs; true when it did.
  bool apply_owner_size(Actor& actor);
  // Ends an attachment (detach, its connection closed); an owner leaving hands control back.
  void end_attachment(std::uint64_t attachment);
  // An event about `actor` to every subscriber and to every other connection holding one of
  // its attachments (each connection once).
  void notify_attached(const std::string& actor, const control::Json& event);
  void answer_snapshots();
  // History below the ring's floor: the completed-session cache, then the transcript.
  Result<std::string> older_history(const Actor& actor, Cursor from, Cursor to,
                                    std::size_t max_bytes);
  // At a seal: the session's tail into the cache, the ring's release scheduled.
  void keep_sealed_tail(Actor& actor, const shm::SessionRecord& session);
  void release_idle_ring(const std::string& actor);
  // Deletion (deletion_ops.cpp): the mirror's final plain text first, then the deletion
  // snapshot files, the answers and the removal.
  void begin_deletion(Actor& actor, std::vector<Deferred> waiters);
  // True when the reply answers a deletion's text request (and finishes that deletion).
  bool answer_deletion(SnapshotReply& reply);
  void finish_deletion(const std::string& actor, std::optional<std::string> scrollback);
  // Purges deletion snapshots older than the retention, now and every hour.
  void purge_deleted();
  // Resizes the PTY, then tells the mirror at the committed cursor (stream order) and the
  // actor's clients (event `resized`).
  Result<void> resize_actor(Actor& actor, WindowSize size);
  void mirror_add(Actor& actor);
  void mirror_reset(const Actor& actor, Cursor at);
  // Durable transcripts (transcript_ops.cpp); each does nothing without persistence.
  // Brings back every actor a transcript folder holds (at creation, before any request).
  void restore_actors();
  // Opens a new actor's transcript folder (moving aside one an earlier actor left) and adds it
  // to the writer thread, keeping the ring from the current session on.
  void transcript_add(Actor& actor);
  // Sends the actor record as of the committed cursor (stream order).
  void transcript_record(const Actor& actor);
  void transcript_session(const Actor& actor, const shm::SessionRecord& session);
  void transcript_clear(const Actor& actor, Cursor floor);
  void transcript_remove(const std::string& actor);
  // Bytes [from, limit) of `actor`'s transcript, for history below the ring's floor; up to the
  // next gap, and data_lost inside one.
  Result<std::string> transcript_history(const Actor& actor, Cursor from, Cursor limit,
                                         std::size_t max_bytes);
  // Records a gap in `actor`'s transcript (once): the status list, a log warning, a `damaged`
  // event.
  void report_damage(const std::string& actor, const store::TranscriptGap& gap);
  // The writer's events: seals become reports, failures archive_error.
  void answer_writer();
  bool seal_pending(const std::string& actor) const;
  // A seal the writer made durable (or could not): events, then the deferred stop/restart/delete.
  void report_sealed(Actor& actor, const shm::SessionRecord& session, bool durable);
  void drop_attachments(const std::string& actor);

  Result<Actor*> find_actor(const control::Json& request) const;
  control::Json status_of(const Actor& actor) const;
  void finish_deferred(Actor& actor, const shm::SessionRecord& session);
  void remove_actor(const std::string& name);
  void broadcast(const control::Json& event);
  void begin_shutdown() noexcept;
  bool shutdown_complete() const noexcept;
  void on_signal(int result) noexcept;
  void on_notify(int result) noexcept;

  Places places_;
  EngineSettings settings_;
  RuntimeDir dir_;
  std::unique_ptr<UringLoop> loop_;
  TimerQueue timers_;
  int signal_fd_;
  int notify_fd_;  // eventfd: consumer threads and request_shutdown() wake the io thread
  std::unique_ptr<ControlServer> server_;
  std::map<std::string, std::unique_ptr<Actor>> actors_;
  // Deleted actors whose ops are still in flight; destroyed once idle.
  std::vector<std::unique_ptr<Actor>> graveyard_;
  std::multimap<std::string, Deferred> deferred_;
  struct PendingDeletion {
    std::vector<Deferred> waiters;  // delete requests, answered once the files are written
    std::uint64_t token = 0;        // the mirror's text request
  };
  std::map<std::string, PendingDeletion> deletions_;
  // Attachments (docs/design.md, "Attachments and size"). Ids are never reused. A controller
  // records the size it asked for (its attach's, else the actor's then; its own resizes update it).
  struct Attachment {
    std::string actor;
    ConnectionId connection;
    bool controller;
    WindowSize size{};  // controllers only
  };
  std::map<std::uint64_t, Attachment> attachments_;
  // Per actor, its controller attachments in the order they last took control: the owner is
  // the last; a displaced one's resize is refused (stale_controller). Never an empty vector.
  std::map<std::string, std::vector<std::uint64_t>> controllers_;
  // Snapshots the mirror thread is building, by token.
  struct PendingSnapshot {
    ConnectionId connection;
    control::Json id;
    std::string actor;
    control::Json reply;  // fields the answer carries besides the snapshot's (attach)
  };
  std::map<std::uint64_t, PendingSnapshot> pending_snapshots_;
  store::SessionCache cache_;  // stopped actors' tails
  std::unique_ptr<TranscriptWriter> writer_;  // with persistence only
  struct Transcript {
    WriterActorId id = 0;          // 0: not kept (the folder could not be opened)
    std::filesystem::path folder;
    Cursor cleared_at{0};          // history never reads the transcript below the last clear
    std::optional<std::string> archive_error;
    Cursor archived_to{0};  // with archive_error: bytes from here on are in memory only
    std::vector<store::TranscriptGap> damaged;  // found at restore or by a read since, oldest first
  };
  std::map<std::string, Transcript> transcripts_;
  struct PendingSeal {
    std::string actor;
    shm::SessionRecord session;
  };
  std::map<std::uint64_t, PendingSeal> pending_seals_;  // by token, until the writer synced
  std::unique_ptr<MirrorThread> mirror_;
  std::map<std::string, MirrorActorId> mirror_ids_;
  std::uint64_t next_id_ = 1;  // attachment ids, snapshot and seal tokens, mirror and writer ids
  bool workers_wake_owed_ = false;
  std::set<ConnectionId> subscribers_;
  std::vector<Actor*> committed_;  // actors with commits in this batch (wake once each)
  bool shutting_down_ = false;
  bool stopping_loop_ = false;
  std::chrono::steady_clock::time_point shutdown_deadline_{};

  std::array<std::byte, 128> signal_buffer_{};
  std::uint64_t notify_buffer_ = 0;
  std::atomic<bool> shutdown_requested_{false};
  OpSlot<&Engine::on_signal> signal_op_{this};
  OpSlot<&Engine::on_notify> notify_op_{this};
};

}  // namespace backscroll::engine
