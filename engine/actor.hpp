// Actor: one named, long-lived slot that runs one program at a time on a PTY (docs/design.md,
// "Actors", "Rings" and "Sessions"). It owns the actor's ring (which outlives every session), the
// live session's PTY master, pidfd and input queue, and the gate of its internal consumers.
// Io thread only. Session lifecycle:
//
//   start() ──▶ running ──stop()──▶ stopping ──(exit)──▶ draining ──(EOF/EIO or drain window)──▶
//   sealed (idle)
//                  └──────────────(exit)──────────────────▲
//
// Sealing waits until no read or write of the session is in flight, so bytes of a sealed
// session can never land past its end cursor (where the next session begins).
#pragma once

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/cgroup_tree.hpp"
#include "engine/consumer_gate.hpp"
#include "engine/foreground.hpp"
#include "engine/input_queue.hpp"
#include "engine/process_tree.hpp"
#include "engine/pty_process.hpp"
#include "engine/timer_queue.hpp"
#include "engine/uring_loop.hpp"
#include "shm/error.hpp"
#include "shm/places.hpp"
#include "shm/ring_writer.hpp"

namespace backscroll::engine {

class Actor;

// What an actor needs from the engine around it.
class ActorHost {
 public:
  virtual UringLoop& loop() noexcept = 0;
  virtual TimerQueue& timers() noexcept = 0;
  // New bytes were committed: wake the actor's readers at the end of this batch.
  virtual void on_committed(Actor& actor) noexcept = 0;
  virtual void on_exited(Actor& actor, const shm::SessionRecord& session) noexcept = 0;
  virtual void on_sealed(Actor& actor, const shm::SessionRecord& session) noexcept = 0;
  // Where actors' cgroups are made (cgroup_tree.hpp); null: none, the token and the subreaper
  // find the actors' processes alone.
  virtual CgroupTree* cgroups() noexcept = 0;
  // SIGKILL at `at` to what the actor's ended sessions still run (Actor::leftovers): a stopped
  // session's other processes get the rest of its grace period, as its leader did. Shutdown
  // waits for it.
  virtual void kill_leftovers_at(const Actor& actor,
                                 std::chrono::steady_clock::time_point at) noexcept = 0;

 protected:
  ~ActorHost() = default;
};

struct ActorSettings {
  std::uint64_t ring_bytes = 10'485'760;         // per_actor_bytes (docs/settings.md)
  std::chrono::milliseconds grace{3000};         // SIGHUP -> SIGKILL
  std::chrono::milliseconds drain_window{1000};  // after exit, read until EOF or this passes
  std::size_t input_capacity = 1 << 20;
  std::size_t read_chunk = 64 * 1024;
  // Durable cursor leases (persistence on): each session commits nothing until its lease is
  // granted (grant_lease), and then only below the granted cursor.
  bool leased_cursors = false;
  // A new actor's first cursor: 0, except in tests of the cursor space's far end
  // (backscrolld --first-cursor).
  Cursor first_cursor{0};
};

// What a restarted engine knows of an actor from its durable transcript (ActorRecord): the
// actor comes back idle in the same cursor space.
struct ActorPast {
  std::uint64_t epoch = 0;
  Cursor start{0};  // the ring's first cursor: where the stream continues (resume_after)
  SpawnSpec spec;
  std::vector<shm::SessionRecord> sessions;  // sealed, oldest first
  std::int64_t created_ms = 0;
};

class Actor {
 public:
  // Creates the ring (shm::RingWriter::create). The actor starts idle; with `past`, in its old
  // cursor space.
  static Result<std::unique_ptr<Actor>> create(ActorHost& host, std::string name,
                                               const ActorSettings& settings,
                                               int consumer_notify_fd,
                                               const ActorPast* past = nullptr);
  ~Actor();
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  const std::string& name() const noexcept { return name_; }
  shm::ActorState state() const noexcept { return state_; }
  bool live() const noexcept { return live_ != nullptr; }
  // True while an io_uring op still refers to this actor (it must not be destroyed).
  bool busy() const noexcept;

