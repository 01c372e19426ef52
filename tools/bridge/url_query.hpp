// The query of a request target ("/ws?actor=a&role=viewer"): names to percent-decoded values.
// A name given twice keeps its first value; malformed escapes make the whole query invalid.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace backscroll::bridge {

inline std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      if (i + 2 >= text.size()) return std::nullopt;  // "%" or "%x" at the end
      const int hi = hex(text[i + 1]), lo = hex(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

struct RequestTarget {
  std::string path;
  std::map<std::string, std::string> query;
};

inline std::optional<RequestTarget> parse_target(std::string_view target) {
  RequestTarget out;
  const auto question = target.find('?');
  auto path = percent_decode(target.substr(0, question));
  if (!path) return std::nullopt;
  out.path = std::move(*path);
  if (question == std::string_view::npos) return out;
  std::string_view rest = target.substr(question + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq));
    auto value =
        percent_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1));
    if (!name || !value) return std::nullopt;
    out.query.emplace(std::move(*name), std::move(*value));
  }
  return out;
}

}  // namespace backscroll::bridge
