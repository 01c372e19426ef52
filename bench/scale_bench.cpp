// bench/scale_bench: many actors (issue 5, goal 4).
//
//   scale_bench [--quick] [--json FILE] [--workload plain|log|build|color|utf8|tui]
//
// 1. Aggregate drain: one engine (as shipped) with 64 actors, 8 of them flooding at once (each
//    drained by a reader thread here), against 8 plain read() loops flooding at once on their
//    own PTYs, alternating in one run; the ratio of aggregate MB/s.
// 2. Memory per idle actor: the engine's private memory (RssAnon) and shared memory (RssShmem:
//    ring pages written) with 64 idle actors that each printed a screenful, minus the same
//    engine with none, per actor.
// 3. Soak, for --soak-seconds (600; 10 with --quick): 64 actors, 56 idle and 8 flooding in a
//    loop (spawn, drain, delete; 8 MiB each), every flood read by a shm reader here that checks
//    each byte against what flood_writer printed (no byte lost, changed or added); meanwhile a
//    client attaches to an actor (a viewer, so a snapshot) and detaches, again and again. Every
//    second the engine's RssAnon is sampled: its slope (least squares), the medians of the first
//    and the last quarter, the maximum; and the attaches' latency, p50 / p99 per minute.
// Timings and sizes are printed, never asserted.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/engine_under_test.hpp"
#include "bench/flood_block.hpp"
#include "bench/flood_drain.hpp"
#include "bench/workloads.hpp"

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

// 8 floods of `argv` at once: aggregate MB/s.
double plain_loops(int n, const std::vector<std::string>& argv) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  std::vector<std::uint64_t> drained(static_cast<std::size_t>(n));
  const auto start = bench::Clock::now();
  for (int i = 0; i < n; ++i)
    threads.emplace_back(
        [&, i] { drained[static_cast<std::size_t>(i)] = bench::plain_loop(argv).bytes; });
  for (auto& t : threads) t.join();
  std::uint64_t total = 0;
  for (auto d : drained) total += d;
  return static_cast<double>(total) / seconds_since(start) / 1e6;
}

double engine_floods(bench::EngineUnderTest& engine, int n, const std::vector<std::string>& argv,
                     int round) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  std::vector<std::uint64_t> drained(static_cast<std::size_t>(n));
  const auto start = bench::Clock::now();
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      // Each thread its own control connection: EngineUnderTest's client is not shared.
      auto client = control::ControlClient::connect(engine.places());
      if (!client) bench::fail(client.error());
      drained[static_cast<std::size_t>(i)] =
          bench::engine_flood(engine.places(), *client,
                              "flood" + std::to_string(round) + "-" + std::to_string(i), argv)
              .bytes;
    });
  }
  for (auto& t : threads) t.join();
  std::uint64_t total = 0;
  for (auto d : drained) total += d;
  return static_cast<double>(total) / seconds_since(start) / 1e6;
}

// One flood of `raw_bytes` in a new actor, read by a shm reader that compares every byte with
// `cooked` (flood_writer's block as the PTY passes it on, repeated). What is missing at the end,
// surplus, different or overwritten before it was read counts as lost.
struct CheckedFlood {
  std::uint64_t bytes = 0;  // read and equal to what was printed
  std::uint64_t lost = 0;
};

CheckedFlood checked_flood(const Places& places, control::ControlClient& client,
                           const std::string& actor, std::uint64_t raw_bytes,
                           const std::string& cooked) {
  const auto spawned =
      client.call("spawn", {{"actor", actor}, {"argv", bench::flood_writer_argv(raw_bytes)}});
  if (!spawned) bench::fail(spawned.error());
  const std::uint64_t session = spawned->header["session"].get<std::uint64_t>();
  const Cursor from{spawned->header["cursor"].get<std::uint64_t>()};
  auto reader = shm::RingReader::open(places, actor);
  if (!reader) bench::fail(reader.error());
  CheckedFlood result;
  Cursor cursor = from;
  for (;;) {
    // Taken before looking, so a wake from here on ends the wait below.
    const std::uint32_t wake_seen = reader->wake_seen();
    auto view = reader->read(cursor, 1 << 20);
    if (!view) {
      if (view.error().code != Errc::cursor_expired || !view.error().cursor)
        bench::fail(view.error());
      result.lost += *view.error().cursor - value(cursor);  // overwritten unread
      cursor = Cursor{*view.error().cursor};
      continue;
    }
    if (!view->empty()) {
      std::uint64_t offset = (cursor - from) % cooked.size();
      std::uint64_t wrong = 0;
      for (const auto span : {view->first, view->second}) {
        for (std::size_t i = 0; i < span.size();) {
          const std::size_t n = std::min<std::size_t>(span.size() - i, cooked.size() - offset);
          if (std::memcmp(span.data() + i, cooked.data() + offset, n) != 0) {
            for (std::size_t k = 0; k < n; ++k)
              wrong += static_cast<char>(span[i + k]) != cooked[offset + k];
          }
          i += n;
          offset = (offset + n) % cooked.size();
        }
      }
      if (!reader->intact(cursor)) {
        result.lost += view->size();  // torn: the engine lapped this reader
      } else {
        result.lost += wrong;
        result.bytes += view->size() - wrong;
      }
      cursor = view->to;
      continue;
    }
    const auto record = reader->session(session);
    if (record && (record->flags & shm::kSessionSealed) && Cursor{record->end} <= cursor) break;
    reader->wait(cursor, std::chrono::milliseconds(100), wake_seen);
  }
  const std::uint64_t expected = bench::cooked_flood_bytes(raw_bytes);
  const std::uint64_t got = cursor - from;
  result.lost += got > expected ? got - expected : expected - got;
  (void)client.call("delete", {{"actor", actor}});
  return result;
}

