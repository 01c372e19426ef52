// Reloading settings.yaml while the engine runs (`backscroll reload`, SIGHUP; docs/settings.md,
// "Reloading"): what can change live is applied at once, without ending any actor; the rest is
// reported as waiting for the next engine start, never half-applied.
//
//   snapshot.scrollback_lines         live: snapshots asked from now on
//   retention_days                    live: the next purge of deletion snapshots
//   memory_budget                     live: spawns from now on (running actors stay, even
//                                     when they reserve more than a lowered budget)
//   terminal_transcript.per_actor_bytes
//                                     live for the rings of actors spawned from now on (unless
//                                     backscrolld --ring-bytes set them); the durable
//                                     transcripts' retention waits for a restart
//   terminal_transcript.persist       a restart (a transcript cannot start mid-stream)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/settings.hpp"

namespace backscroll::engine {

struct SettingChange {
  std::string key;  // dotted, as in the file
  std::string from;
  std::string to;
  bool live = false;  // applied now; else at the next engine start
};

// Applies what `file` (just read) changes to `settings` where a running engine can, and lists
// every change: the live ones against what was applied last (settings.file_now, updated), the
// others against what the engine started with (settings.file_at_start), so a change that waits
// for a restart is reported again at every reload until then.
std::vector<SettingChange> reload_settings(EngineSettings& settings, const Settings& file);

// The file's values as the engine applies them at start (main) and at a reload.
std::uint64_t ring_bytes_of(std::uint64_t per_actor_bytes);
std::uint64_t snapshot_scrollback_of(std::uint64_t scrollback_lines);
std::chrono::hours retention_of(std::uint64_t retention_days);
std::uint64_t memory_budget_of(std::uint64_t configured);

}  // namespace backscroll::engine
