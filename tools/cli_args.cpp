#include "tools/cli_args.hpp"

#include <charconv>

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

CLI::Validator u64_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_u64(text)) return {};
        return "expected a decimal integer 0..18446744073709551615, got '" + text + "'";
      },
      "");
}

CLI::Validator terminal_size() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = parse_u64(text);
        if (v && *v >= kMinTerminalSize && *v <= kMaxTerminalSize) return {};
        return "expected an integer 1..1000, got '" + text + "'";
      },
      "");
}

CLI::Validator env_entry() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_env_entry(text)) return {};
        return "expected NAME=VALUE, got '" + text + "'";
      },
      "");
}

CLI::Validator detach_key() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_detach_key(text)) return {};
        return "expected ^X, one ASCII character, or none; got '" + text + "'";
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
        return "expected a cursor or KIND:N (prompt:-1, title:0), got '" + text + "'";
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
        return "expected a line number (0, 5, -100) or -, got '" + text + "'";
      },
      "");
}

}  // namespace backscroll::cli
