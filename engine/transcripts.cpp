#include "engine/transcripts.hpp"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "engine/actor_record.hpp"
#include "engine/log.hpp"
#include "engine/request_fields.hpp"
#include "engine/store/durable_file.hpp"
#include "engine/store/lease_file.hpp"
#include "engine/wall_clock.hpp"
#include "shm/actor_name.hpp"

namespace backscroll::engine {
namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kMaxRecordFileBytes = 1 << 20;

Result<ActorRecord> load_record(const fs::path& folder) {
  const fs::path file = folder / std::string(store::TranscriptStore::kRecordFileName);
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return fail(Errc::io_error, file.string() + ": " + ec.message());
  if (size > kMaxRecordFileBytes) return fail(Errc::too_large, file.string() + ": too large");
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return fail(Errc::io_error, file.string() + ": unreadable");
  const auto json = control::Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return fail(Errc::bad_request, file.string() + ": not JSON");
  return ActorRecord::from_json(json);
}

// Owner-only folders, whatever the umask (create_directories follows it).
Result<void> private_folder(const fs::path& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return fail(Errc::io_error, "create " + folder.string() + ": " + ec.message());
  if (::chmod(folder.c_str(), 0700) != 0) return fail_io("chmod " + folder.string(), errno);
  return {};
}

// Moves an actor's folder to .aside/<actor>-<ms>: kept, never restored, appended to or deleted
// by a later engine. The new path.
Result<fs::path> move_aside(const fs::path& root, const fs::path& folder,
                            const std::string& actor) {
  const fs::path aside = root / ".aside";
  if (auto r = private_folder(aside); !r) return tl::unexpected(r.error());
  const fs::path to = aside / (actor + "-" + std::to_string(wall_clock_ms()));
  std::error_code ec;
  fs::rename(folder, to, ec);
  if (ec) return fail(Errc::io_error, "move aside " + folder.string() + ": " + ec.message());
  return to;
}

// The floor of the actor's latest clear, kept in <folder>/cleared (written by the io thread
// before the clear is answered): the transcript never serves bytes below it, even when a crash
// came before the writer thread deleted them. 0 when never cleared.
constexpr const char* kClearedFile = "cleared";

Cursor load_cleared(const fs::path& folder) {
  std::ifstream in(folder / kClearedFile);
  std::uint64_t floor = 0;
  in >> floor;
  return Cursor{in ? floor : 0};
}

// A crash between creating a small file's temporary copy and renaming it leaves "<name>.tmp"
// (durable_file.hpp): never read, removed at the next start.
void remove_temporary_files(const fs::path& folder) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().extension() == ".tmp") fs::remove(entry.path(), ec);
  }
}

}  // namespace

Transcripts::Transcripts(fs::path root, store::TranscriptOptions options, bool persist,
                         int notify_fd, TranscriptListener& listener)
    : root_(std::move(root)), options_(std::move(options)), listener_(listener) {
  if (persist) writer_ = std::make_unique<TranscriptWriter>(notify_fd);
}

Transcripts::~Transcripts() = default;

void Transcripts::wake() noexcept {
  if (writer_) writer_->wake();
}

