// Command-line values the CLI validates itself, so a bad value is a usage error (exit 2) before
// anything reaches the engine: cursors and counts (decimal uint64 only; CLI11's own conversion
// takes "-1" and octal), PTY sizes (1..1000, as the engine checks), K=V environment entries,
// and the attach detach key.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tools/cli_validator.hpp"

namespace backscroll::cli {

inline constexpr std::uint64_t kMinTerminalSize = 1;
inline constexpr std::uint64_t kMaxTerminalSize = 1000;
inline constexpr unsigned char kDefaultDetachKey = 0x1d;  // Ctrl-]

// Plain decimal digits that fit in 64 bits; nothing else ("+1", "0x10", " 1", "-1" all fail).
std::optional<std::uint64_t> parse_u64(std::string_view text);
// "K=V" with a non-empty K free of '='; V may be empty or hold more '='.
std::optional<std::pair<std::string, std::string>> parse_env_entry(std::string_view text);
// A detach key: "^X" (caret notation: ^@ .. ^_, ^? = DEL, letters either case), one ASCII
// character, or "none" (no key detaches). nullopt = invalid.
struct DetachKeyChoice {
  bool none = false;
  unsigned char key = 0;
};
std::optional<DetachKeyChoice> parse_detach_key(std::string_view text);
// The key as people write it ("^]", "x").
std::string key_name(unsigned char key);

// What a message shows for a value the user gave: as typed, shell-quoted when it holds spaces
// or control characters, "nothing" when empty. Every validator says "expected X, got VALUE".
std::string shown(std::string_view value);

// CLI11 validators for the above; each names what it expected and what it got, and adds nothing
// to --help (the option's own type name, N or CURSOR, says what it takes).
CLI::Validator u64_value();
// A decimal integer in [lo, hi]: "expected lo..hi, got VALUE".
CLI::Validator u64_in(std::uint64_t lo, std::uint64_t hi);
CLI::Validator terminal_size();
// An epoch as status and snapshot print it: 16 hex digits.
CLI::Validator epoch_value();
CLI::Validator env_entry();
CLI::Validator detach_key();
// A cursor (decimal) or an event reference KIND:N (N a signed decimal); the kind itself is the
// engine's to check.
CLI::Validator at_value();
// history --lines: A..B (tools/cli_line_range.hpp).
CLI::Validator line_range_value();
// Seconds as people type them ("30", "0.5": at most three decimals), more than 0, at most a
// day; nullopt otherwise. And its validator.
std::optional<std::chrono::milliseconds> parse_seconds(const std::string& text);
CLI::Validator seconds_value();
// A capture line number: a signed decimal, or "-".
CLI::Validator line_value();

}  // namespace backscroll::cli
