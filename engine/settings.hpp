// Settings: the user's settings.yaml (docs/settings.md), read once when the engine starts.
//
//   terminal_transcript:
//     enabled: true          # history in memory: always on (false is accepted and ignored)
//     persist: false         # durable transcript on disk
//     per_actor_bytes: 10485760
//   snapshot:
//     scrollback_lines: 512
//   retention_days: 7
//   memory_budget: 2GiB      # what the actors may reserve in all; 0: an eighth of the RAM
//   close_idle_after: 1h     # delete actors whose program ended this long ago; 0: never
//
// Every key is optional. A number of 0 means the key's default; numbers above 50,000,000 are
// capped there, numbers below a key's minimum are an error; memory_budget is a size in bytes,
// KiB, MiB, GiB or TiB (at least 64 MiB). A file that is not YAML, a key this
// engine does not know or gives twice, a value of the wrong type (booleans are exactly true or
// false), anchors, aliases or deep nesting are an error that names the line (and the dotted
// key): a typo must not silently turn persistence off. A missing file means every default.
// docs/settings.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "shm/error.hpp"

namespace backscroll::engine {

struct Settings {
  static constexpr std::uint64_t kMaxNumber = 50'000'000;
  static constexpr std::uint64_t kMinPerActorBytes = 65'536;  // the smallest ring
  static constexpr std::uint64_t kMinMemoryBudget = 64ull << 20;
  static constexpr std::uint64_t kMaxMemoryBudget = 1ull << 50;  // larger sizes are capped here

  bool transcript_enabled = true;
  bool persist = false;
  std::uint64_t per_actor_bytes = 10'485'760;  // the ring per actor; on disk, what retention keeps
  std::uint64_t snapshot_scrollback_lines = 512;
  std::uint64_t retention_days = 7;
  std::uint64_t memory_budget = 0;  // bytes; 0: an eighth of the machine's RAM
  // Seconds after its program ended that an actor is deleted (its deletion snapshot kept); 0:
  // never. A duration: a whole number of seconds, or with s, m, h or d ("30m").
  std::uint64_t close_idle_after_s = 0;

  bool operator==(const Settings&) const = default;
};

// Settings from YAML text; `origin` names it in errors ("settings.yaml").
Result<Settings> parse_settings(std::string_view yaml, std::string_view origin);
// Settings from a file; every default when it does not exist. Errors: bad_request (the file's
// content, with key and line), io_error (unreadable).
Result<Settings> load_settings(const std::filesystem::path& path);

}  // namespace backscroll::engine
