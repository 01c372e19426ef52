// bench/scale_bench: many actors (issue 5, goal 4).
//
//   scale_bench [--quick] [--json FILE]
//
// 1. Aggregate drain: one engine (as shipped) with 64 actors, 8 of them flooding at once (each
//    drained by a reader thread here), against 8 plain read() loops flooding at once on their
//    own PTYs, alternating in one run; the ratio of aggregate MB/s.
// 2. Memory per idle actor: the engine's private memory (RssAnon) and shared memory (RssShmem:
//    ring pages written) with 64 idle actors that each printed a screenful, minus the same
//    engine with none, per actor.
// 3. Soak: floods in a loop (spawn, drain, delete; 8 MiB each) for --soak-seconds (600; 10 with
//    --quick) while the engine's RssAnon is sampled every second: the medians of the first and
//    the last quarter, and the maximum.
// Timings and sizes are printed, never asserted.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/engine_under_test.hpp"
#include "bench/flood_drain.hpp"

namespace {

using namespace backscroll;
using nlohmann::json;

// kB from a "Name:   123 kB" line of /proc/PID/status.
double status_kib(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + ":", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return 0;
}

double seconds_since(bench::Clock::time_point t) {
  return std::chrono::duration<double>(bench::Clock::now() - t).count();
}

// 8 floods at once: aggregate MB/s.
double plain_loops(int n, std::uint64_t bytes) {
  std::vector<std::thread> threads;
  std::vector<std::uint64_t> drained(static_cast<std::size_t>(n));
  const auto start = bench::Clock::now();
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] { drained[static_cast<std::size_t>(i)] = bench::plain_loop(bench::flood_writer_argv(bytes)).bytes; });
  for (auto& t : threads) t.join();
  std::uint64_t total = 0;
  for (auto d : drained) total += d;
  return static_cast<double>(total) / seconds_since(start) / 1e6;
}

double engine_floods(bench::EngineUnderTest& engine, int n, std::uint64_t bytes, int round) {
  std::vector<std::thread> threads;
  std::vector<std::uint64_t> drained(static_cast<std::size_t>(n));
  const auto start = bench::Clock::now();
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      // Each thread its own control connection: EngineUnderTest's client is not shared.
      auto client = control::ControlClient::connect(engine.places());
      if (!client) bench::fail(client.error());
      drained[static_cast<std::size_t>(i)] =
          bench::engine_flood(engine.places(), *client,
                              "flood" + std::to_string(round) + "-" + std::to_string(i),
                              bench::flood_writer_argv(bytes))
              .bytes;
    });
  }
  for (auto& t : threads) t.join();
  std::uint64_t total = 0;
  for (auto d : drained) total += d;
  return static_cast<double>(total) / seconds_since(start) / 1e6;
}

void spawn_idle(bench::EngineUnderTest& engine, int n) {
  for (int i = 0; i < n; ++i) {
    engine.call("spawn", {{"actor", "idle" + std::to_string(i)},
                          {"argv", {"sh", "-c", "seq 1 100; exec sleep 100000"}}});
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // their output mirrored
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_path;
  int soak_seconds = 600;
  CLI::App app{"many actors: aggregate drain, memory per idle actor, RSS over a soak"};
  app.add_flag("--quick", quick, "small floods, a 10 s soak (CI smoke run)");
  app.add_option("--soak-seconds", soak_seconds, "length of the soak")->capture_default_str();
  app.add_option("--json", json_path, "also write the results as JSON here");
  CLI11_PARSE(app, argc, argv);
  if (quick) soak_seconds = std::min(soak_seconds, 10);
  const std::uint64_t flood_bytes = quick ? (4u << 20) : (64u << 20);
  const int rounds = quick ? 1 : 3;
  json out;

  // 1. Aggregate drain, 8 of 64 actors flooding.
  {
    bench::EngineUnderTest engine({});
    spawn_idle(engine, 56);
    std::vector<double> plain, shipped;
    for (int r = 0; r < rounds; ++r) {
      plain.push_back(plain_loops(8, flood_bytes));
      shipped.push_back(engine_floods(engine, 8, flood_bytes, r));
      std::fprintf(stderr, "round %d: 8 plain loops %.1f MB/s, engine (64 actors, 8 flooding) %.1f MB/s\n",
                   r, plain.back(), shipped.back());
    }
    const double p = bench::median(plain), e = bench::median(shipped);
    std::printf("| scale | figure |\n|---|---|\n");
    std::printf("| aggregate drain, 8 of 64 actors flooding / 8 plain loops (medians of %d) | "
                "%.1f / %.1f MB/s: ratio %.3f |\n", rounds, e, p, e / p);
    out["aggregate"] = {{"plain_mb_s", plain}, {"engine_mb_s", shipped}, {"ratio", e / p}};
  }

  // 2. Memory per idle actor.
  {
    bench::EngineUnderTest engine({});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double anon0 = status_kib(engine.pid(), "RssAnon"), shm0 = status_kib(engine.pid(), "RssShmem");
    spawn_idle(engine, 64);
    const double anon = (status_kib(engine.pid(), "RssAnon") - anon0) / 64;
    const double shm = (status_kib(engine.pid(), "RssShmem") - shm0) / 64;
    std::printf("| memory per idle actor (64 actors): private / ring pages written | %.0f KiB / %.0f KiB |\n",
                anon, shm);
    out["idle_actor_kib"] = {{"private", anon}, {"ring_pages", shm}};
  }

  // 3. Soak.
  {
    bench::EngineUnderTest engine({});
    std::vector<double> rss;
    const auto start = bench::Clock::now();
    int floods = 0;
    auto next_sample = start;
    while (seconds_since(start) < soak_seconds) {
      (void)bench::engine_flood(engine, "soak", bench::flood_writer_argv(8u << 20));
      ++floods;
      if (bench::Clock::now() >= next_sample) {
        rss.push_back(status_kib(engine.pid(), "RssAnon") / 1024);
        next_sample += std::chrono::seconds(1);
      }
    }
    // Growth: the median of the last quarter's samples against the first quarter's (a sample
    // taken during a flood reads a little more than one taken between two).
    const std::size_t quarter = std::max<std::size_t>(1, rss.size() / 4);
    const double early = bench::median({rss.begin(), rss.begin() + static_cast<std::ptrdiff_t>(quarter)});
    const double late = bench::median({rss.end() - static_cast<std::ptrdiff_t>(quarter), rss.end()});
    double max = 0;
    for (double v : rss) max = std::max(max, v);
    std::printf("| soak, %d s, %d floods of 8 MiB: private memory, first quarter / last quarter "
                "(medians) / max | %.1f / %.1f / %.1f MiB |\n", soak_seconds, floods, early, late, max);
    out["soak"] = {{"seconds", soak_seconds}, {"floods", floods}, {"rss_anon_mib", rss},
                   {"early_mib", early}, {"late_mib", late}, {"growth_mib", late - early}};
  }
  std::fprintf(stderr, "checksum %llu\n", static_cast<unsigned long long>(bench::g_checksum));
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}
