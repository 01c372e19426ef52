#include "engine/memory_budget.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <optional>

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

std::string mib(std::uint64_t bytes) { return std::to_string(bytes / kMiB) + " MiB"; }

}  // namespace

Result<void> MemoryBudget::check_spawn(const std::string& actor, std::uint64_t ring_bytes) {
  const std::uint64_t need = ring_bytes + kActorOverhead;
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const auto used = address_space();
    if (used && *used + need + kHeadroom > limit.rlim_cur) {
      return fail(Errc::out_of_memory, "spawning '" + actor + "' needs about " + mib(need) +
                                           " more address space; the " + "engine uses " +
                                           mib(*used) + " of its " + mib(limit.rlim_cur) +
                                           " limit (RLIMIT_AS), keeping " + mib(kHeadroom) +
                                           " free");
    }
  }
  if (const auto folder = cgroup_folder()) {
    const auto max = cgroup_number(*folder + "/memory.max");
    const auto current = cgroup_number(*folder + "/memory.current");
    if (max && current && *current + need + kHeadroom > *max) {
      return fail(Errc::out_of_memory, "spawning '" + actor + "' needs about " + mib(need) +
                                           " more memory; the " + "engine's cgroup uses " +
                                           mib(*current) + " of its " + mib(*max) +
                                           " (memory.max), keeping " + mib(kHeadroom) + " free");
    }
  }
  return {};
}

}  // namespace backscroll::engine