std::vector<RestorableActor> Transcripts::restorable() {
  std::vector<RestorableActor> found;
  if (!writer_) return found;
  if (auto r = private_folder(root_); !r) {
    log(LogLevel::error, "transcripts: {}; persistence is off", r.error().describe());
    writer_.reset();
    return found;
  }
  std::error_code ec;
  fs::remove_all(root_ / ".trash", ec);  // deleted actors' folders a crash left half removed
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_valid_actor_name(name) || !entry.is_directory()) continue;
    remove_temporary_files(entry.path());
    auto record = load_record(entry.path());
    if (record && record->name != name) {
      record = fail(Errc::bad_request, "its record names actor '" + record->name + "'");
    }
    if (!record) {
      log(LogLevel::warn, "transcript {}: not restored, left as it is ({})", name,
          record.error().describe());
      continue;
    }
    auto store = store::TranscriptStore::open(entry.path(), options_);
    if (!store) {
      log(LogLevel::warn, "transcript {}: not restored, left as it is ({})", name,
          store.error().describe());
      continue;
    }
    // Cursors continue after the last durable byte, never below one the record or the latest
    // clear saw, and after an unclean stop past any byte the dead engine let a reader see: the
    // stretch between is lost, and said so.
    const Cursor cleared = load_cleared(entry.path());
    const store::Resumption resumed = store::resume_after(
        max(store->end(), cleared), record->cursor, store::LeaseFile::read(entry.path()));
    const Cursor end = resumed.next;
    std::vector<store::TranscriptGap> damaged = store->damaged();
    if (resumed.lost) {
      damaged.push_back({resumed.lost->first, resumed.lost->second, resumed.reason});
      store->mark_lost_until(end);  // kept as a gap by the segment the next session starts
    }
    ActorPast past{record->epoch, end, record->spec, record->sessions, record->created_ms};
    if (!store->empty() &&
        (past.sessions.empty() || store->segments().back().session > past.sessions.back().id)) {
      // A session whose record was lost with the machine: its segments still name it.
      shm::SessionRecord lost;
      lost.id = store->segments().back().session;
      lost.start = value(store->segments().back().start);
      for (const auto& seg : store->segments()) {
        if (seg.session == lost.id) lost.start = std::min(lost.start, value(seg.start));
      }
      past.sessions.push_back(lost);
    }
    for (auto& s : past.sessions) {
      if ((s.flags & shm::kSessionSealed) != 0) continue;
      s.end = std::max(s.start, value(end));  // it ended with the engine that ran it
      s.flags |= shm::kSessionSealed;
    }
    if (store->annex_damaged() > 0) {
      log(LogLevel::warn, "transcript {}: {} damaged stretch(es) of its recording skipped", name,
          store->annex_damaged());
    }
    std::vector<std::string> annex = store->take_annex();
    found.push_back({name, std::move(past), entry.path(), std::move(*store), cleared,
                     std::move(damaged), std::move(annex)});
  }
  if (ec) log(LogLevel::error, "transcripts: list {}: {}", root_.string(), ec.message());
  return found;
}

void Transcripts::adopt(Actor& actor, RestorableActor restored) {
  const std::string& name = actor.name();
  const std::uint64_t bytes = restored.store.bytes();
  const WriterActorId id = next_id_++;
  kept_[name] = Kept{id, restored.folder, restored.cleared_at, std::nullopt, Cursor{0}, {}, {}};
  for (const store::TranscriptGap& gap : restored.damaged) report_damage(name, gap);
  const auto& sessions = restored.past.sessions;
  auto consumer = actor.attach_consumer();
  kept_[name].consumer = consumer;
  writer_->add_actor(id, actor.ring().reader(), std::move(consumer), std::move(restored.store),
                     actor.epoch(), sessions.empty() ? 0 : sessions.back().id);
  save_record(actor);
  log(LogLevel::info, "actor {}: restored from its transcript, epoch {}, cursor {}, {} bytes", name,
      hex64(actor.epoch()), value(restored.past.start), bytes);
}

void Transcripts::add(Actor& actor) {
  if (!writer_) return;
  const std::string& name = actor.name();
  const fs::path folder = root_ / name;
  Kept t{0, folder, Cursor{0}, std::nullopt, actor.ring().committed(), {}, {}};
  const auto give_up = [&](const Error& e) {
    actor.drop_lease();
    t.folder.clear();  // nothing there is this actor's to read or delete
    t.archive_error = e.describe();
    log(LogLevel::error, "actor {}: no transcript: {}", name, e.describe());
    listener_.transcript_event({{"event", "archive_error"},
                                {"actor", name},
                                {"message", e.describe()},
                                {"archived_to", value(t.archived_to)}});
    kept_[name] = std::move(t);
  };
  std::error_code ec;
  if (fs::exists(folder, ec)) {
    // Left by an actor that could not be restored: kept, out of the way, never appended to.
    auto to = move_aside(root_, folder, name);
    if (!to) return give_up(to.error());
    log(LogLevel::warn, "actor {}: an earlier transcript folder was moved to {}", name,
        to->string());
  }
  auto store = store::TranscriptStore::open(folder, options_);
  if (!store) return give_up(store.error());
  t.id = next_id_++;
  const auto session = actor.current_session();
  const WriterActorId id = t.id;
  t.consumer = actor.attach_consumer();
  writer_->add_actor(id, actor.ring().reader(), t.consumer, std::move(*store), actor.epoch(), 0);
  kept_[name] = std::move(t);
  // The record first, then the session's lease, which its first byte waits for: no byte is
  // published before a restarted engine can bring the actor back.
  save_record(actor);
  if (session) writer_->new_session(id, Cursor{session->start}, session->id);
}

const Transcripts::Kept* Transcripts::written(const std::string& actor) const {
  const auto t = kept_.find(actor);
  if (!writer_ || t == kept_.end() || t->second.id == 0) return nullptr;
  return &t->second;
}

void Transcripts::save_record(const Actor& actor) {
  if (const Kept* t = written(actor.name())) {
    writer_->save_record(t->id, actor.ring().committed(), ActorRecord::of(actor).to_json().dump());
  }
}

