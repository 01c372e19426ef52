// Output conventions of the `backscroll` CLI (docs/cli.md): errors are one line on stderr,
// "backscroll: CODE: message"; exit status 0 = done, 1 = the engine, the protocol or the OS
// refused, 2 = the command line is wrong. Also whole writes to a descriptor and aligned tables.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shm/error.hpp"

namespace backscroll::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// "CODE: message", on one line, with the cursor an error carries when the message lacks it.
std::string describe(const Error& error);
// Prints "backscroll: CODE: message" and returns kExitError.
int report(const Error& error);
// Prints "backscroll: usage: message" and returns kExitUsage.
int report_usage(std::string_view message);
// Prints "backscroll: message" (a warning that does not end the command).
void warn(std::string_view message);

// Writes every byte (retrying EINTR, waiting out EAGAIN on a non-blocking descriptor).
Result<void> write_all(int fd, std::span<const std::byte> bytes);
Result<void> write_all(int fd, std::string_view bytes);

// One argument as a POSIX shell would need it quoted; used to show argv to people.
std::string shell_quote(std::string_view arg);
std::string shell_join(const std::vector<std::string>& argv);

// Left-aligned columns separated by two spaces; the first row is the heading.
class Table {
 public:
  explicit Table(std::vector<std::string> heading) { rows_.push_back(std::move(heading)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace backscroll::cli
