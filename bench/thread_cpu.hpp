// CPU time of a process's threads by thread name, for benchmarks that say where an engine's
// time goes: its io thread ("backscrolld"), "bs-mirror", "bs-writer". Read from
// /proc/PID/task/TID/schedstat (nanoseconds on a CPU, user and system together) rather than
// stat's utime and stime, which count 10 ms ticks: a writer's 40 ms on a 32 MiB flood was 4
// ticks, so its CPU per MB moved in steps of 25%.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace backscroll::bench {

// Seconds on a CPU per thread name (threads of one name summed).
inline std::map<std::string, double> thread_cpu_seconds(pid_t pid) {
  std::map<std::string, double> out;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    double ns = 0;
    if (name.empty() || !(std::ifstream(task.path() / "schedstat") >> ns)) continue;
    out[name] += ns / 1e9;
  }
  return out;
}

}  // namespace backscroll::bench
