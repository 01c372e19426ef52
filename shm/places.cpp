#include "shm/places.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace backscroll {

Places Places::from_environment() {
  if (const char* dir = std::getenv("BACKSCROLL_RUNTIME_DIR"); dir && *dir) {
    return Places{std::filesystem::path(dir)};
  }
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) {
    return Places{std::filesystem::path(xdg) / "backscroll"};
  }
  return Places{std::filesystem::path("/tmp") / ("backscroll-" + std::to_string(::getuid()))};
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
