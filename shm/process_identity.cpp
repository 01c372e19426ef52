#include "shm/process_identity.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace backscroll {

std::optional<std::uint64_t> ProcessIdentity::start_ticks_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name (field 2) is in parentheses and may contain spaces: parse after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  // Field 3, the state: a zombie (Z) or dead (X) process has exited, whatever its pid says.
  if (!(fields >> field) || field == "Z" || field == "X") return std::nullopt;
  // Fields 4..22; starttime is field 22.
  for (int i = 4; i <= 22; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (...) {
    return std::nullopt;
  }
}

ProcessIdentity ProcessIdentity::self() {
  const pid_t pid = ::getpid();
  return ProcessIdentity{pid, start_ticks_of(pid).value_or(0)};
}

bool ProcessIdentity::alive() const {
  if (pid <= 0) return false;
  const auto ticks = start_ticks_of(pid);
  return ticks && *ticks == start_ticks;
}

}  // namespace backscroll
