#include "shm/places.hpp"

#include <unistd.h>

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

}  // namespace backscroll
