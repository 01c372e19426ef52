#include "tools/cli_output.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace backscroll::cli {
namespace {

// Engine messages are data from another process: keep the report on one line.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return text;
}

void print_line(std::string_view text) {
  std::string line = "backscroll: ";
  line += text;
  line += '\n';
  (void)write_all(STDERR_FILENO, line);
}

}  // namespace

std::string describe(const Error& error) {
  std::string text = error.describe();
  if (error.cursor) {
    const std::string number = std::to_string(*error.cursor);
    if (text.find(number) == std::string::npos) {
      if (error.code == Errc::cursor_expired) {
        text += " (oldest retained cursor " + number + ")";
      } else if (error.code == Errc::cursor_in_future) {
        text += " (committed cursor " + number + ")";
      } else {
        text += " (cursor " + number + ")";
      }
    }
  }
  return one_line(std::move(text));
}

int report(const Error& error) {
  print_line(describe(error));
  return kExitError;
}

int report_usage(std::string_view message) {
  print_line("usage: " + one_line(std::string(message)));
  return kExitUsage;
}

void warn(std::string_view message) { print_line(one_line(std::string(message))); }

Result<void> write_all(int fd, std::span<const std::byte> bytes) {
  const auto* p = reinterpret_cast<const char*>(bytes.data());
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd pfd{fd, POLLOUT, 0};
        (void)::poll(&pfd, 1, -1);
        continue;
      }
      return fail_errno("write fd " + std::to_string(fd), errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return {};
}

Result<void> write_all(int fd, std::string_view bytes) {
  return write_all(fd, std::as_bytes(std::span(bytes.data(), bytes.size())));
}

std::string shell_quote(std::string_view arg) {
  const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(arg);
  std::string out = "'";
  for (const char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return one_line(std::move(out));
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(arg);
  }
  return out;
}

std::string Table::render() const {
  std::vector<std::size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace backscroll::cli
