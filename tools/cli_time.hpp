// Wall-clock times on the command line (docs/cli.md, "Times"): what `events --since` and the
// recorder's `--at-time` accept, and how event times are printed. Times are ms since the Unix
// epoch, as the engine stamps events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tools/cli_validator.hpp"

namespace backscroll::cli {

// ISO 8601: "2026-12-02T14:03:07Z", with ".123" fractions, a "+01:00" / "-0500" offset, a space
// for the T, minutes without seconds, or a date alone (midnight); without an offset the time is
// local. Or a duration back from `now_ms`: "90s", "15m", "2h", "3d". nullopt: neither.
std::optional<std::int64_t> parse_time(std::string_view text, std::int64_t now_ms);
// "2026-12-02T14:03:07.123Z" (UTC, milliseconds).
std::string format_time(std::int64_t ms);
// The current wall-clock time in ms since the Unix epoch.
std::int64_t now_ms();

// CLI11 validator for parse_time.
CLI::Validator time_value();

}  // namespace backscroll::cli
