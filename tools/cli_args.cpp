#include "tools/cli_args.hpp"

#include <algorithm>
#include <charconv>

#include <CLI/CLI.hpp>

#include "tools/cli_line_range.hpp"
#include "tools/cli_output.hpp"

namespace backscroll::cli {

std::optional<std::uint64_t> parse_u64(std::string_view text) {
  if (text.empty()) return std::nullopt;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::pair<std::string, std::string>> parse_env_entry(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  return std::pair{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

std::optional<DetachKeyChoice> parse_detach_key(std::string_view text) {
  if (text == "none") return DetachKeyChoice{true, 0};
  if (text.size() == 2 && text[0] == '^') {
    char c = text[1];
    if (c == '?') return DetachKeyChoice{false, 0x7f};
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c >= '@' && c <= '_') return DetachKeyChoice{false, static_cast<unsigned char>(c - '@')};
    return std::nullopt;
  }
  if (text.size() == 1 && static_cast<unsigned char>(text[0]) < 0x80) {
    return DetachKeyChoice{false, static_cast<unsigned char>(text[0])};
  }
  return std::nullopt;
}

std::string key_name(unsigned char key) {
  if (key == 0x7f) return "^?";
  if (key < 0x20) return std::string{'^', static_cast<char>(key + '@')};
  return std::string(1, static_cast<char>(key));
}

std::string shown(std::string_view value) {
  if (value.empty()) return "nothing";
  const bool plain = std::all_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u > ' ' && u != 0x7f && c != '\'' && c != '"';
  });
  return plain ? std::string(value) : shell_quote(value);
}

CLI::Validator u64_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_u64(text)) return {};
        return "expected a decimal integer 0..18446744073709551615, got " + shown(text);
      },
      "");
}

CLI::Validator u64_in(std::uint64_t lo, std::uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const auto v = parse_u64(text);
        if (v && *v >= lo && *v <= hi) return {};
        return "expected " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
               shown(text);
      },
      "");
}

CLI::Validator terminal_size() { return u64_in(kMinTerminalSize, kMaxTerminalSize); }

CLI::Validator epoch_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool hex =
            text.size() == 16 && std::all_of(text.begin(), text.end(), [](char c) {
              return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
            });
        if (hex) return {};
        return "expected 16 hex digits (as status prints the epoch), got " + shown(text);
      },
      "");
}

CLI::Validator env_entry() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_env_entry(text)) return {};
        return "expected NAME=VALUE, got " + shown(text);
      },
      "");
}

CLI::Validator detach_key() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_detach_key(text)) return {};
        return "expected ^X, one ASCII character or none, got " + shown(text);
      },
      "");
}

CLI::Validator at_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_u64(text)) return {};
        const auto colon = text.find(':');
        if (colon != std::string::npos && colon > 0) {
          std::string_view n = std::string_view(text).substr(colon + 1);
          if (!n.empty() && n.front() == '-') n.remove_prefix(1);
          if (!n.empty() && parse_u64(n)) return {};
        }
        return "expected a cursor or KIND:N (prompt:-1, title:0), got " + shown(text);
      },
      "");
}

CLI::Validator line_range_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_line_range(text)) return {};
        return "expected lines A..B (1..20, -50.., ..-2, 7), numbered from 1, got " + shown(text);
      },
      "");
}

CLI::Validator line_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string_view digits = text;
        if (digits == "-") return {};
        if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
        if (!digits.empty() && digits.size() <= 9 && parse_u64(digits)) return {};
        return "expected a line number (0, 5, -100) or -, got " + shown(text);
      },
      "");
}

// Seconds as people type them: "30", "0.5"; positive, at most a day.
std::optional<std::chrono::milliseconds> parse_seconds(const std::string& text) {
  const auto dot = text.find('.');
  const auto whole = parse_u64(text.substr(0, dot));
  if (!whole || *whole > 86400) return std::nullopt;
  std::uint64_t ms = *whole * 1000;
  if (dot != std::string::npos) {
    const std::string fraction = text.substr(dot + 1);
    if (fraction.empty() || fraction.size() > 3 || !parse_u64(fraction)) return std::nullopt;
    ms += *parse_u64((fraction + "00").substr(0, 3));
  }
  if (ms == 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

CLI::Validator seconds_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_seconds(text)) return {};
        return "expected seconds, more than 0 and at most 86400 (30, 0.5), got " + shown(text);
      },
      "");
}

}  // namespace backscroll::cli
