// bench/persistence_bench: what durable transcripts cost (issue 4), each figure measured in one
// run against the same engine without persistence:
//   1. flood throughput with persistence on, as a ratio to persistence off: without the mirror
//      (the drain alone, where the writer thread could show) and with it (the default engine);
//   2. seal latency: `stop` of an actor whose last `--seal-bytes` are written but not synced,
//      until the answer (the session sealed, with persistence: its transcript fsynced);
//   3. restart: a persisting engine with `--actors` actors of `--history-bytes` retained history
//      each, from exec until it answers and until every actor's snapshot (its last screen,
//      rebuilt from the transcript: cold restore) is answered, with its page cache warm, and
//      with --drop-caches (root only; it empties the whole machine's page cache) cold; then
//      the same after the first engine was killed (SIGKILL) right after the floods, so each
//      restore replays the bytes after an older keyframe.
//
//   persistence_bench [--bytes N] [--rounds R] [--seal-bytes N] [--actors N]
//                     [--history-bytes N] [--drop-caches] [--restart-only] [--json FILE]
//
// The state dirs are under /tmp (the disk the engine would use by default is the user's home;
// the machine line in docs/performance.md says which disk that was).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/engine_under_test.hpp"
#include "bench/flood_drain.hpp"

namespace {

using namespace backscroll;
using bench::bin_dir;
using bench::Clock;
using bench::EngineUnderTest;
using bench::median;
using Json = nlohmann::json;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::uint64_t committed(EngineUnderTest& engine, const std::string& actor) {
  const auto status = engine.call("status", {{"actor", actor}});
  return status.header["actors"][0]["committed"].get<std::uint64_t>();
}

// Committed bytes the actor's durable transcript has not written yet (status `transcript_lag`).
std::uint64_t transcript_lag(EngineUnderTest& engine, const std::string& actor) {
  const auto status = engine.call("status", {{"actor", actor}});
  const auto& lag = status.header["actors"][0]["transcript_lag"];
  return lag.is_number() ? lag.get<std::uint64_t>() : 0;
}

// Polls until the actor's committed cursor has not moved for `quiet`.
void wait_quiet(EngineUnderTest& engine, const std::string& actor,
                std::chrono::milliseconds quiet) {
  std::uint64_t last = committed(engine, actor);
  auto since = Clock::now();
  while (Clock::now() - since < quiet) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::uint64_t now = committed(engine, actor);
    if (now != last) {
      last = now;
      since = Clock::now();
    }
  }
}

// Writes `bytes` of text, then waits (its output stays unsynced until the stop seals it); the
// time from `stop` to its answer.
double seal_latency_ms(EngineUnderTest& engine, const std::string& actor, std::uint64_t bytes) {
  const std::string writer = (bin_dir() / "flood_writer").string();
  engine.call(
      "spawn",
      {{"actor", actor},
       {"argv", {"sh", "-c", "\"$0\" \"$1\"; exec sleep 1000", writer, std::to_string(bytes)}}});
  wait_quiet(engine, actor, std::chrono::milliseconds(200));
  const auto start = Clock::now();
  engine.call("stop", {{"actor", actor}, {"grace_ms", 0}});
  const double ms = ms_since(start);
  engine.call("delete", {{"actor", actor}});
  return ms;
}

