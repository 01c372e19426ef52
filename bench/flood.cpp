// bench/flood: PTY flood throughput of the engine with one shm reader attached, as a ratio to a
// plain blocking read() loop draining the same flood on the same kind of PTY, in the same run
// (docs/design.md, "How it is proved"): the engine as it runs (its mirror thread parses every byte
// and holds the PTY back while behind) and the engine with --no-mirror (the drain alone). Runs the
// three alternately, `--rounds` times each, and reports medians.
//
//   flood [--bytes N] [--rounds R] [--ring-bytes N] [--json FILE]
//
// The child (flood_writer) writes N bytes of text lines through a cooked PTY (a shell's default
// termios, so ONLCR turns each \n into \r\n and the drained byte count is larger than N). Both
// sides time from "spawn" to "every byte of the session drained".
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/engine_under_test.hpp"
#include "bench/flood_drain.hpp"

using namespace backscroll;
using bench::engine_flood;
using bench::g_checksum;
using bench::median;
using bench::Sample;

int main(int argc, char** argv) {
  std::uint64_t flood_bytes = 1ull << 30;
  int rounds = 3;
  std::uint64_t ring_bytes = 10'485'760;
  std::string json_path;
  CLI::App app{
      "PTY flood: engine (mirror on, and --no-mirror) + one shm reader vs a plain "
      "read() loop, same run"};
  app.add_option("--bytes", flood_bytes, "bytes the child writes per flood")->capture_default_str();
  app.add_option("--rounds", rounds, "floods per side (alternating)")->capture_default_str();
  app.add_option("--ring-bytes", ring_bytes, "engine ring size")->capture_default_str();
  app.add_option("--json", json_path, "also write the results as JSON here");
  CLI11_PARSE(app, argc, argv);

  bench::EngineUnderTest with_mirror({"--ring-bytes", std::to_string(ring_bytes)});
  bench::EngineUnderTest without_mirror(
      {"--ring-bytes", std::to_string(ring_bytes), "--no-mirror"});
  std::vector<double> plain, mirrored, drain_only;
  std::uint64_t plain_bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto child = bench::flood_writer_argv(flood_bytes);
    const Sample p = bench::plain_loop(child);
    const Sample m = engine_flood(with_mirror, "flood" + std::to_string(r), child);
    const Sample d = engine_flood(without_mirror, "flood" + std::to_string(r), child);
    plain.push_back(p.mb_per_s());
    mirrored.push_back(m.mb_per_s());
    drain_only.push_back(d.mb_per_s());
    plain_bytes = p.bytes;
    if (p.bytes != m.bytes || p.bytes != d.bytes) {
      std::fprintf(stderr, "flood: drained %llu bytes with the mirror, %llu without, %llu plain\n",
                   static_cast<unsigned long long>(m.bytes),
                   static_cast<unsigned long long>(d.bytes),
                   static_cast<unsigned long long>(p.bytes));
      return 1;
    }
    std::fprintf(
        stderr, "round %d (%llu B): plain %.1f MB/s, engine %.1f MB/s, --no-mirror %.1f MB/s\n", r,
        static_cast<unsigned long long>(p.bytes), p.mb_per_s(), m.mb_per_s(), d.mb_per_s());
  }
  std::fprintf(stderr, "reader checksum %llu\n", static_cast<unsigned long long>(g_checksum));
  const double p50 = median(plain), m50 = median(mirrored), d50 = median(drain_only);
  std::printf(
      "| drain (%llu bytes per flood) | MB/s (median of %d) | ratio to plain |\n|---|---|---|\n",
      static_cast<unsigned long long>(plain_bytes), rounds);
  std::printf("| plain blocking read() loop | %.1f | 1 |\n", p50);
  std::printf("| backscrolld + 1 shm reader (mirror on) | %.1f | %.3f |\n", m50, m50 / p50);
  std::printf("| backscrolld --no-mirror + 1 shm reader | %.1f | %.3f |\n", d50, d50 / p50);
  if (!json_path.empty()) {
    nlohmann::json out = {{"flood_bytes", flood_bytes},   {"rounds", rounds},
                          {"plain_mb_s", plain},          {"engine_mb_s", mirrored},
                          {"no_mirror_mb_s", drain_only}, {"plain_median", p50},
                          {"engine_median", m50},         {"no_mirror_median", d50},
                          {"ratio", m50 / p50},           {"no_mirror_ratio", d50 / p50}};
    std::ofstream(json_path) << out.dump(2) << "\n";
  }
  return 0;
}
