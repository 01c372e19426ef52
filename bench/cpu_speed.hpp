// How fast each CPU runs the same loop right now, for benchmarks that report CPU time per MB.
// On this machine kind (a shared VM) one vCPU at times ran a fixed spin loop 1.7-2.8x slower
// than the other for minutes, then both were level again (2026-12-05): the guest sees no steal
// time, only a slower CPU, and every thread it runs then spends more CPU per MB. flood_suite
// measures it before each round so that a round's figures can be read with it.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace backscroll::bench {

// The CPU time (not wall time: a preempted loop does not count) the calling thread spends on
// a fixed chain of dependent multiplications, in seconds.
inline double spin_cpu_seconds() {
  timespec start{};
  timespec end{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  std::uint64_t x = 1;
  for (int i = 0; i < 4'000'000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));  // the loop stays between the two clock reads
  }
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
  return static_cast<double>(end.tv_sec - start.tv_sec) +
         static_cast<double>(end.tv_nsec - start.tv_nsec) / 1e9;
}

// Each CPU the calling thread may run on and a thread could be pinned to: the loop's time there
// over the fastest one's (1.0 for the fastest), in increasing CPU number. A few milliseconds
// per CPU, so a sample of that moment, not of a whole benchmark.
inline std::vector<double> cpu_slowdowns() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<double> seconds;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    double taken = 0;
    std::thread pinned([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      if (::pthread_setaffinity_np(::pthread_self(), sizeof one, &one) != 0) return;
      spin_cpu_seconds();  // warm up: the first run pays for waking the CPU up
      taken = spin_cpu_seconds();
    });
    pinned.join();
    if (taken > 0) seconds.push_back(taken);
  }
  if (seconds.empty()) return {};
  const double fastest = *std::min_element(seconds.begin(), seconds.end());
  for (double& s : seconds) s /= fastest;
  return seconds;
}

}  // namespace backscroll::bench
