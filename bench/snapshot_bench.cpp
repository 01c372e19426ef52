// bench/snapshot_bench: what a newly opened client waits for, and what the mirror costs.
//
//   snapshot_bench [--quick] [--recorder-only] [--json FILE]
//
// 1. Mirror parse throughput per workload (in process, 64 KiB feeds): plain log lines, build
//    output with SGR colours, TUI full-screen redraws with cursor addressing. MB/s.
// 2. Snapshot build time (in process) for 80x24 + 512 history lines and 200x50 + 10,000 lines,
//    on a mirror full of history: p50 / p99 / max and the snapshot's size.
// 3. The `snapshot` op through a real engine (request to reply, client side), 80x24 + 512
//    lines and 200x50 + 10,000 lines, with the actor idle and while it floods (flood_writer
//    in a loop); and a quiet actor's snapshot while 8 other actors flood. Each with where its
//    time went (the op's `timing` option): to the mirror thread, in it, back to the io thread,
//    and the transport.
// 4. The screen at a past cursor (`snapshot --at`) and `backscroll search` over a 50 MB stream,
//    all in the ring and from the transcript (docs/recorder.md).
// --recorder-only runs section 4 alone. Timings are printed, never asserted (--quick, for CI, only
// checks that everything runs).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/engine_under_test.hpp"
#include "bench/stats.hpp"
#include "bench/workloads.hpp"
#include "engine/term/mirror.hpp"