void Transcripts::annex(const Actor& actor, std::string record) {
  if (const Kept* t = written(actor.name()); t && !t->archive_error) {
    writer_->annex(t->id, actor.ring().committed(), std::move(record));
  }
}

void Transcripts::new_session(const Actor& actor, const shm::SessionRecord& session) {
  if (const Kept* t = written(actor.name())) {
    writer_->new_session(t->id, Cursor{session.start}, session.id);
    save_record(actor);
  }
}

void Transcripts::clear(const Actor& actor, Cursor floor) {
  const auto t = kept_.find(actor.name());
  if (!writer_ || t == kept_.end()) return;
  t->second.cleared_at = floor;
  if (t->second.id != 0) {
    writer_->clear(t->second.id, floor);  // first: the writer waits for it past the new floor
    save_record(actor);
  }
  if (!t->second.folder.empty()) {
    auto r =
        store::write_file_durably(t->second.folder / kClearedFile, std::to_string(value(floor)));
    if (r) r = store::sync_folder(t->second.folder);
    if (!r) {
      log(LogLevel::error, "actor {}: clear floor not saved: {}", actor.name(),
          r.error().describe());
    }
  }
}

bool Transcripts::seal(const Actor& actor, const shm::SessionRecord& session) {
  const Kept* t = written(actor.name());
  if (!t) return false;
  // Two phases: the session counts as sealed once the writer appended and synced its bytes.
  save_record(actor);
  const std::uint64_t token = next_id_++;
  pending_seals_[token] = PendingSeal{actor.name(), session};
  writer_->seal(t->id, Cursor{session.end}, token);
  return true;
}

bool Transcripts::seal_pending(const std::string& actor) const {
  return std::any_of(pending_seals_.begin(), pending_seals_.end(),
                     [&](const auto& p) { return p.second.actor == actor; });
}

void Transcripts::remove(const std::string& actor) {
  const auto t = kept_.find(actor);
  if (t == kept_.end()) return;
  // Renamed now, deleted by the writer once it let go of the files: a new actor of this name
  // may be spawned at once and must find no folder. Only a folder moved to .trash is deleted
  // (never the live path, which a new actor may own by the time the writer gets there).
  fs::path doomed;
  if (!t->second.folder.empty()) {
    const fs::path trash = root_ / ".trash";
    const fs::path to = trash / (actor + "-" + std::to_string(next_id_++));
    std::error_code ec;
    if (auto r = private_folder(trash); !r) {
      log(LogLevel::error, "actor {}: its transcript stays: {}", actor, r.error().describe());
    } else if (fs::rename(t->second.folder, to, ec); ec) {
      if (ec != std::errc::no_such_file_or_directory) {
        log(LogLevel::error, "actor {}: its transcript stays: {}", actor, ec.message());
      }
    } else {
      doomed = to;
    }
  }
  if (writer_ && t->second.id != 0) {
    writer_->remove_actor(t->second.id, doomed);
  } else if (!doomed.empty()) {
    if (auto r = store::TranscriptStore::remove_folder(doomed); !r) {
      log(LogLevel::error, "actor {}: {}", actor, r.error().describe());
    }
  }
  kept_.erase(t);
}

Result<std::string> Transcripts::read(const Actor& actor, Cursor from, Cursor limit,
                                      std::size_t max_bytes) {
  const auto t = kept_.find(actor.name());
  if (t == kept_.end() || t->second.folder.empty()) {
    return fail(Errc::cursor_expired, "older than the oldest retained byte",
                value(actor.ring().floor()));
  }
  // A clear took everything before it, whether or not the writer deleted it yet.
  if (from < t->second.cleared_at) {
    return fail(Errc::cursor_expired, "cleared", value(t->second.cleared_at));
  }
  // A known gap answers data_lost, even where no file shows it any more (a cut newest tail).
  for (const store::TranscriptGap& gap : t->second.damaged) {
    if (gap.from <= from && from < gap.to) {
      return fail_data_lost(value(gap.from), value(gap.to), gap.reason);
    }
    if (from < gap.from) limit = min(limit, gap.from);  // serve up to the gap, not into it
  }
  // Not zero-filled: a read returns at most one segment (1 MiB) of a request that may allow
  // 16 MiB, and clearing the rest cost more than the read itself.
  const auto room = static_cast<std::size_t>(std::min<std::uint64_t>(limit - from, max_bytes));
  const auto buffer = std::make_unique_for_overwrite<char[]>(room);
  auto n = store::TranscriptStore::read_folder(t->second.folder, from, limit,
                                               std::span(buffer.get(), room));
  if (!n) {
    if (n.error().code == Errc::data_lost && n.error().from && n.error().cursor) {
      // Damage that appeared since the restore (a disk error, a tampered file).
      report_damage(actor.name(),
                    {Cursor{*n.error().from}, Cursor{*n.error().cursor}, "damaged record"});
    }
    return tl::unexpected(n.error());
  }
  return std::string(buffer.get(), *n);
}