  // Starts a new session at the committed cursor. Idle actors only. With leased cursors, its
  // output waits in the PTY until the session's lease is granted.
  Result<shm::SessionRecord> start(SpawnSpec spec);
  // The writer thread made a lease durable: `session` may commit bytes below `limit`. A grant
  // for another session (one sealed since) changes nothing.
  void grant_lease(std::uint64_t session, Cursor limit) noexcept;
  // No lease any more (the transcript was given up): reads go on unbounded.
  void drop_lease() noexcept;
  // Reads wait for the writer thread's next grant.
  bool lease_used_up() const noexcept;
  // Reads wait: for a consumer (the gate), a lease, or hold_output().
  bool reads_held() const noexcept;
  // `sig` (SIGHUP unless the request named another) to every process of the session now (its
  // cgroup, its process group, its descendants and every process that carries its token:
  // cgroup_tree.hpp, process_tree.hpp), SIGKILL to them after `grace` (the leader's group at
  // once if the leader ends sooner, the others still at the end of `grace`). A second stop can
  // only shorten the grace period. Nothing when idle.
  void stop(std::chrono::milliseconds grace, int sig = SIGHUP);
  // SIGKILL to every process of the live session now (shutdown deadline).
  void kill_group() noexcept;
  // What the actor's programs left running after their sessions were sealed (daemons, a `nohup`
  // job): the processes in the cgroups of its ended sessions, and those the last session's
  // token finds outside them.
  struct Leftovers {
    std::vector<std::shared_ptr<ActorCgroup>> cgroups;  // those still populated
    std::vector<ProcessRef> by_token;
    bool empty() const noexcept { return cgroups.empty() && by_token.empty(); }
    // `sig` to all of them (SIGKILL: through cgroup.kill, ActorCgroup::signal).
    void signal(int sig) const;
  };
  // Nothing of a session that still runs (stop() ends that one's).
  Leftovers leftovers() const;
  // When the SIGKILL of the leftovers of a session a stop ended is due (ActorHost::
  // kill_leftovers_at); the clock's epoch when none was.
  std::chrono::steady_clock::time_point leftovers_killed_at() const noexcept {
    return leftovers_killed_at_;
  }
  // The current or last session's cgroup (cgroup_tree.hpp); null without one.
  const std::shared_ptr<ActorCgroup>& cgroup() const noexcept { return cgroup_; }
  // The live session's leader (kept as a zombie until the seal), else 0.
  pid_t leader_pid() const noexcept;

  // The foreground program (foreground.hpp) as last looked at, and when: Engine's
  // foreground_ops.cpp decides when to look. nullopt between sessions.
  struct ForegroundWatch {
    std::optional<Foreground> now;
    std::chrono::steady_clock::time_point checked_at{};
    bool scheduled = false;  // a check is due on the timer queue
  };
  ForegroundWatch& foreground_watch() noexcept { return foreground_; }

  // What send --when-idle reads (Engine::waits_for_input): when the actor last printed, and
  // whether its shell's last mark is a prompt (OSC 133;A with no ;C since). A new session
  // starts with neither.
  struct InputWait {
    std::chrono::steady_clock::time_point last_output{};
    bool at_prompt = false;
  };
  InputWait& input_wait() noexcept { return input_wait_; }
  const InputWait& input_wait() const noexcept { return input_wait_; }
  const std::optional<Foreground>& foreground() const noexcept { return foreground_.now; }
  // Looks again now; true when it changed.
  bool refresh_foreground();
  Result<std::size_t> input(std::string_view bytes, bool paste);
  Result<void> resize(WindowSize size);
  // Empties the readable range and zeroes the cleared bytes in the ring; returns the new floor
  // (= committed).
  Cursor clear();
  // Holds the output: no more is read from the PTY (the kernel keeps it) until released, and a
  // read under way is cancelled (the bytes it got are committed). A clear that keeps the screen
  // holds it while the mirror catches up with the committed cursor. The drain window after
  // the program's exit does not count while held.
  void hold_output(bool held) noexcept;
  // An idle actor's ring memory goes back to the system once every internal consumer has its
  // bytes (false while one is behind, or while a session runs): the floor rises to committed.
  bool release_ring() noexcept;
  // Bytes [from, min(to, committed)), at most max_bytes, from the ring.
  Result<std::string> history(Cursor from, Cursor to, std::size_t max_bytes) const;
  // Marks the ring closed (meta.closed) and wakes its readers: the actor is being deleted.
  // While a session runs, only at its seal (readers still get everything it prints), and then
  // before the seal itself is published, so a reader that sees the seal sees this too.
  void mark_closing() noexcept;
  // Marks the ring closed now and wakes its readers (delete, shutdown). Its memory goes with the
  // actor and the last reader's mapping.
  void close_ring() noexcept;

  // What the output says now, for the ring header's zero-copy readers (io thread; the mirror
  // reports it).
  void publish_output(const shm::OutputStatus& output) noexcept { ring_.publish_output(output); }

  std::shared_ptr<InternalConsumer> attach_consumer() { return gate_.attach(ring_.committed()); }
  // Re-checks the consumer gate (the io loop calls this after the notify eventfd fired).
  void resume_if_possible() noexcept;
  bool paused() const noexcept { return gate_.paused(); }
  // Wakes the ring's sleeping readers for bytes committed since the last wake, unless a wake went
  // out less than kWakeCoalesce ago and fewer than kWakeCoalesceBytes are new: then it returns
  // false and the caller retries at next_wake_at(). The first bytes after a quiet spell wake at
  // once; a flood wakes readers ~500 times a second instead of once per 4 KiB read, sparing a
  // context switch per read on a machine with fewer cores than busy processes (16 readers cost
  // a flood's drain ~6% with 2 ms, ~16% with 0.5 ms: docs/performance.md).
  bool wake_readers(std::chrono::steady_clock::time_point now) noexcept;
  std::chrono::steady_clock::time_point next_wake_at() const noexcept {
    return last_wake_ + kWakeCoalesce;
  }
  // Whether the engine has this actor on its list of readers owed a wake-up (io thread).
  bool wake_pending() const noexcept { return wake_pending_; }
  void set_wake_pending(bool pending) noexcept { wake_pending_ = pending; }
  static constexpr std::chrono::microseconds kWakeCoalesce{2000};
  static constexpr std::uint64_t kWakeCoalesceBytes = 1024 * 1024;