namespace {

using namespace backscroll;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Percentiles of snapshot latencies, with every sample (the report's distribution plots) and
// the fewest history lines a snapshot op drew.
struct Percentiles : bench::Percentiles {
  std::vector<double> samples;
  std::size_t fewest_lines = 0;
  // Where the time went (the op's `timing` option), by part, in ms: the engine's own measures
  // (to_mirror, catch_up, build, to_answer) and "transport" (the rest: the request reaching the
  // io thread, the answer reaching this client); and "ping", a `ping`'s whole round trip asked
  // just before each snapshot: what any request waits for under the same load.
  std::vector<std::pair<std::string, bench::Percentiles>> parts{};
};

Percentiles percentiles(const std::vector<double>& ms) { return {bench::percentiles(ms), ms, 0}; }

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double parse_mb_s(const std::string& workload, int cols, int rows) {
  term::Mirror m(Cursor{0}, static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows));
  const auto t = Clock::now();
  for (std::size_t at = 0; at < workload.size(); at += 64 * 1024) {
    m.feed(std::string_view(workload).substr(at, 64 * 1024));
  }
  return static_cast<double>(workload.size()) / (ms_since(t) / 1000.0) / 1e6;
}

struct SnapshotCost {
  Percentiles ms;
  std::size_t bytes = 0;
};

SnapshotCost snapshot_cost(int cols, int rows, std::size_t history, int samples) {
  term::Mirror m(Cursor{0}, static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows));
  m.feed(bench::build_output(std::max<std::size_t>(history, 512) * 120 + 200'000));
  term::SnapshotOptions options;
  options.scrollback_lines = history;
  std::vector<double> ms;
  SnapshotCost cost;
  for (int i = 0; i < samples; ++i) {
    const auto t = Clock::now();
    const auto s = m.snapshot(options);
    ms.push_back(ms_since(t));
    cost.bytes = s.snapshot.bytes.size();
  }
  cost.ms = percentiles(ms);
  return cost;
}

// Request-to-reply times of the snapshot op for `actor`.
Percentiles op_latency(bench::EngineUnderTest& engine, const std::string& actor,
                       std::size_t history, int samples) {
  std::vector<double> ms;
  std::size_t fewest = history;
  std::map<std::string, std::vector<double>> parts;
  for (int i = 0; i < samples; ++i) {
    // The floor under the same load: a `ping` does no work, so its round trip is the
    // transport alone (the two threads' and this client's wake-ups).
    const auto p = Clock::now();
    engine.call("ping");
    parts["ping"].push_back(ms_since(p));
    const auto t = Clock::now();
    const auto r =
        engine.call("snapshot", {{"actor", actor}, {"scrollback", history}, {"timing", true}});
    ms.push_back(ms_since(t));
    if (const auto timing = r.header.find("timing_us"); timing != r.header.end()) {
      double engine_ms = 0;
      for (const char* part : {"to_mirror", "catch_up", "build", "to_answer"}) {
        const double part_ms = timing->value(part, 0.0) / 1e3;
        parts[part].push_back(part_ms);
        engine_ms += part_ms;
      }
      parts["transport"].push_back(std::max(0.0, ms.back() - engine_ms));
    }
    fewest = std::min<std::size_t>(fewest, r.header.value("scrollback_lines", std::size_t{0}));
    if (r.header.value("format", "") != "snapshot_v1" && i == 0) {
      std::fprintf(stderr, "note: %s answered %s (%s)\n", actor.c_str(),
                   r.header.value("format", "").c_str(), r.header.value("reason", "").c_str());
    }
  }
  Percentiles p = percentiles(ms);
  p.fewest_lines = fewest;
  for (const char* part : {"to_mirror", "catch_up", "build", "to_answer", "transport", "ping"})
    if (!parts[part].empty()) p.parts.emplace_back(part, bench::percentiles(parts[part]));
  const auto status = engine.call("status", {{"actor", actor}});
  if (status.header.contains("mirror"))
    std::fprintf(stderr, "note: mirror so far: %s\n", status.header["mirror"].dump().c_str());
  return p;
}

std::vector<std::string> flood_forever() {
  return {"sh", "-c",
          "while :; do " + (bench::bin_dir() / "flood_writer").string() + " 67108864; done"};
}

// Rows of the parts table, printed after the op table.
std::vector<std::string> g_part_rows;

void row(const char* what, const Percentiles& p, json& out, const std::string& key) {
  std::printf("| %s | %.3f | %.3f | %.3f |\n", what, p.p50, p.p99, p.max);
  out[key] = {{"p50_ms", p.p50},
              {"p99_ms", p.p99},
              {"max_ms", p.max},
              {"samples_ms", p.samples},
              {"fewest_history_lines", p.fewest_lines}};
  std::string parts_row = std::string("| ") + what;
  for (const auto& [part, q] : p.parts) {
    out[key]["parts"][part] = {{"p50_ms", q.p50}, {"p99_ms", q.p99}};
    char cell[64];
    std::snprintf(cell, sizeof cell, " | %.3f / %.3f", q.p50, q.p99);
    parts_row += cell;
  }
  if (!p.parts.empty()) g_part_rows.push_back(parts_row + " |");
}

// `backscroll search ACTOR PATTERN` against `engine`, its output discarded: wall seconds and
// the child's CPU seconds (user + system).
struct Timed {
  double wall_s = 0;
  double cpu_s = 0;
};
Timed time_search(const bench::EngineUnderTest& engine, const std::string& actor,
                  const std::string& pattern) {
  const std::string cli = (bench::bin_dir() / "backscroll").string();
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("BACKSCROLL_RUNTIME_DIR", engine.places().runtime_dir.c_str(), 1);
    ::setenv("BACKSCROLL_HOME", engine.places().state_dir.c_str(), 1);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::execl(cli.c_str(), cli.c_str(), "--no-autostart", "search", actor.c_str(), pattern.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  const double wall = ms_since(start) / 1000;
  if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
    std::fprintf(stderr, "bench: search '%s' failed (status %d)\n", pattern.c_str(), status);
    std::exit(1);
  }
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return {wall, seconds(usage.ru_utime) + seconds(usage.ru_stime)};
}

// The screen at a past cursor (docs/recorder.md): an actor that printed 48 MiB of log lines,
// build output and full-screen redraws (4 MiB with --quick); request to reply for random cursors
// of it. Either all of it in its ring or, `from_transcript`, in a persisting engine with the
// default ring (10 MiB): most bytes and keyframes then come from the transcript.
void screen_at_latency(bool quick, int samples, bool from_transcript, json& out) {
  const std::size_t third = quick ? (1u << 20) : (16u << 20);
  const std::string stream =
      bench::log_lines(third) + bench::build_output(third) + bench::tui_redraws(third, 24);
  char dir_template[] = "/tmp/backscroll-screen-at-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(dir_template);
  const std::filesystem::path file = dir / "stream";
  std::ofstream(file, std::ios::binary) << stream;
  {
    // A ring larger than what the PTY makes of the stream (LF becomes CR LF), or the default
    // ring and a transcript that retains all of it.
    const std::string all = std::to_string(stream.size() * 2 + (8u << 20));
    std::vector<std::string> flags{"--ring-bytes", all};
    std::filesystem::path root;
    if (from_transcript) {
      flags = {"--persist", "--ring-bytes", std::to_string(10u << 20)};
      root = dir;
      std::filesystem::create_directories(root / "state");
      std::ofstream(root / "state" / "settings.yaml")
          << "terminal_transcript:\n  per_actor_bytes: " << all << "\n";
    }
    bench::EngineUnderTest engine(flags, root);
    engine.call("spawn", {{"actor", "rec"},
                          {"cols", 80},
                          {"rows", 24},
                          {"argv", {"sh", "-c", "cat '" + file.string() + "'; exec sleep 1000"}}});
    std::uint64_t committed = 0;
    for (std::uint64_t last = 1; committed != last;) {  // until it stops growing
      last = committed;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      committed = engine.call("status", {{"actor", "rec"}}).header["actors"][0]["committed"];
    }
    // The oldest cursor the keyframes held in memory can answer.
    std::uint64_t oldest = 0;
    if (auto probe = engine.client().call("snapshot", {{"actor", "rec"}, {"at", 1}});
        !probe && probe.error().code == Errc::cursor_expired && probe.error().cursor) {
      oldest = *probe.error().cursor;
    }
    std::mt19937_64 random(7);
    std::vector<double> ms;
    double replayed = 0;
    int answered = 0;
    for (int i = 0; i < samples; ++i) {
      const std::uint64_t at = oldest + random() % (committed - oldest + 1);
      const auto t = Clock::now();
      const auto r = engine.call("snapshot", {{"actor", "rec"}, {"at", at}});
      ms.push_back(ms_since(t));
      if (r.header.value("format", "") == "snapshot_v1") ++answered;
      replayed += r.header.value("replayed_bytes", 0.0);
    }
    const Percentiles p = percentiles(ms);
    const auto keyframes = engine.call("events", {{"actor", "rec"}, {"kinds", {"keyframe"}}});
    std::printf(
        "\n## The screen at a past cursor (request to reply, 80x24 + 512)%s\n\n"
        "| stream | answerable | keyframes | cursors | snapshot_v1 | mean replayed | "
        "p50 ms | p99 ms | max ms |\n|---|---|---|---|---|---|---|---|---|\n| %.1f MB | the "
        "last %.1f MB | %zu | %d | %d | %.0f KiB | %.3f | %.3f | %.3f |\n",
        from_transcript ? ", from the transcript (10 MiB ring)" : ", all in the ring",
        static_cast<double>(committed) / 1e6, static_cast<double>(committed - oldest) / 1e6,
        keyframes.header["events"].size(), samples, answered, replayed / samples / 1024, p.p50,
        p.p99, p.max);
    // Search (docs/recorder.md, "Search"): the whole stream, three patterns (none matches, every
    // seventh line matches, ten lines match), 3 rounds each; median wall and CPU per pattern.
    json search = json::object();
    std::printf(
        "\n| search pattern | median wall s | MB/s | CLI CPU s | MB per CPU s |\n"
        "|---|---|---|---|---|\n");
    for (const char* pattern : {"no such text zzz", "warning: .*unused", "unit1234[0-9]\\.dir"}) {
      std::vector<double> wall, cpu;
      for (int round = 0; round < (quick ? 1 : 3); ++round) {
        const Timed t = time_search(engine, "rec", pattern);
        wall.push_back(t.wall_s);
        cpu.push_back(t.cpu_s);
      }
      const double mb = static_cast<double>(committed) / 1e6;
      const double wall_s = bench::median(wall), cpu_s = bench::median(cpu);
      std::printf("| `%s` | %.3f | %.0f | %.3f | %.0f |\n", pattern, wall_s, mb / wall_s, cpu_s,
                  mb / cpu_s);
      json& row = search[pattern];
      row["wall_s"] = wall;
      row["cpu_s"] = cpu;
      row["mb_per_s"] = mb / wall_s;
      row["mb_per_cpu_s"] = mb / cpu_s;
    }
    out[from_transcript ? "search_transcript" : "search"] = search;
    out[from_transcript ? "screen_at_transcript" : "screen_at"] = {
        {"stream_bytes", committed},
        {"answerable_bytes", committed - oldest},
        {"keyframes", keyframes.header["events"].size()},
        {"answered", answered},
        {"mean_replayed_bytes", replayed / samples},
        {"p50_ms", p.p50},
        {"p99_ms", p.p99},
        {"max_ms", p.max},
        {"samples_ms", p.samples}};
  }
  std::filesystem::remove_all(dir);
}

// Sections 1-3.
void mirror_and_snapshot_op(bool quick, int samples, json& out) {
  const std::size_t workload_bytes = quick ? (1u << 20) : (16u << 20);
  std::printf("## Mirror parse throughput (in process)\n\n| workload | MB/s |\n|---|---|\n");
  for (const auto& [name, bytes] :
       {std::pair<const char*, std::string>{"log lines", bench::log_lines(workload_bytes)},
        {"build output (SGR)", bench::build_output(workload_bytes)},
        {"TUI redraws 80x24", bench::tui_redraws(workload_bytes, 24)},
        {"UTF-8 text (wide, accents)", bench::utf8_lines(workload_bytes)}}) {
    const double mb = parse_mb_s(bytes, 80, 24);
    std::printf("| %s | %.1f |\n", name, mb);
    out["parse_mb_s"][name] = mb;
  }

  std::printf(
      "\n## Snapshot build (in process, mirror full of history)\n\n"
      "| screen + history | p50 ms | p99 ms | max ms | bytes |\n|---|---|---|---|---|\n");
  for (const auto& [cols, rows, history] :
       {std::tuple{80, 24, std::size_t{512}}, std::tuple{200, 50, std::size_t{10'000}}}) {
    const SnapshotCost c = snapshot_cost(cols, rows, history, samples);
    const std::string key =
        std::to_string(cols) + "x" + std::to_string(rows) + "+" + std::to_string(history);
    std::printf("| %s | %.3f | %.3f | %.3f | %zu |\n", key.c_str(), c.ms.p50, c.ms.p99, c.ms.max,
                c.bytes);
    out["build"][key] = {
        {"p50_ms", c.ms.p50}, {"p99_ms", c.ms.p99}, {"max_ms", c.ms.max}, {"bytes", c.bytes}};
  }

  std::printf(
      "\n## The snapshot op through the engine (request to reply)\n\n"
      "| case | p50 ms | p99 ms | max ms |\n|---|---|---|---|\n");
  bench::EngineUnderTest engine({});
  engine.call("spawn", {{"actor", "small"},
                        {"cols", 80},
                        {"rows", 24},
                        {"argv", {"sh", "-c", "seq 1 3000; exec sleep 1000"}}});
  engine.call("spawn", {{"actor", "big"},
                        {"cols", 200},
                        {"rows", 50},
                        {"argv", {"sh", "-c", "seq 1 20000; exec sleep 1000"}}});
  std::this_thread::sleep_for(std::chrono::seconds(2));
  row("80x24 + 512, idle", op_latency(engine, "small", 512, samples), out, "op_80x24_idle");
  row("200x50 + 10000, idle", op_latency(engine, "big", 10'000, samples / 4 + 1), out,
      "op_200x50_idle");
  engine.call("delete", {{"actor", "small"}});
  engine.call("delete", {{"actor", "big"}});
  // Flooding: measured once the mirror holds a full screen and history of the flood.
  const auto settle = std::chrono::milliseconds(quick ? 300 : 1500);
  engine.call("spawn", {{"actor", "small"}, {"cols", 80}, {"rows", 24}, {"argv", flood_forever()}});
  std::this_thread::sleep_for(settle);
  row("80x24 + 512, flooding", op_latency(engine, "small", 512, samples), out, "op_80x24_flooding");
  engine.call("delete", {{"actor", "small"}});
  engine.call("spawn", {{"actor", "big"}, {"cols", 200}, {"rows", 50}, {"argv", flood_forever()}});
  std::this_thread::sleep_for(settle);
  row("200x50 + 10000, flooding", op_latency(engine, "big", 10'000, samples / 4 + 1), out,
      "op_200x50_flooding");
  engine.call("delete", {{"actor", "big"}});
  engine.call("spawn", {{"actor", "quiet"}, {"argv", {"sh", "-c", "seq 1 1000; exec sleep 1000"}}});
  for (int i = 0; i < 8; ++i) {
    engine.call("spawn", {{"actor", "flood" + std::to_string(i)}, {"argv", flood_forever()}});
  }
  std::this_thread::sleep_for(settle);
  row("quiet 80x24 + 512, 8 others flooding", op_latency(engine, "quiet", 512, samples), out,
      "op_quiet_8_flooding");

  for (int i = 0; i < 8; ++i) engine.call("delete", {{"actor", "flood" + std::to_string(i)}});
  engine.call("delete", {{"actor", "quiet"}});

  std::printf(
      "\nWhere the op's time went (p50 / p99 ms of each part; the engine measures the first\n"
      "four: waiting for the mirror thread, for its mirror to be ready, the build, waiting for\n"
      "the io thread to answer; transport is the rest; ping: a `ping`'s round trip just before,\n"
      "the floor any request meets under the same load):\n\n"
      "| case | to mirror | catch up | build | to answer | transport | ping |\n"
      "|---|---|---|---|---|---|---|\n");
  for (const std::string& r : g_part_rows) std::printf("%s\n", r.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_path;
  CLI::App app{"snapshot latency and mirror throughput"};
  app.add_flag("--quick", quick, "small sizes and few samples (CI smoke run)");
  bool recorder_only = false;
  app.add_flag("--recorder-only", recorder_only,
               "only the screen at a past cursor and search (section 4)");
  app.add_option("--json", json_path, "also write the results as JSON here");
  bool no_recorder = false;
  app.add_flag("--no-recorder", no_recorder, "skip the screen at a past cursor and search")
      ->excludes("--recorder-only");
  int samples = 0;
  app.add_option("--samples", samples,
                 "requests per case (default 200, 10 with --quick); a p99 of 200 is the second "
                 "largest, so telling two builds apart takes thousands")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (samples == 0) samples = quick ? 10 : 200;
  json out;
  if (!recorder_only) mirror_and_snapshot_op(quick, samples, out);
  if (!no_recorder) {
    screen_at_latency(quick, samples, false, out);
    screen_at_latency(quick, samples, true, out);
  }

  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}
