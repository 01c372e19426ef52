// CPU time of a process's threads by thread name (/proc/PID/task/*/stat), for benchmarks that
// say where an engine's time goes: its io thread ("backscrolld"), "bs-mirror", "bs-writer".
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace backscroll::bench {

// Seconds of user + system time per thread name (threads of one name summed).
inline std::map<std::string, double> thread_cpu_seconds(pid_t pid) {
  std::map<std::string, double> out;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string name = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    out[name] += (utime + stime) / tick;
  }
  return out;
}

}  // namespace backscroll::bench
