#include "engine/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace backscroll::engine {
namespace {
// relaxed: a level change need not be ordered with anything else.
std::atomic<LogLevel> g_level{LogLevel::info};

// ISO 8601 local time with milliseconds and the UTC offset: 2026-12-03T07:10:42.123+01:00.
void format_time(std::chrono::system_clock::time_point when, char (&out)[48]) noexcept {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch());
  const auto seconds = static_cast<std::time_t>(ms.count() / 1000);
  std::tm local{};
  ::localtime_r(&seconds, &local);
  char date[32];
  char zone[8];  // +hhmm
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &local);
  if (std::strftime(zone, sizeof zone, "%z", &local) != 5)
    std::snprintf(zone, sizeof zone, "+0000");
  std::snprintf(out, sizeof out, "%s.%03d%.3s:%.2s", date, static_cast<int>(ms.count() % 1000),
                zone, zone + 3);
}
}  // namespace

void set_log_level(LogLevel level) noexcept { g_level.store(level, std::memory_order_relaxed); }

bool log_enabled(LogLevel level) noexcept {
  return level >= g_level.load(std::memory_order_relaxed);
}

void log_line(LogLevel level, std::string_view message) noexcept {
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
  char when[48];
  format_time(std::chrono::system_clock::now(), when);
  std::fprintf(stderr, "%s backscrolld[%d] %s %.*s\n", when, static_cast<int>(::getpid()),
               kNames[static_cast<int>(level)], static_cast<int>(message.size()), message.data());
}

}  // namespace backscroll::engine
