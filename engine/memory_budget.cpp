#include "engine/memory_budget.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>

#include "engine/recorder/keyframe_store.hpp"
#include "engine/recorder/time_index.hpp"
#include "engine/term/grid_cell.hpp"

namespace backscroll::engine {
namespace {

constexpr std::uint64_t kMiB = 1u << 20;

// The engine's address space now (VmSize), in bytes.
std::optional<std::uint64_t> address_space() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  if (!(statm >> pages)) return std::nullopt;
  return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// A number in a cgroup file ("max" means none).
std::optional<std::uint64_t> cgroup_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return std::stoull(word);
  } catch (...) {
    return std::nullopt;
  }
}

// The engine's cgroup v2 folder ("0::/path" in /proc/self/cgroup).
std::optional<std::string> cgroup_folder() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return std::nullopt;
}

// libvterm 0.1.4's ScreenCell (six code points and a pen), rounded up.
constexpr std::uint64_t kVtermCellBytes = 48;
// An event on the track with its text (titles, agent names), on average, rounded up.
constexpr std::uint64_t kTrackEventBytes = 128;
// A time index sample (a cursor and a time).
constexpr std::uint64_t kTimeSampleBytes = 16;

// "35.2 MiB", "3.0 GiB": a size for messages.
std::string format_bytes(std::uint64_t bytes) {
  char text[32];
  if (bytes >= (std::uint64_t{1} << 30)) {
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  } else {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  }
  return text;
}

}  // namespace

std::uint64_t MemoryBudget::recorder_bytes(std::uint64_t events, std::uint64_t time_samples) {
  return events * kTrackEventBytes + time_samples * kTimeSampleBytes;
}

ActorMemory MemoryBudget::reserved(const ActorLimits& limits) {
  ActorMemory m;
  m.ring = limits.ring_capacity;
  m.input = limits.input_capacity;
  m.recorder = recorder_bytes(limits.track_events, recorder::TimeIndex::kMaxSamples);
  if (limits.mirror) {
    m.history = limits.history_bytes;
    // Main and alternate screens, each in the grid and in libvterm.
    m.screen =
        std::uint64_t{2} * limits.cols * limits.rows * (sizeof(term::GridCell) + kVtermCellBytes);
    if (limits.keyframes) m.keyframes = recorder::KeyframeStore::kMaxBytes;
    m.snapshot = limits.snapshot_bytes;
  }
  return m;
}

Result<void> MemoryBudget::check_budget(const std::string& actor, const ActorMemory& asked,
                                        std::uint64_t reserved_now, std::uint64_t budget) {
  if (reserved_now + asked.total() <= budget) return {};
  return fail(Errc::over_budget,
              "spawning '" + actor + "' would reserve " + format_bytes(asked.total()) + " (ring " +
                  format_bytes(asked.ring) + ", history " + format_bytes(asked.history) +
                  ", keyframes " + format_bytes(asked.keyframes) + ", the rest " +
                  format_bytes(asked.screen + asked.recorder + asked.input + asked.snapshot) +
                  "); the actors reserve " + format_bytes(reserved_now) + " of the " +
                  format_bytes(budget) +
                  " memory_budget (settings.yaml): delete an actor, lower "
                  "terminal_transcript.per_actor_bytes or raise memory_budget");
}

Result<void> MemoryBudget::check_cap(const std::string& actor, std::uint64_t ring_bytes) {
  const std::uint64_t need = ring_bytes + kActorOverhead;
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const auto used = address_space();
    if (used && *used + need + kHeadroom > limit.rlim_cur) {
      return fail(Errc::out_of_memory,
                  "spawning '" + actor + "' needs about " + format_bytes(need) +
                      " more address space; the " + "engine uses " + format_bytes(*used) +
                      " of its " + format_bytes(limit.rlim_cur) + " limit (RLIMIT_AS), keeping " +
                      format_bytes(kHeadroom) + " free");
    }
  }
  if (const auto folder = cgroup_folder()) {
    const auto max = cgroup_number(*folder + "/memory.max");
    const auto current = cgroup_number(*folder + "/memory.current");
    if (max && current && *current + need + kHeadroom > *max) {
      return fail(Errc::out_of_memory,
                  "spawning '" + actor + "' needs about " + format_bytes(need) +
                      " more memory; the " + "engine's cgroup uses " + format_bytes(*current) +
                      " of its " + format_bytes(*max) + " (memory.max), keeping " +
                      format_bytes(kHeadroom) + " free");
    }
  }
  return {};
}

}  // namespace backscroll::engine
