// Deleting an actor (docs/transcripts.md): once its session is sealed, the mirror settles and
// gives its final plain text, the deletion snapshot (<actor>.scrollback, <actor>.snapshot.json)
// is written, best effort, and only then are the delete requests answered and the actor
// removed. A failed write is reported in the answer (`snapshot_error`) and the log; the
// deletion goes on. Io thread.
#include "engine/deletion_archive.hpp"
#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/wall_clock.hpp"

namespace backscroll::engine {

using control::Json;

void Engine::begin_deletion(Actor& actor, std::vector<Deferred> waiters) {
  // A copy: finish_deletion() removes the actor, whose name a reference would outlive.
  const std::string name = actor.name();  // NOLINT(performance-unnecessary-copy-initialization)
  deletions_[name] = std::move(waiters);
  end_leftovers(actor);  // what its last session left running ends with it
  const auto m = mirror_ids_.find(name);
  if (!mirror_ || m == mirror_ids_.end()) return finish_deletion(name, std::nullopt);
  SnapshotRequest request;
  request.token = next_id_++;
  deletion_texts_.emplace(request.token, name);   // answered by answer_snapshots()
  request.not_before = actor.ring().committed();  // every byte the session printed
  request.plain_text = true;
  mirror_->request_snapshot(m->second, request);
}

void Engine::finish_deletion(const std::string& name, std::optional<std::string> scrollback) {
  auto node = deletions_.extract(name);
  if (node.empty()) return;
  Json answer{{"actor", name}};
  if (const auto a = actors_.find(name); a != actors_.end()) {
    const Actor& actor = *a->second;
    const ActorRecord record = ActorRecord::of(actor);
    DeletionArchive archive{record, actor.ring().floor(), std::move(scrollback), wall_clock_ms(),
                            record.spec.cwd};
    if (!actor.last_working_directory().empty()) {
      archive.record.spec.cwd = actor.last_working_directory();
    }
    if (const auto cached = cache_.range(name); cached && cached->first < archive.floor) {
      archive.floor = cached->first;
    }
    const auto written = write_deletion_archive(places_.deleted_dir(), archive);
    if (written) {
      answer["snapshot"] = (places_.deleted_dir() / (name + ".snapshot.json")).string();
    } else {
      answer["snapshot_error"] = written.error().describe();
      log(LogLevel::warn, "actor {}: deletion snapshot not written: {}", name,
          written.error().describe());
    }
  }
  for (const Deferred& d : node.mapped()) {
    control_->reply(d.connection, control::ok_response(d.id, answer));
  }
  remove_actor(name);
}

void Engine::purge_deleted() {
  const std::size_t purged = purge_deletion_archives(places_.deleted_dir(), settings_.retention,
                                                     std::chrono::system_clock::now());
  if (purged > 0) log(LogLevel::info, "purged {} deletion snapshot files", purged);
  timers_.schedule(TimerQueue::Clock::now() + std::chrono::hours(1), [this] { purge_deleted(); });
}

}  // namespace backscroll::engine
