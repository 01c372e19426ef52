#include "tools/cli_time.hpp"

#include "tools/cli_args.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

#include <CLI/CLI.hpp>

namespace backscroll::cli {
namespace {

// Reads exactly `digits` decimal digits at `at`, advancing it.
std::optional<int> digits_at(std::string_view text, std::size_t& at, std::size_t digits) {
  if (at + digits > text.size()) return std::nullopt;
  int v = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const char c = text[at + i];
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  at += digits;
  return v;
}

bool take(std::string_view text, std::size_t& at, char c) {
  if (at < text.size() && text[at] == c) {
    ++at;
    return true;
  }
  return false;
}

std::optional<std::int64_t> parse_duration_ago(std::string_view text, std::int64_t now) {
  if (text.size() < 2) return std::nullopt;
  std::int64_t n = 0;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9' || n > 1'000'000'000) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  std::int64_t unit_ms = 0;
  switch (text.back()) {
    case 's': unit_ms = 1000; break;
    case 'm': unit_ms = 60'000; break;
    case 'h': unit_ms = 3'600'000; break;
    case 'd': unit_ms = 86'400'000; break;
    default: return std::nullopt;
  }
  return now - n * unit_ms;
}

std::optional<std::int64_t> parse_iso8601(std::string_view text) {
  std::size_t at = 0;
  const auto year = digits_at(text, at, 4);
  if (!year || !take(text, at, '-')) return std::nullopt;
  const auto month = digits_at(text, at, 2);
  if (!month || !take(text, at, '-')) return std::nullopt;
  const auto day = digits_at(text, at, 2);
  if (!day || *month < 1 || *month > 12 || *day < 1 || *day > 31) return std::nullopt;
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  int ms = 0;
  if (at < text.size()) {
    if (!take(text, at, 'T') && !take(text, at, ' ')) return std::nullopt;
    const auto hour = digits_at(text, at, 2);
    if (!hour || !take(text, at, ':')) return std::nullopt;
    const auto minute = digits_at(text, at, 2);
    if (!minute || *hour > 23 || *minute > 59) return std::nullopt;
    tm.tm_hour = *hour;
    tm.tm_min = *minute;
    if (take(text, at, ':')) {
      const auto second = digits_at(text, at, 2);
      if (!second || *second > 60) return std::nullopt;
      tm.tm_sec = *second;
      if (take(text, at, '.') || take(text, at, ',')) {
        int scale = 100;
        std::size_t fraction_digits = 0;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
          ms += (text[at] - '0') * scale;
          scale /= 10;
          ++at;
          ++fraction_digits;
        }
        if (fraction_digits == 0) return std::nullopt;
      }
    }
  }
  std::optional<int> offset_minutes;  // none: local time
  if (take(text, at, 'Z') || take(text, at, 'z')) {
    offset_minutes = 0;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    const int sign = text[at++] == '-' ? -1 : 1;
    const auto oh = digits_at(text, at, 2);
    if (!oh) return std::nullopt;
    take(text, at, ':');
    const auto om = digits_at(text, at, 2);
    if (!om || *oh > 23 || *om > 59) return std::nullopt;
    offset_minutes = sign * (*oh * 60 + *om);
  }
  if (at != text.size()) return std::nullopt;
  std::int64_t seconds = 0;
  if (offset_minutes) {
    seconds = static_cast<std::int64_t>(::timegm(&tm)) - std::int64_t{*offset_minutes} * 60;
  } else {
    tm.tm_isdst = -1;
    seconds = static_cast<std::int64_t>(std::mktime(&tm));
  }
  return seconds * 1000 + ms;
}

}  // namespace

std::optional<std::int64_t> parse_time(std::string_view text, std::int64_t now) {
  if (auto ago = parse_duration_ago(text, now)) return ago;
  return parse_iso8601(text);
}

std::string format_time(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  const int millis = static_cast<int>(ms - std::int64_t{seconds} * 1000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return out;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

CLI::Validator time_value() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        if (parse_time(text, now_ms())) return {};
        return "expected an ISO 8601 time (2026-12-02T14:03:07Z) or a duration back from now "
               "(90s, 15m, 2h, 3d), got " +
               shown(text);
      },
      "");
}

}  // namespace backscroll::cli