std::optional<Cursor> Transcripts::written_to(const std::string& actor) const {
  const auto t = kept_.find(actor);
  if (t == kept_.end() || !t->second.consumer || t->second.consumer->detached())
    return std::nullopt;
  return t->second.consumer->position();
}

control::Json Transcripts::status(const Actor& actor) const {
  control::Json out{{"persist", false},
                    {"archive_error", nullptr},
                    {"unarchived_bytes", nullptr},
                    {"transcript", nullptr}};
  const auto t = kept_.find(actor.name());
  if (t == kept_.end()) return out;
  out["persist"] = true;
  if (t->second.archive_error) {
    const Cursor committed = actor.ring().committed();
    out["archive_error"] = *t->second.archive_error;
    out["unarchived_bytes"] = committed - min(committed, t->second.archived_to);
  }
  control::Json damaged = control::Json::array();
  for (const store::TranscriptGap& gap : t->second.damaged) {
    damaged.push_back({{"from", value(gap.from)}, {"to", value(gap.to)}, {"reason", gap.reason}});
  }
  out["transcript"] = {{"damaged", std::move(damaged)}};
  return out;
}

void Transcripts::report_damage(const std::string& actor, const store::TranscriptGap& gap) {
  const auto t = kept_.find(actor);
  if (t == kept_.end()) return;
  auto& known = t->second.damaged;
  const bool seen = std::any_of(known.begin(), known.end(), [&](const store::TranscriptGap& g) {
    return g.from < gap.to && gap.from < g.to;
  });
  if (seen || gap.to <= gap.from) return;
  known.push_back(gap);
  std::sort(
      known.begin(), known.end(),
      [](const store::TranscriptGap& a, const store::TranscriptGap& b) { return a.from < b.from; });
  log(LogLevel::warn, "actor {}: transcript lost cursors {}..{} ({})", actor, value(gap.from),
      value(gap.to), gap.reason);
  listener_.transcript_event({{"event", "damaged"},
                              {"actor", actor},
                              {"from", value(gap.from)},
                              {"to", value(gap.to)},
                              {"reason", gap.reason}});
}

void Transcripts::answer() {
  if (!writer_) return;
  WriterEvent e;
  while (writer_->next_event(e)) {
    if (e.kind == WriterEvent::Kind::sealed) {
      auto seal = pending_seals_.extract(e.token);
      if (seal.empty()) continue;
      if (Actor* actor = listener_.transcript_actor(seal.mapped().actor)) {
        listener_.transcript_sealed(*actor, seal.mapped().session, e.durable);
      }
      continue;
    }
    const auto t = std::find_if(kept_.begin(), kept_.end(),
                                [&](const auto& entry) { return entry.second.id == e.id; });
    if (t == kept_.end()) {
      if (e.kind == WriterEvent::Kind::archive_error) {
        log(LogLevel::warn, "transcript of a deleted actor: {}", e.error);
      }
      continue;
    }
    Actor* actor = listener_.transcript_actor(t->first);
    if (e.kind == WriterEvent::Kind::lease) {
      if (actor) actor->grant_lease(e.session, e.lease);
      continue;
    }
    if (actor) actor->drop_lease();
    archive_failed(t->first, e);
  }
}

void Transcripts::archive_failed(const std::string& actor, const WriterEvent& e) {
  Kept& t = kept_.at(actor);
  t.archive_error = e.error;
  t.archived_to = e.archived_to;
  log(LogLevel::error,
      "actor {}: transcript given up at cursor {}, history from there stays in memory: {}", actor,
      value(e.archived_to), e.error);
  // Its record and cursors stop here while the actor goes on: a later engine must not restore
  // it into the same epoch. Moved aside (a rename needs no space); this engine still reads the
  // intact bytes there.
  if (!t.folder.empty()) {
    if (auto to = move_aside(root_, t.folder, actor)) {
      t.folder = *to;
    } else {
      log(LogLevel::error, "actor {}: {}", actor, to.error().describe());
    }
  }
  listener_.transcript_event({{"event", "archive_error"},
                              {"actor", actor},
                              {"message", e.error},
                              {"archived_to", value(e.archived_to)}});
}

}  // namespace backscroll::engine
