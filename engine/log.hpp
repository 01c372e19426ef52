// Engine log lines on stderr: "backscrolld[pid] LEVEL message". Cheap enough for lifecycle
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
