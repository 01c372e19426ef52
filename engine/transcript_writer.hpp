// TranscriptWriter: the engine's writer thread (docs/transcripts.md, "The writer thread"). It
// keeps, per actor, a TranscriptStore fed from the actor's ring in place (a read-only RingReader),
// in turns of at most kBatchBytes per actor. Each actor's writer is an internal consumer: it never
// loses a byte while healthy, and the consumer gate pauses the PTY while it is too far behind.
//
// Session starts, clears and seals reach it as events at the committed cursor where the io
// thread handled them (the MirrorThread's rule, docs/memory-ordering.md): every byte before the
// cursor is appended first. A seal is answered once everything before its cursor is appended
// and synced (fdatasync + folder fsync): the io thread reports the session sealed only then.
//
// Cursor leases (lease_file.hpp): while a session runs, the io thread commits bytes only below
// a limit this thread made durable first. A session's start writes an open lease and grants it
// (a `lease` event tagged with the session); the thread renews it, ahead of need, while the
// session's bytes come; its seal writes a closed lease at the session's end, after the bytes
// are synced. Grants are tagged with their session, so one granted before a seal never lets the
// next session read before its own open lease is durable.
//
// On an I/O error (a full disk, a removed folder) the actor's transcript is given up: its
// consumer detaches (the actor drains at full speed, history stays in memory), an archive_error
// event says why, and later seals are answered at once, not durable.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <concurrentqueue/concurrentqueue.h>

#include "engine/consumer_gate.hpp"
#include "engine/store/lease_file.hpp"
#include "engine/store/transcript_store.hpp"
#include "engine/wake_signal.hpp"
#include "shm/ring_reader.hpp"

namespace backscroll::engine {

using WriterActorId = std::uint64_t;

struct WriterEvent {
  enum class Kind : std::uint8_t { sealed, archive_error, lease };
  Kind kind = Kind::sealed;
  WriterActorId id = 0;
  std::uint64_t token = 0;    // sealed: the seal request's token
  bool durable = false;       // sealed: every byte before the seal's cursor is on disk, synced
  std::string error;          // archive_error: what failed
  Cursor archived_to{0};      // archive_error: every byte before it was written to the transcript,
                              // none after
  std::uint64_t session = 0;  // lease: the session it is for
  Cursor lease{0};            // lease: the session may commit bytes below this cursor
};

class TranscriptWriter {
 public:
  // Bytes appended for one actor before the next actor's turn.
  static constexpr std::size_t kBatchBytes = 256 * 1024;
  // While bytes keep coming (some were appended within kStreamingWindow), the thread looks for
  // new ones on a tick instead of being woken by each commit (one per PTY read, ~4 KiB):
  // appends are larger, and the io thread and this one spare a wake-up per read. The tick is
  // kStreamingTickMs, shorter when an actor's bytes came fast enough since the last one to fill
  // a quarter of its ring sooner, but at least 1 ms (so the consumer gate seldom pauses a PTY
  // for this thread's sleep; a ring small enough to fill a quarter within 1 ms still may be). 2 ms
  // before 2026-12-04: the thread woke 8-10 times per MB of a flood and spent ~0.5 ms more per MB
  // (docs/performance.md). Marks (sessions, clears, seals) still wake it at once.
  static constexpr std::chrono::milliseconds kStreamingWindow{20};
  static constexpr int kStreamingTickMs = 10;
  // A lease reaches this far past the committed cursor (at least twice the ring), and is renewed
  // once less than half of it is left: one small fdatasync per ~8 MiB or more of a flood, before
  // the PTY could ever wait for it.
  static constexpr std::uint64_t kMinLeaseBytes = 16u << 20;
  // Bytes gone from the ring are a clear's, whose mark follows within microseconds; after this
  // long without one, the transcript is given up (a lap the gate failed to prevent).
  static constexpr std::chrono::milliseconds kClearMarkWait{1000};
  static constexpr std::uint64_t lease_bytes(std::uint64_t ring_capacity) noexcept {
    return std::max(kMinLeaseBytes, 2 * ring_capacity);
  }

  // `notify_fd`: the io thread's eventfd, written after an event is queued. Starts the thread.
  explicit TranscriptWriter(int notify_fd);
  // Stops and joins the thread once everything committed and every mark sent is on disk, synced.
  ~TranscriptWriter();
  TranscriptWriter(const TranscriptWriter&) = delete;
  TranscriptWriter& operator=(const TranscriptWriter&) = delete;

