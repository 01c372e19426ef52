// Engine log lines on stderr: "TIME backscrolld[pid] LEVEL message", TIME in ISO 8601 local time
// with milliseconds and the UTC offset (2026-12-03T07:10:42.123+01:00). Cheap enough for lifecycle
// events; never called per PTY read.
#pragma once

#include <fmt/core.h>

#include <string_view>

namespace backscroll::engine {

enum class LogLevel { debug, info, warn, error };

void set_log_level(LogLevel level) noexcept;
bool log_enabled(LogLevel level) noexcept;
void log_line(LogLevel level, std::string_view message) noexcept;

template <class... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(level)) log_line(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace backscroll::engine
