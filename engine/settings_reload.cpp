#include "engine/settings_reload.hpp"

#include <unistd.h>

#include <algorithm>

namespace backscroll::engine {
namespace {

std::string text(bool b) { return b ? "true" : "false"; }
std::string text(std::uint64_t n) { return std::to_string(n); }

}  // namespace

std::uint64_t ring_bytes_of(std::uint64_t per_actor_bytes) {
  return per_actor_bytes == 0 ? 10'485'760 : std::min<std::uint64_t>(per_actor_bytes, 50'000'000);
}

std::uint64_t snapshot_scrollback_of(std::uint64_t scrollback_lines) {
  return std::min(scrollback_lines, kMaxSnapshotScrollback);
}

std::chrono::hours retention_of(std::uint64_t retention_days) {
  // At most a century: longer ages overflow the clocks' nanoseconds (and mean "forever").
  return std::chrono::hours(24 * std::min<std::uint64_t>(retention_days, 36'500));
}

std::uint64_t memory_budget_of(std::uint64_t configured) {
  if (configured != 0) return configured;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{2} << 30;  // unknown RAM: 2 GiB
  return std::max(static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 8,
                  Settings::kMinMemoryBudget);
}

std::vector<SettingChange> reload_settings(EngineSettings& settings, const Settings& file) {
  std::vector<SettingChange> changes;
  Settings& now = settings.file_now;
  const Settings& start = settings.file_at_start;

  if (file.snapshot_scrollback_lines != now.snapshot_scrollback_lines) {
    changes.push_back({"snapshot.scrollback_lines", text(now.snapshot_scrollback_lines),
                       text(file.snapshot_scrollback_lines), true});
    settings.snapshot_scrollback = snapshot_scrollback_of(file.snapshot_scrollback_lines);
    now.snapshot_scrollback_lines = file.snapshot_scrollback_lines;
  }
  if (file.retention_days != now.retention_days) {
    changes.push_back(
        {"retention_days", text(now.retention_days), text(file.retention_days), true});
    settings.retention = retention_of(file.retention_days);
    now.retention_days = file.retention_days;
  }
  if (file.memory_budget != now.memory_budget) {
    changes.push_back({"memory_budget", text(now.memory_budget), text(file.memory_budget), true});
    settings.memory_budget = file.memory_budget;
    now.memory_budget = file.memory_budget;
  }
  if (file.close_idle_after_s != now.close_idle_after_s) {
    // Actors whose program ends from now on (an ended one keeps the timer it has).
    changes.push_back({"close_idle_after", text(now.close_idle_after_s) + " s",
                       text(file.close_idle_after_s) + " s", true});
    now.close_idle_after_s = file.close_idle_after_s;
  }
  if (file.per_actor_bytes != now.per_actor_bytes && !settings.ring_bytes_from_flag) {
    // The rings of actors spawned from now on; a running actor keeps its ring.
    changes.push_back({"terminal_transcript.per_actor_bytes (rings of new actors)",
                       text(now.per_actor_bytes), text(file.per_actor_bytes), true});
    settings.actor.ring_bytes = ring_bytes_of(file.per_actor_bytes);
    now.per_actor_bytes = file.per_actor_bytes;
  }
  const bool persisting = start.persist || settings.persist_from_flag;
  if (persisting && file.per_actor_bytes != start.per_actor_bytes) {
    changes.push_back({"terminal_transcript.per_actor_bytes (transcript retention)",
                       text(start.per_actor_bytes), text(file.per_actor_bytes), false});
  }
  if (file.persist != start.persist && !settings.persist_from_flag) {
    changes.push_back(
        {"terminal_transcript.persist", text(start.persist), text(file.persist), false});
  }
  return changes;
}

}  // namespace backscroll::engine
