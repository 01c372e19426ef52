// The recording's keyframes, size changes and time samples (docs/recorder.md): kept in memory
// as the io thread acts and the mirror reports them, written to the transcript's annex with
// persistence on, and read back when an actor is restored, which brings its last screen back
// too (cold restore). Io thread.
#include <algorithm>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/recorder/durable_recording.hpp"
#include "engine/wall_clock.hpp"

namespace backscroll::engine {

void Engine::keep_durably(const std::string& actor, std::string record) {
  if (const auto a = actors_.find(actor); a != actors_.end()) {
    transcripts_.annex(*a->second, std::move(record));
  }
}

void Engine::keep_keyframe(const std::string& actor, recorder::Recording& r,
                           recorder::Keyframe keyframe) {
  // Written to the transcript's annex when it spans at least its own size of stream since the
  // last one written (so keyframes never take more disk than the bytes they stand for), and
  // always at a session's end (a cold restore's screen, docs/recorder.md).
  std::string durable;
  if (transcripts_.keeps(actor) &&
      (keyframe.cursor - min(keyframe.cursor, r.durable_keyframe) >= keyframe.snapshot.size() ||
       r.durable_keyframe_wanted == keyframe.cursor)) {
    durable = recorder::encode(keyframe);
  }
  const Cursor at = keyframe.cursor;
  if (!r.keyframes.add(std::move(keyframe)) || durable.empty()) return;
  r.durable_keyframe = at;
  if (r.durable_keyframe_wanted == at) r.durable_keyframe_wanted.reset();
  keep_durably(actor, std::move(durable));
}

void Engine::record_fresh_terminal(const Actor& actor, Cursor at) {
  if (recorder::Recording* r = recording(actor.name())) {
    const recorder::Keyframe fresh =
        r->keyframes.add_fresh(at, actor.size().cols, actor.size().rows, wall_clock_ms());
    if (transcripts_.keeps(actor.name())) keep_durably(actor.name(), recorder::encode(fresh));
  }
}

void Engine::record_size_change(const Actor& actor, Cursor at, WindowSize size) {
  if (recorder::Recording* r = recording(actor.name())) {
    const recorder::SizeChange change = r->keyframes.add_size_change(at, size.cols, size.rows);
    if (transcripts_.keeps(actor.name())) keep_durably(actor.name(), recorder::encode(change));
  }
}

void Engine::note_activity(const Actor& actor, std::int64_t now_ms) {
  if (recorder::Recording* r = recording(actor.name())) {
    const auto finished = r->times.note(now_ms, actor.ring().committed());
    if (finished && transcripts_.keeps(actor.name())) {
      keep_durably(actor.name(), recorder::encode(*finished));
    }
  }
}

void Engine::record_session_end(const Actor& actor, Cursor end) {
  recorder::Recording* r = recording(actor.name());
  if (!r) return;
  // The session's last screen: a cold restore starts from it (written whatever its size). The
  // mirror is asked for it once the seal is durable; one it took there already is written now.
  const recorder::Keyframe* newest = r->keyframes.newest();
  if (newest && newest->cursor == end && !newest->fresh()) {
    if (r->durable_keyframe != end && transcripts_.keeps(actor.name())) {
      r->durable_keyframe = end;
      keep_durably(actor.name(), recorder::encode(*newest));
    }
  } else {
    r->durable_keyframe_wanted = end;
  }
  // The time index's newest sample, final or not: the transcript has every second of it.
  if (const auto sample = r->times.newest(); sample && transcripts_.keeps(actor.name())) {
    keep_durably(actor.name(), recorder::encode(*sample));
  }
}

bool Engine::final_keyframes_owed() const {
  if (!mirror_) return false;
  return std::any_of(recordings_.begin(), recordings_.end(), [this](const auto& r) {
    return r.second.durable_keyframe_wanted && transcripts_.keeps(r.first);
  });
}

namespace {

// A cold restore replays at most this much of the transcript after its keyframe (keyframes
// come every 1 MiB of parsed output or less, and a session's end always has one).
constexpr std::uint64_t kMaxColdReplayBytes = 16u << 20;

// The transcript's bytes [from, to), or why not.
Result<std::string> read_transcript(const store::TranscriptStore& store, Cursor from, Cursor to) {
  std::string out(to - from, '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    auto n = store.read(from + got, std::span(out).subspan(got));
    if (!n) return tl::unexpected(n.error());
    if (*n == 0) return fail(Errc::data_lost, "the transcript ends early");
    got += *n;
  }
  return out;
}

}  // namespace

std::optional<MirrorStart::Cold> Engine::restore_recording(const Actor& actor,
                                                           RestorableActor& restored) {
  recorder::Recording* r = recording(actor.name());
  if (!r) return std::nullopt;
  const recorder::LoadReport report = recorder::load(*r, restored.annex, restored.store.oldest());
  restored.annex.clear();
  if (report.unreadable > 0) {
    log(LogLevel::warn, "actor {}: {} unreadable record(s) of its recording skipped", actor.name(),
        report.unreadable);
  }
  // The mirror goes on at the committed cursor; after a crash the bytes between the last one
  // the transcript kept and that cursor are lost (history says so): the screen as of the last
  // byte kept.
  const Cursor start = actor.ring().committed();
  // An empty transcript (a clear, and nothing since) holds no byte after a keyframe at `start`.
  const Cursor until = restored.store.empty() ? start : min(start, restored.store.end());
  const recorder::Keyframe* keyframe = r->keyframes.at_or_before(until);
  if (!keyframe) return std::nullopt;
  r->durable_keyframe = keyframe->cursor;
  // The PTY may have been resized after the last size change written (a crash): the restored
  // actor's size applies from its start.
  const std::vector<recorder::SizeChange> before = r->keyframes.size_changes(*keyframe, until);
  const auto [cols, rows] = before.empty() ? std::pair(keyframe->cols, keyframe->rows)
                                           : std::pair(before.back().cols, before.back().rows);
  if (cols != actor.size().cols || rows != actor.size().rows) {
    record_size_change(actor, start, actor.size());
  }
  MirrorStart::Cold cold{*keyframe, {}, r->keyframes.size_changes(*keyframe, start)};
  if (until - keyframe->cursor > kMaxColdReplayBytes) {
    log(LogLevel::warn, "actor {}: {} bytes after its last keyframe: restored with a blank screen",
        actor.name(), until - keyframe->cursor);
    return std::nullopt;
  }
  if (keyframe->cursor == until) return cold;  // nothing to replay
  auto bytes = read_transcript(restored.store, keyframe->cursor, until);
  if (!bytes) {
    log(LogLevel::warn, "actor {}: restored with a blank screen ({})", actor.name(),
        bytes.error().describe());
    return std::nullopt;
  }
  cold.bytes = std::move(*bytes);
  return cold;
}

}  // namespace backscroll::engine
