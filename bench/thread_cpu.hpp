// CPU time of a process's threads by thread name, for benchmarks that say where an engine's
// time goes: its io thread ("backscrolld"), "bs-mirror", "bs-writer", "bs-control". Read from
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

struct ThreadTime {
  double seconds = 0;  // on a CPU
  double runs = 0;     // times put on a CPU (schedstat's third field): wake-ups and preemptions
};

// Per thread name (threads of one name summed).
inline std::map<std::string, ThreadTime> thread_times(pid_t pid) {
  std::map<std::string, ThreadTime> out;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    double ns = 0;
    double waited_ns = 0;
    double runs = 0;
    if (name.empty() || !(std::ifstream(task.path() / "schedstat") >> ns >> waited_ns >> runs))
      continue;
    out[name].seconds += ns / 1e9;
    out[name].runs += runs;
  }
  return out;
}

// Seconds on a CPU per thread name.
inline std::map<std::string, double> thread_cpu_seconds(pid_t pid) {
  std::map<std::string, double> out;
  for (const auto& [name, t] : thread_times(pid)) out[name] = t.seconds;
  return out;
}

}  // namespace backscroll::bench