// Least-squares slope of `samples` taken one second apart, per minute.
double slope_per_minute(const std::vector<double>& samples) {
  const double n = static_cast<double>(samples.size());
  if (n < 2) return 0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double x = static_cast<double>(i);
    sx += x;
    sy += samples[i];
    sxx += x * x;
    sxy += x * samples[i];
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx) * 60;
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
  std::string workload = "plain";
  app.add_option("--workload", workload,
                 "what the 8 floods of part 1 print: plain (flood_writer's text lines), or a file "
                 "of log, build, color, utf8 or tui output printed by cat")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (quick) soak_seconds = std::min(soak_seconds, 10);
  const std::uint64_t flood_bytes = quick ? (4u << 20) : (64u << 20);
  const int rounds = quick ? 1 : 3;
  json out;

  // 1. Aggregate drain, 8 of 64 actors flooding.
  {
    std::vector<std::string> flood = bench::flood_writer_argv(flood_bytes);
    char folder[] = "/tmp/backscroll-scale-XXXXXX";
    const std::filesystem::path dir = ::mkdtemp(folder);
    if (workload != "plain") {
      const auto text = bench::workload_named(workload, flood_bytes);
      if (!text) {
        std::fprintf(stderr, "scale_bench: no workload '%s'\n", workload.c_str());
        return 2;
      }
      const std::filesystem::path file = dir / (workload + ".txt");
      std::ofstream(file, std::ios::binary) << bench::as_printed_file(*text);
      flood = {"cat", file.string()};
    }
    bench::EngineUnderTest engine({});
    spawn_idle(engine, 56);
    std::vector<double> plain, shipped;
    for (int r = 0; r < rounds; ++r) {
      plain.push_back(plain_loops(8, flood));
      shipped.push_back(engine_floods(engine, 8, flood, r));
      std::fprintf(stderr,
                   "round %d: 8 plain loops %.1f MB/s, engine (64 actors, 8 flooding) %.1f MB/s\n",
                   r, plain.back(), shipped.back());
    }
    const double p = bench::median(plain), e = bench::median(shipped);
    std::printf("| scale | figure |\n|---|---|\n");
    std::printf(
        "| aggregate drain, 8 of 64 actors flooding %s / 8 plain loops (medians of %d) | "
        "%.1f / %.1f MB/s: ratio %.3f |\n",
        workload.c_str(), rounds, e, p, e / p);
    out["aggregate"] = {
        {"workload", workload}, {"plain_mb_s", plain}, {"engine_mb_s", shipped}, {"ratio", e / p}};
    std::filesystem::remove_all(dir);
  }

  // 2. Memory per idle actor.
  {
    bench::EngineUnderTest engine({});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double anon0 = status_kib(engine.pid(), "RssAnon"),
                 shm0 = status_kib(engine.pid(), "RssShmem");
    spawn_idle(engine, 64);
    const double anon = (status_kib(engine.pid(), "RssAnon") - anon0) / 64;
    const double shm = (status_kib(engine.pid(), "RssShmem") - shm0) / 64;
    std::printf(
        "| memory per idle actor (64 actors): private / ring pages written | %.0f KiB / %.0f KiB "
        "|\n",
        anon, shm);
    out["idle_actor_kib"] = {{"private", anon}, {"ring_pages", shm}};
  }

  // 3. Soak.
  {
    bench::EngineUnderTest engine({});
    constexpr int kFlooding = 8;
    constexpr int kIdle = 56;
    spawn_idle(engine, kIdle);
    const std::string cooked = bench::cooked_flood_block();
    const auto start = bench::Clock::now();
    const auto deadline = start + std::chrono::seconds(soak_seconds);
    std::atomic<std::uint64_t> verified{0}, lost{0}, floods{0};
    std::vector<std::thread> workers;
    workers.reserve(kFlooding);
    for (int i = 0; i < kFlooding; ++i) {
      workers.emplace_back([&, i] {
        auto client = control::ControlClient::connect(engine.places());
        if (!client) bench::fail(client.error());
        for (int k = 0; bench::Clock::now() < deadline; ++k) {
          const CheckedFlood f =
              checked_flood(engine.places(), *client,
                            "soak" + std::to_string(i) + "-" + std::to_string(k), 8u << 20, cooked);
          verified += f.bytes;
          lost += f.lost;
          ++floods;
        }
      });
    }
    // Attach and detach, one viewer at a time, over idle and flooding actors.
    std::mutex latency_mutex;
    std::vector<std::vector<double>> attach_ms_per_minute(
        static_cast<std::size_t>(soak_seconds / 60 + 1));
    std::atomic<std::uint64_t> attaches{0}, attach_errors{0};
    workers.emplace_back([&] {
      auto client = control::ControlClient::connect(engine.places());
      if (!client) bench::fail(client.error());
      std::mt19937 rng(7);
      while (bench::Clock::now() < deadline) {
        const int pick = static_cast<int>(rng() % (kIdle + kFlooding));
        std::string actor = "idle" + std::to_string(pick);
        if (pick >= kIdle) {  // a flooding actor: whichever is live now, found by `list`
          auto listed = client->call("list");
          if (!listed) bench::fail(listed.error());
          std::vector<std::string> live;
          for (const auto& a : listed->header["actors"])
            if (a["name"].get<std::string>().rfind("soak", 0) == 0) live.push_back(a["name"]);
          if (live.empty()) continue;
          actor = live[rng() % live.size()];
        }
        const auto t0 = bench::Clock::now();
        auto attached = client->call("attach", {{"actor", actor}, {"role", "viewer"}});
        if (!attached) {
          if (pick < kIdle) bench::fail(attached.error());
          ++attach_errors;  // the flood ended and its actor went between list and attach
          continue;
        }
        const double ms =
            std::chrono::duration<double, std::milli>(bench::Clock::now() - t0).count();
        (void)client->call("detach", {{"attachment", attached->header["attachment"]}});
        {
          const std::lock_guard lock(latency_mutex);
          attach_ms_per_minute[static_cast<std::size_t>(seconds_since(start) / 60)].push_back(ms);
        }
        ++attaches;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    std::vector<double> rss;
    for (auto next = start; bench::Clock::now() < deadline; next += std::chrono::seconds(1)) {
      std::this_thread::sleep_until(next);
      rss.push_back(status_kib(engine.pid(), "RssAnon") / 1024);
    }
    for (auto& t : workers) t.join();
    // The medians of the last quarter's samples against the first quarter's (a sample taken
    // during a flood reads a little more than one taken between two), and the slope.
    const std::size_t quarter = std::max<std::size_t>(1, rss.size() / 4);
    const double early =
        bench::median({rss.begin(), rss.begin() + static_cast<std::ptrdiff_t>(quarter)});
    const double late =
        bench::median({rss.end() - static_cast<std::ptrdiff_t>(quarter), rss.end()});
    double max = 0;
    for (double v : rss) max = std::max(max, v);
    const double slope = slope_per_minute(rss);
    std::printf(
        "| soak, %d s, 64 actors, 8 flooding (%llu floods of 8 MiB): bytes checked / lost | "
        "%.1f MiB / %llu |\n",
        soak_seconds, static_cast<unsigned long long>(floods.load()),
        static_cast<double>(verified.load()) / (1 << 20),
        static_cast<unsigned long long>(lost.load()));
    std::printf(
        "| soak: private memory, first quarter / last quarter (medians) / max; slope | "
        "%.1f / %.1f / %.1f MiB; %+.3f MiB per minute |\n",
        early, late, max, slope);
    json per_minute = json::array();
    for (std::size_t m = 0; m < attach_ms_per_minute.size(); ++m) {
      if (attach_ms_per_minute[m].empty()) continue;
      const bench::Percentiles p = bench::percentiles(attach_ms_per_minute[m]);
      std::printf(
          "| soak: attach (viewer, with its snapshot) in minute %zu: p50 / p99 / max of %zu | "
          "%.2f / %.2f / %.2f ms |\n",
          m + 1, attach_ms_per_minute[m].size(), p.p50, p.p99, p.max);
      per_minute.push_back({{"minute", m + 1},
                            {"samples", attach_ms_per_minute[m].size()},
                            {"p50_ms", p.p50},
                            {"p99_ms", p.p99},
                            {"max_ms", p.max}});
    }
    out["soak"] = {{"seconds", soak_seconds},
                   {"floods", floods.load()},
                   {"bytes_checked", verified.load()},
                   {"bytes_lost", lost.load()},
                   {"attaches", attaches.load()},
                   {"attach_errors", attach_errors.load()},
                   {"attach_per_minute", per_minute},
                   {"rss_anon_mib", rss},
                   {"early_mib", early},
                   {"late_mib", late},
                   {"growth_mib", late - early},
                   {"slope_mib_per_minute", slope}};
  }
  std::fprintf(stderr, "checksum %llu\n", static_cast<unsigned long long>(bench::g_checksum));
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}
