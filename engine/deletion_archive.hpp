// The deletion archive (docs/transcripts.md, "Deletion snapshots"): what a deleted actor leaves
// behind, as CAO does, so `backscroll restore NAME` can open a shell where it worked and show what
// it printed. (Not a snapshot_v1: plain text and the actor record. The JSON file keeps its
// historical name, `.snapshot.json`, which users' scripts read.)
//
//   $BACKSCROLL_HOME/deleted/           0700
//     <actor>.scrollback                0600, the mirror's plain text: history, then the screen
//     <actor>.snapshot.json             0600, the actor record (no environment) and the deletion
//
// Each file is written to a temporary name and renamed, the JSON last (it names the scrollback),
// so a reader never sees half a file. A newer deletion of the same name replaces both. Files
// older than retention_days are purged.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "engine/actor_record.hpp"
#include "shm/error.hpp"

namespace backscroll::engine {

struct DeletionArchive {
  ActorRecord record;
  Cursor floor{0};                        // the oldest cursor retained at deletion
  std::optional<std::string> scrollback;  // nullopt: no mirror to take it from
  std::int64_t deleted_ms = 0;
  // record.spec.cwd is where the program last was (its foreground process's directory at the
  // deletion, when it could be read); this is where it was spawned.
  std::string spawn_cwd;
};

// Writes both files under `dir` (created 0700). On an error, what was written is removed.
Result<void> write_deletion_archive(const std::filesystem::path& dir, const DeletionArchive& s);

// Deletes the files in `dir` last modified before `now - max_age`; returns how many went.
std::size_t purge_deletion_archives(const std::filesystem::path& dir,
                                    std::chrono::system_clock::duration max_age,
                                    std::chrono::system_clock::time_point now);

}  // namespace backscroll::engine
