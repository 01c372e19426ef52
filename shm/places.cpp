#include "shm/places.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace backscroll {

namespace {

std::filesystem::path from_env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::filesystem::path(v) : std::filesystem::path();
}

std::filesystem::path runtime_dir_from_environment() {
  if (auto dir = from_env("BACKSCROLL_RUNTIME_DIR"); !dir.empty()) return dir;
  if (auto xdg = from_env("XDG_RUNTIME_DIR"); !xdg.empty()) return xdg / "backscroll";
  return std::filesystem::path("/tmp") / ("backscroll-" + std::to_string(::getuid()));
}

std::filesystem::path state_dir_from_environment() {
  if (auto dir = from_env("BACKSCROLL_HOME"); !dir.empty()) return dir;
  if (auto xdg = from_env("XDG_STATE_HOME"); !xdg.empty()) return xdg / "backscroll";
  if (auto home = from_env("HOME"); !home.empty()) return home / ".local/state/backscroll";
  return std::filesystem::path("/tmp") / ("backscroll-state-" + std::to_string(::getuid()));
}

}  // namespace

Places Places::from_environment() {
  return Places{runtime_dir_from_environment(), state_dir_from_environment()};
}

std::string Places::segment_prefix() const {
  // FNV-1a 32 of the runtime dir: stable, and short enough to leave room for the actor name.
  // Normalised without a trailing separator, so "/run/x/" and "/run/x" name the same segments.
  std::filesystem::path dir = runtime_dir.lexically_normal();
  if (!dir.has_filename() && dir.has_relative_path()) dir = dir.parent_path();
  std::uint32_t h = 2166136261u;
  for (const char c : dir.string()) {
    h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "bs-%u-%08x-", static_cast<unsigned>(::getuid()), h);
  return buf;
}

}  // namespace backscroll