  const shm::RingWriter& ring() const noexcept { return ring_; }
  std::uint64_t epoch() const noexcept { return epoch_; }
  // When the actor was first created (wall clock, ms since the Unix epoch; kept across restarts).
  std::int64_t created_ms() const noexcept { return created_ms_; }
  const SpawnSpec& spec() const noexcept { return spec_; }
  // Sets the program later sessions (restart, a restored actor) run; the running one stays.
  void set_command(std::vector<std::string> argv) { spec_.argv = std::move(argv); }
  // Whether the actor deletes itself once its program ended (spawn --rm, --rm-always).
  enum class Removal : std::uint8_t { never, on_success, always };
  Removal removal() const noexcept { return removal_; }
  void set_removal(Removal r) noexcept { removal_ = r; }
  // Reads the live program's current directory (working_directory_of) and remembers it.
  void note_working_directory();
  // The last directory noted (it outlives the program); empty before any was read.
  const std::string& last_working_directory() const noexcept { return working_directory_; }
  WindowSize size() const noexcept { return spec_.size; }
  std::size_t input_queued() const noexcept { return input_.queued_bytes(); }
  // Every session so far, oldest first (at most kSessionHistory); `end` of a live one is 0.
  const std::vector<shm::SessionRecord>& sessions() const noexcept { return sessions_; }
  std::optional<shm::SessionRecord> current_session() const;

  static constexpr std::size_t kSessionHistory = 16;

 private:
  struct Live;
  Actor(ActorHost& host, std::string name, shm::RingWriter ring, std::uint64_t epoch,
        const ActorSettings& settings, int consumer_notify_fd);

  std::string working_directory_;  // note_working_directory()'s last answer
  std::string session_token_;      // the current or last session's (process_tree.hpp)
  // Each session runs in a cgroup of its own, never used again after it (a kill leaves a
  // cgroup that kills what is cloned into it later: docs/architecture.md, "Process trees").
  std::shared_ptr<ActorCgroup> cgroup_;                     // the current or last session's
  std::vector<std::shared_ptr<ActorCgroup>> left_cgroups_;  // earlier ones with processes left
  std::chrono::steady_clock::time_point leftovers_killed_at_{};
  ForegroundWatch foreground_;
  InputWait input_wait_;
  Removal removal_ = Removal::never;
  void submit_read() noexcept;
  void pump_input() noexcept;
  void maybe_seal() noexcept;
  void publish_meta() noexcept;
  void publish_session() noexcept;
  // `sig` to the live session's process group, to every process in the actor's cgroup, and to
  // every process the session's token finds.
  void signal_session(int sig) noexcept;
  shm::SessionRecord& session_record() noexcept { return sessions_.back(); }

  void on_read(int result) noexcept;
  void on_read_ready(int result) noexcept;
  void on_write(int result) noexcept;
  void on_write_ready(int result) noexcept;
  void on_exit(int result) noexcept;
  void on_drain_window() noexcept;

  ActorHost& host_;
  std::string name_;
  shm::RingWriter ring_;
  std::uint64_t epoch_;
  std::int64_t created_ms_;
  ActorSettings settings_;
  ConsumerGate gate_;
  InputQueue input_;
  SpawnSpec spec_;
  shm::ActorState state_ = shm::ActorState::idle;
  std::vector<shm::SessionRecord> sessions_;
  // The running session's lease (settings_.leased_cursors): the session it was granted to and
  // the cursor no commit reaches. Io thread only.
  std::uint64_t lease_session_ = 0;
  Cursor lease_limit_{0};
  std::chrono::steady_clock::time_point last_wake_{};
  bool wake_pending_ = false;
  bool closed_ = false;         // the ring is being removed (meta.closed)
  bool close_at_seal_ = false;  // mark_closing() while a session ran: closed_ set at its seal
  std::unique_ptr<Live> live_;  // the running (or draining) session's fds and timers
  // Ops in flight; each refers to this object, which must outlive them (busy()).
  bool reading_ = false;
  bool read_polling_ = false;
  bool output_held_ = false;  // hold_output()
  bool writing_ = false;
  bool write_polling_ = false;
  bool exit_polling_ = false;

  OpSlot<&Actor::on_read> read_op_{this};
  OpSlot<&Actor::on_read_ready> read_ready_op_{this};
  OpSlot<&Actor::on_write> write_op_{this};
  OpSlot<&Actor::on_write_ready> write_ready_op_{this};
  OpSlot<&Actor::on_exit> exit_op_{this};
};

}  // namespace backscroll::engine