  // io thread only, in stream order.
  // Keeps the ring's bytes from the consumer's position on, as `session` of `epoch`, with no
  // session running: the next one starts with new_session, even the one a spawn starts.
  void add_actor(WriterActorId id, shm::RingReader ring, std::shared_ptr<InternalConsumer> consumer,
                 store::TranscriptStore store, std::uint64_t epoch, std::uint64_t session);
  // Stops keeping the actor; with a non-empty `erase`, then deletes that folder (a delete moves
  // the actor's folder out of the way first, so a new actor of the same name never meets it).
  void remove_actor(WriterActorId id, std::filesystem::path erase = {});
  // Bytes from `at` on belong to `session`, which may commit nothing until its lease event.
  void new_session(WriterActorId id, Cursor at, std::uint64_t session);
  // The bytes before `at` were cleared: the transcript is deleted, keeping goes on from `at`.
  void clear(WriterActorId id, Cursor at);
  // Replaces the actor record (actor.json) once every byte before `at` is appended.
  void save_record(WriterActorId id, Cursor at, std::string text);
  // Appends a record to the transcript's annex (the flight recorder's keyframes and events)
  // once every byte before `at` is appended; durable with the next seal.
  void annex(WriterActorId id, Cursor at, std::string record);
  // A `sealed` event with `token` once every byte before `end` is appended and synced.
  void seal(WriterActorId id, Cursor end, std::uint64_t token);
  // Wakes the thread after new bytes were committed (once per batch of commits), unless it is
  // streaming (kStreamingTickMs).
  void wake() noexcept { wake_.wake_for_data(); }

  // io thread: the next event, if any.
  bool next_event(WriterEvent& out) { return events_.try_dequeue(out); }

 private:
  struct Add {
    WriterActorId id;
    std::unique_ptr<shm::RingReader> ring;
    std::shared_ptr<InternalConsumer> consumer;
    std::unique_ptr<store::TranscriptStore> store;
    std::uint64_t epoch;
    std::uint64_t session;
  };
  struct Remove {
    WriterActorId id;
    std::filesystem::path erase;
  };
  struct Mark {  // an event in the stream: at its cursor
    enum class Kind : std::uint8_t { session, clear, record, annex, seal };
    WriterActorId id;
    Kind kind;
    Cursor at;
    std::uint64_t value = 0;  // session: its id; seal: the token
    std::string text{};       // record: the actor record; annex: the annex record
  };
  using Command = std::variant<std::monostate /* stop */, Add, Remove, Mark>;
  struct Slot;

  void send(Command command);
  void run();
  // After the stop command: every committed byte appended, every mark applied, stores synced.
  void finish();
  bool drain_commands();
  // Appends the slot's bytes up to `limit` (at most `budget`) and applies the marks they
  // reach; whether another round is due at once (see the definition).
  bool pump(Slot& slot, std::size_t budget);
  bool apply_due_marks(Slot& slot);
  // Writes `lease` durably; false after giving the transcript up.
  bool write_lease(Slot& slot, store::CursorLease lease);
  // Bytes the writer still needs are gone from the ring (zeroed by a clear, which also marks
  // them overwritten): applies the marks up to and including the queued clear, skipping those
  // bytes. False when no clear is queued.
  bool skip_to_clear(Slot& slot);
  // Whether the slot's bytes have been gone for longer than kClearMarkWait without a clear.
  static bool waited_too_long(Slot& slot);
  // Whether the slot's running session needs a longer lease: less than half a span is left
  // (and the cursor space has room for more).
  static bool lease_due(const Slot& slot, Cursor committed);
  // Writes an open lease for the slot's session reaching lease_bytes() past `committed` and
  // grants it. False after giving up.
  bool extend_lease(Slot& slot, Cursor committed);
  void give_up(Slot& slot, const std::string& why);
  void emit(WriterEvent e);
  bool has_work();

  int notify_fd_;
  WakeSignal wake_;  // with the rings' committed cursors and commands_ (wake_signal.hpp)
  moodycamel::ConcurrentQueue<Command> commands_;
  moodycamel::ConcurrentQueue<WriterEvent> events_;
  std::vector<std::unique_ptr<Slot>> slots_;           // writer thread only
  std::chrono::steady_clock::time_point last_append_;  // writer thread only
  std::chrono::steady_clock::time_point last_sleep_;   // writer thread only
  bool streaming_ = false;  // writer thread only: this sleep waits for the tick, not for bytes
  // The streaming tick (kStreamingTickMs or less) from each actor's rate since the last sleep,
  // which `now` starts.
  int streaming_tick_ms(std::chrono::steady_clock::time_point now);
  std::thread thread_;
};

}  // namespace backscroll::engine
