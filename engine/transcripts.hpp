// Transcripts: the io thread's side of durable history (docs/transcripts.md, "In the engine").
// It owns the writer thread and, per actor, the folder it keeps, the marks the writer gets in
// stream order (session starts, clears, actor records, seals), the seals awaiting their sync,
// the gaps known in each transcript, and the folders a restarted engine brings back. Without
// persistence it keeps nothing and every call is a no-op. Io thread.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/actor.hpp"
#include "engine/store/transcript_store.hpp"
#include "engine/transcript_writer.hpp"
#include "shm/control_frame.hpp"

namespace backscroll::engine {

// What the writer thread's events mean to the rest of the engine.
class TranscriptListener {
 public:
  virtual ~TranscriptListener() = default;
  // The live actor of that name, or null (deleted meanwhile).
  virtual Actor* transcript_actor(const std::string& name) noexcept = 0;
  // A `damaged` or `archive_error` event for every subscriber.
  virtual void transcript_event(const control::Json& event) = 0;
  // A seal the writer made durable (or could not: `durable` false).
  virtual void transcript_sealed(Actor& actor, const shm::SessionRecord& session, bool durable) = 0;
};

// An actor a transcript folder holds, ready to be brought back (Transcripts::restorable).
struct RestorableActor {
  std::string name;
  ActorPast past;  // cursors continue at past.start, every session sealed
  std::filesystem::path folder;
  store::TranscriptStore store;
  Cursor cleared_at{0};
  std::vector<store::TranscriptGap> damaged;  // oldest first
  std::vector<std::string> annex;             // the recording's records (durable_recording.hpp)
};

class Transcripts {
 public:
  // `persist` off: keeps nothing. `notify_fd` wakes the io thread for the writer's events.
  Transcripts(std::filesystem::path root, store::TranscriptOptions options, bool persist,
              int notify_fd, TranscriptListener& listener);
  ~Transcripts();
  Transcripts(const Transcripts&) = delete;
  Transcripts& operator=(const Transcripts&) = delete;

  // True while persistence is on (it goes off when the root folder cannot be made).
  bool enabled() const noexcept { return writer_ != nullptr; }

  // Every actor the root folder holds that can be restored; the others are logged and left as
  // they are. Once, at engine start. Turns persistence off when the root cannot be made.
  std::vector<RestorableActor> restorable();
  // Keeps `actor`, created from `restored`, from its next byte on.
  void adopt(Actor& actor, RestorableActor restored);
  // Keeps a new actor, moving aside a folder an earlier actor left under its name.
  void add(Actor& actor);
  bool keeps(const std::string& actor) const { return kept_.count(actor) > 0; }

  // Marks, in stream order at the actor's committed cursor.
  void save_record(const Actor& actor);
  void new_session(const Actor& actor, const shm::SessionRecord& session);
  // A record of the actor's recording, kept in its transcript's annex.
  void annex(const Actor& actor, std::string record);
  // Durable before it returns: a crash cannot bring back what the clear took.
  void clear(const Actor& actor, Cursor floor);
  // Starts the two-phase seal: false when the actor has no transcript (sealed at once).
  bool seal(const Actor& actor, const shm::SessionRecord& session);
  bool seal_pending(const std::string& actor) const;
  bool seals_pending() const noexcept { return !pending_seals_.empty(); }
  // Stops keeping the actor; its folder is renamed at once and deleted by the writer thread.
  void remove(const std::string& actor);

  // Bytes [from, limit) of the actor's transcript, for history below its ring's floor: up to
  // the next known gap, data_lost inside one, cursor_expired below the last clear.
  Result<std::string> read(const Actor& actor, Cursor from, Cursor limit, std::size_t max_bytes);
  // The status fields `persist`, `archive_error`, `unarchived_bytes` and `transcript`.
  control::Json status(const Actor& actor) const;

  // Handles the writer's events (leases, seals, failures); on the io thread's wake-up.
  void answer();
  void wake() noexcept;
  // How far the writer has taken `actor`'s stream (written, not necessarily synced); nullopt
  // when it keeps no transcript of it.
  std::optional<Cursor> written_to(const std::string& actor) const;
  // Joins the writer thread.
  void stop() noexcept { writer_.reset(); }

 private:
  struct Kept {
    WriterActorId id = 0;          // 0: not written (the folder could not be opened)
    std::filesystem::path folder;  // empty: nothing there is this actor's
    Cursor cleared_at{0};          // history never reads the transcript below the last clear
    std::optional<std::string> archive_error;
    Cursor archived_to{0};  // with archive_error: bytes from here on are in memory only
    std::vector<store::TranscriptGap> damaged;  // found at restore or by a read since, oldest first
    std::shared_ptr<InternalConsumer> consumer{};  // the writer's progress, while it writes
  };
  struct PendingSeal {
    std::string actor;
    shm::SessionRecord session;
  };

  // Records a gap (once): the status, a log warning, a `damaged` event.
  void report_damage(const std::string& actor, const store::TranscriptGap& gap);
  void archive_failed(const std::string& actor, const WriterEvent& e);
  const Kept* written(const std::string& actor) const;

  std::filesystem::path root_;
  store::TranscriptOptions options_;
  TranscriptListener& listener_;
  std::unique_ptr<TranscriptWriter> writer_;
  std::map<std::string, Kept> kept_;
  std::map<std::uint64_t, PendingSeal> pending_seals_;  // by token, until the writer synced
  std::uint64_t next_id_ = 1;  // writer ids, seal tokens, trash folder names
};

}  // namespace backscroll::engine
