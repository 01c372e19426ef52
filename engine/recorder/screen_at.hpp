// screen_at: the terminal at a past cursor, rebuilt from the newest keyframe at or before it and
// the raw bytes in between (docs/recorder.md, "The screen at any cursor"). A scratch Mirror of the
// keyframe's size reads the keyframe's snapshot_v1 (which brings a fresh terminal to the state at
// the keyframe's cursor, by snapshot_v1's contract), then the bytes, applying each size change
// at its cursor as the live mirror did. Pure: any thread; the engine runs it on its replay thread.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "engine/recorder/keyframe.hpp"
#include "engine/term/mirror.hpp"

namespace backscroll::recorder {

struct ScreenAt {
  const Keyframe* keyframe = nullptr;
  std::string_view bytes;               // the stream [keyframe->cursor, target)
  std::span<const SizeChange> changes;  // KeyframeStore::size_changes(*keyframe, target)
  term::SnapshotOptions options;        // of the snapshot answered
  term::ScrollbackLimits limits;        // the live mirror's
};

// The snapshot at keyframe->cursor + bytes.size(), tagged with that cursor, or with an earlier
// one when the bytes end inside a sequence (the last clean position, as a live snapshot is); a
// fallback (with its reason) when the state cannot be reproduced, as a live snapshot would.
term::MirrorSnapshot screen_at(const ScreenAt& request);

// Whether a replay would show history lines cut: a keyframe draws its history at its own width,
// the live mirror kept each line as wide as it was written, and one of `changes` is wider.
bool widens_history(const Keyframe& keyframe, std::span<const SizeChange> changes) noexcept;

// The scratch mirror itself, after the replay (`options` is not used). Its positions start at
// 0: the keyframe's snapshot first, so stream cursor c is position snapshot.size() + (c -
// keyframe->cursor). Null when widens_history().
std::unique_ptr<term::Mirror> replay(const ScreenAt& request);

// A live mirror of the terminal after the request's bytes, its stream continuing at `at` (cold
// restore: an actor restored at engine start shows its last screen). When the bytes end inside
// a sequence, the screen before that sequence (a session that ended there: the next one starts
// from a fresh terminal anyway). Its history holds at most kKeyframeHistoryLines of the lines
// before `at` (what a restore with nothing to replay gets); request.limits bound it from then
// on. Null when widens_history().
std::unique_ptr<term::Mirror> resume(const ScreenAt& request, Cursor at);

}  // namespace backscroll::recorder
