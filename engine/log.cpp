#include "engine/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>

namespace backscroll::engine {
namespace {
// relaxed: a level change need not be ordered with anything else.
std::atomic<LogLevel> g_level{LogLevel::info};
}  // namespace

void set_log_level(LogLevel level) noexcept { g_level.store(level, std::memory_order_relaxed); }

bool log_enabled(LogLevel level) noexcept {
  return level >= g_level.load(std::memory_order_relaxed);
}

void log_line(LogLevel level, std::string_view message) noexcept {
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
  std::fprintf(stderr, "%lld.%03lld backscrolld[%d] %s %.*s\n", static_cast<long long>(ms / 1000),
               static_cast<long long>(ms % 1000), static_cast<int>(::getpid()),
               kNames[static_cast<int>(level)], static_cast<int>(message.size()), message.data());
}

}  // namespace backscroll::engine