// Empties the page cache (after a sync); false when not permitted.
bool drop_caches() {
  ::sync();
  std::ofstream out("/proc/sys/vm/drop_caches");
  out << "3\n";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t flood_bytes = 256ull << 20;
  int rounds = 3;
  std::uint64_t seal_bytes = 10ull << 20;
  int actors = 64;
  std::uint64_t history_bytes = 4ull << 20;
  std::string json_path;
  bool cold_restart = false;
  bool restart_only = false;
  CLI::App app{"what durable transcripts cost: flood ratio, seal latency, restart time"};
  app.add_option("--bytes", flood_bytes, "bytes the child writes per flood")->capture_default_str();
  app.add_option("--rounds", rounds, "floods and seals per configuration")->capture_default_str();
  app.add_option("--seal-bytes", seal_bytes, "unsynced bytes before the stop")
      ->capture_default_str();
  app.add_option("--actors", actors, "actors of the restart")->capture_default_str();
  app.add_option("--history-bytes", history_bytes, "retained history per actor at the restart")
      ->capture_default_str();
  app.add_flag("--drop-caches", cold_restart,
               "also restart with the page cache dropped (root; affects the whole machine)");
  app.add_flag("--restart-only", restart_only, "measure only the restart (section 3)");
  app.add_option("--json", json_path, "also write the results as JSON here");
  CLI11_PARSE(app, argc, argv);
  Json out = {{"flood_bytes", flood_bytes},
              {"rounds", rounds},
              {"seal_bytes", seal_bytes},
              {"actors", actors},
              {"history_bytes", history_bytes}};

  // 1 and 2: four engines, floods alternating between them.
  if (!restart_only) {
    struct Config {
      const char* name;
      std::vector<std::string> flags;
      std::unique_ptr<EngineUnderTest> engine;
      std::vector<double> mb_s, seal_ms;
    };
    std::vector<Config> configs;
    configs.push_back({"--no-mirror", {"--no-mirror"}, nullptr, {}, {}});
    configs.push_back({"--no-mirror --persist", {"--no-mirror", "--persist"}, nullptr, {}, {}});
    configs.push_back({"mirror", {}, nullptr, {}, {}});
    configs.push_back({"mirror --persist", {"--persist"}, nullptr, {}, {}});
    for (auto& c : configs) c.engine = std::make_unique<EngineUnderTest>(c.flags);
    for (int r = 0; r < rounds; ++r) {
      for (auto& c : configs) {
        const auto s = bench::engine_flood(*c.engine, "flood" + std::to_string(r),
                                           bench::flood_writer_argv(flood_bytes));
        c.mb_s.push_back(s.mb_per_s());
        c.seal_ms.push_back(seal_latency_ms(*c.engine, "seal" + std::to_string(r), seal_bytes));
        std::fprintf(stderr, "round %d %-22s %.1f MB/s, stop->sealed %.1f ms\n", r, c.name,
                     s.mb_per_s(), c.seal_ms.back());
      }
    }
    const double base_nm = median(configs[0].mb_s), persist_nm = median(configs[1].mb_s);
    const double base_m = median(configs[2].mb_s), persist_m = median(configs[3].mb_s);
    std::printf(
        "| flood, %llu bytes per run (median of %d) | MB/s | ratio persist/off |\n|---|---|---|\n",
        static_cast<unsigned long long>(flood_bytes), rounds);
    std::printf("| --no-mirror, persistence off | %.1f | |\n", base_nm);
    std::printf("| --no-mirror, persistence on | %.1f | %.3f |\n", persist_nm,
                persist_nm / base_nm);
    std::printf("| mirror on, persistence off | %.1f | |\n", base_m);
    std::printf("| mirror on, persistence on | %.1f | %.3f |\n\n", persist_m, persist_m / base_m);
    std::printf("| stop -> sealed, %llu unsynced bytes (median of %d) | ms |\n|---|---|\n",
                static_cast<unsigned long long>(seal_bytes), rounds);
    for (const auto& c : configs) std::printf("| %s | %.1f |\n", c.name, median(c.seal_ms));
    std::printf("\n");
    for (const auto& c : configs) {
      out["configs"][c.name] = {{"mb_s", c.mb_s}, {"seal_ms", c.seal_ms}};
    }
    out["ratio_no_mirror"] = persist_nm / base_nm;
    out["ratio_mirror"] = persist_m / base_m;
  }

  // 3: restart with retained history, after a clean stop and after a crash.
  {
    const std::string writer = (bin_dir() / "flood_writer").string();
    // A state dir whose engine flooded every actor, then shut down (`crash`: was killed).
    const auto recorded = [&](bool crash) {
      char tmpl[] = "/tmp/backscroll-restart-XXXXXX";
      const std::filesystem::path root = ::mkdtemp(tmpl);
      EngineUnderTest first({"--persist"}, root);
      for (int i = 0; i < actors; ++i) {
        first.call("spawn", {{"actor", "a" + std::to_string(i)},
                             {"argv", {writer, std::to_string(history_bytes)}}});
      }
      for (int i = 0; i < actors; ++i)
        wait_quiet(first, "a" + std::to_string(i), std::chrono::milliseconds(50));
      if (crash) {
        // Killed as soon as the floods are in the transcripts (written, not synced: a killed
        // engine's pages stay in the page cache): the newest keyframes on disk are older than
        // the last screens (the mirror parses behind the drain), so each restore replays the
        // bytes after its keyframe (docs/recorder.md, "Cold restore"). Not before: bytes the
        // writer had not written yet are lost by design (reported as a gap), and a restore
        // shows what came before them, a blank screen for an actor the writer never reached
        // (a CI run on a loaded machine killed the engine there).
        const auto deadline = Clock::now() + std::chrono::seconds(30);
        for (int i = 0; i < actors; ++i) {
          while (transcript_lag(first, "a" + std::to_string(i)) != 0) {
            if (Clock::now() > deadline) {
              std::fprintf(stderr, "restart: a%d's transcript never caught up\n", i);
              std::exit(1);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
        }
        first.crash();
        return root;
      }
      // Until each mirror has parsed its actor's flood and kept the last screen (a stop right
      // after a flood waits for those at most 500 ms; past that a restore replays from an older
      // keyframe, as after a crash).
      for (int i = 0; i < actors; ++i) {
        const std::string actor = "a" + std::to_string(i);
        const std::uint64_t end = committed(first, actor);
        while (first.call("events", {{"actor", actor}, {"kinds", {"keyframe"}}, {"from", end}})
                   .header["events"]
                   .empty()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      return root;  // shutdown: every transcript sealed
    };
    struct Restart {
      double answer_ms;
      double screens_ms;
    };
    const auto restart = [&](const std::filesystem::path& root, const char* label) {
      // Until the first answer: the socket accepts connections (the kernel queues them) before
      // the engine has restored its actors and serves.
      const auto start = Clock::now();
      EngineUnderTest engine({"--persist"}, root);
      const auto list = engine.call("list");
      const double answer_ms = ms_since(start);
      if (list.header["actors"].size() != static_cast<std::size_t>(actors)) {
        std::fprintf(stderr, "restart: %zu actors came back, not %d\n",
                     list.header["actors"].size(), actors);
        std::exit(1);
      }
      // Until every last screen is back: each snapshot is answered by a mirror rebuilt from
      // the actor's last keyframe, at its committed cursor, showing the flood's last lines.
      for (int i = 0; i < actors; ++i) {
        const std::string actor = "a" + std::to_string(i);
        const auto snap = engine.call("snapshot", {{"actor", actor}});
        if (snap.header["format"] != "snapshot_v1" ||
            snap.header["cursor"].get<std::uint64_t>() != committed(engine, actor) ||
            snap.header["scrollback_lines"].get<std::uint64_t>() == 0) {
          std::fprintf(stderr, "restart: %s came back without its last screen: %s\n", actor.c_str(),
                       snap.header.dump().c_str());
          // Why (a restore with a blank screen says so in the log), for a failure seen once.
          std::ifstream log(root / "engine.log");
          std::fprintf(stderr, "----- the restarted engine's log -----\n%s----- end -----\n",
                       std::string(std::istreambuf_iterator<char>(log), {}).c_str());
          std::exit(1);
        }
      }
      const double screens_ms = ms_since(start);
      std::fprintf(stderr, "restart (%s): answers after %.1f ms, every screen after %.1f ms\n",
                   label, answer_ms, screens_ms);
      return Restart{answer_ms, screens_ms};
    };
    const std::filesystem::path stopped = recorded(false);
    std::uintmax_t disk = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(stopped / "state"))
      if (e.is_regular_file()) disk += e.file_size();
    const Restart warm = restart(stopped, "warm page cache");
    std::optional<Restart> cold;
    if (cold_restart && drop_caches()) cold = restart(stopped, "caches dropped");
    std::filesystem::remove_all(stopped);
    const std::filesystem::path crashed = recorded(true);
    const Restart after_crash = restart(crashed, "after a crash");
    std::filesystem::remove_all(crashed);
    std::printf(
        "| restart, %d actors x %llu bytes of history (%.0f MiB on disk) | ms to answer | ms "
        "until every last screen is back (goal < 1000) |\n|---|---|---|\n",
        actors, static_cast<unsigned long long>(history_bytes),
        static_cast<double>(disk) / (1 << 20));
    std::printf("| page cache warm | %.1f | %.1f |\n", warm.answer_ms, warm.screens_ms);
    if (cold)
      std::printf("| page cache dropped | %.1f | %.1f |\n", cold->answer_ms, cold->screens_ms);
    else std::printf("| page cache dropped | not measured (--drop-caches, root) | |\n");
    std::printf("| after a crash (replays from older keyframes) | %.1f | %.1f |\n",
                after_crash.answer_ms, after_crash.screens_ms);
    out["restart_warm_ms"] = warm.answer_ms;
    out["restart_warm_screens_ms"] = warm.screens_ms;
    out["restart_cold_ms"] = cold ? Json(cold->answer_ms) : Json(nullptr);
    out["restart_cold_screens_ms"] = cold ? Json(cold->screens_ms) : Json(nullptr);
    out["restart_crash_ms"] = after_crash.answer_ms;
    out["restart_crash_screens_ms"] = after_crash.screens_ms;
    out["restart_disk_bytes"] = disk;
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}
