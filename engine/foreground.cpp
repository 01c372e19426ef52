#include "engine/foreground.hpp"

#include <termios.h>
#include <unistd.h>

#include <filesystem>

#include "engine/proc_file.hpp"

namespace backscroll::engine {
namespace {

std::optional<Foreground> read_process(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  Foreground f;
  f.pid = pid;
  f.command = read_proc_file(dir + "/comm", 64);
  if (f.command.empty()) return std::nullopt;  // gone
  if (f.command.back() == '\n') f.command.pop_back();
  // A kernel thread or a zombie has no command line: the name stands for it.
  const std::string cmdline = read_proc_file(dir + "/cmdline", kMaxForegroundArgvBytes);
  std::size_t at = 0;
  while (at < cmdline.size()) {
    std::size_t end = cmdline.find('\0', at);
    if (end == std::string::npos) end = cmdline.size();
    f.argv.emplace_back(cmdline, at, end - at);
    at = end + 1;
  }
  std::error_code ec;
  const auto cwd = std::filesystem::read_symlink(dir + "/cwd", ec);
  if (!ec) f.cwd = cwd.string();
  return f;
}

}  // namespace

std::optional<Foreground> foreground_of(int master_fd, pid_t leader) {
  const pid_t group = ::tcgetpgrp(master_fd);
  if (group > 0) {
    if (auto f = read_process(group)) return f;
  }
  return leader > 0 ? read_process(leader) : std::nullopt;
}

}  // namespace backscroll::engine
