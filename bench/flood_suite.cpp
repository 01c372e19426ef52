// bench/flood_suite: the end-to-end flood comparison of issue 5, every configuration in one run.
//
//   flood_suite [--bytes N] [--rounds R] [--workloads log,build,color,utf8,tui] [--file PATH]...
//               [--json FILE]
//
// For each workload, a file of N bytes (bench/workloads.hpp, with "\n" line ends) is printed by
// `cat` on a cooked 80x24 PTY (a shell's default termios); each --file (a capture of your own
// program's output, as `cat` would print it) is repeated whole until it holds at least N bytes
// and printed the same way. Each is drained by:
//   plain      a blocking read() loop of 64 KiB: the limit
//   backscroll backscrolld as shipped plus a durable transcript (--persist) and two shm readers
//              reading in place (threads here, each with its own mapping)
//   no_mirror  backscrolld --no-mirror and one shm reader: the drain alone
//   no_keyframes  as backscroll, with --no-keyframes: what the recorder's keyframes cost
//   tmux       tmux (-f /dev/null, a detached 80x24 session) running the same `cat`, until the
//              pane's shell reports `cat` done through a FIFO
// Configurations run in turn within each round (tmux last), each round starting one later, each
// after a sync; the figures are medians over rounds, in MB/s of the bytes the PTY delivered
// (ONLCR turns "\n" into "\r\n"). The run fails if a backscroll drain did not deliver exactly
// the plain loop's bytes. Also: the engines' CPU time per MB by
// thread (io thread, bs-mirror, bs-writer) and in all, beside the plain reader's own CPU time
// per MB and the ratio of the two (issue 20's goal: 1.5x on scrolling output, 2.5x on
// redraws), steadier than rates on a shared machine; and how often each thread was put on a
// CPU per MB (its wake-ups and preemptions). Before each round, how much slower the slowest CPU
// runs a fixed loop than the fastest (bench/cpu_speed.hpp): a round on unlevel CPUs reads with
// it. Timings are reported, never asserted.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/cpu_speed.hpp"
#include "bench/engine_under_test.hpp"
#include "bench/flood_drain.hpp"
#include "bench/thread_cpu.hpp"
#include "bench/workloads.hpp"

namespace {

using namespace backscroll;
using bench::Clock;
using bench::Sample;
namespace fs = std::filesystem;

int run(const std::vector<std::string>& argv, bool quiet = false) {
  std::string line;
  for (const auto& a : argv) line += "'" + a + "' ";
  if (quiet) line += ">/dev/null 2>&1";
  return std::system(line.c_str());
}

// tmux in a detached 80x24 session on its own server, until `cat` is done.
Sample tmux_flood(const fs::path& dir, const fs::path& file, int round) {
  const std::string socket =
      "backscroll-bench-" + std::to_string(::getpid()) + "-" + std::to_string(round);
  const fs::path fifo = dir / ("tmux-done-" + std::to_string(round));
  ::mkfifo(fifo.c_str(), 0600);
  const std::string pane = "cat '" + file.string() + "'; echo done > '" + fifo.string() + "'";
  const auto start = Clock::now();
  if (run({"tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24",
           "sh", "-c", pane}) != 0) {
    std::fprintf(stderr, "flood_suite: tmux did not start\n");
    std::exit(1);
  }
  const int fd = ::open(fifo.c_str(), O_RDONLY);  // until the pane's shell opens it
  char buf[16];
  while (::read(fd, buf, sizeof buf) > 0) {
  }
  const auto end = Clock::now();
  ::close(fd);
  run({"tmux", "-L", socket, "kill-server"}, /*quiet=*/true);  // exited with its session
  fs::remove(fifo);
  return {std::chrono::duration<double>(end - start).count(), 0};
}

// What one flood prints: a generated workload or a user's file, by name; made when its turn
// comes (six workloads of 128 MiB at once would be most of a GiB).
struct Flood {
  std::string name;
  std::function<std::string()> text;  // as `cat` prints it
};

// The generated workloads named in `names` and each of `files` repeated to `bytes`; an error
// message for a name that is no workload or a file that is empty or cannot be read.
std::variant<std::vector<Flood>, std::string> floods_to_run(const std::vector<std::string>& names,
                                                            const std::vector<std::string>& files,
                                                            std::uint64_t bytes) {
  std::vector<Flood> out;
  for (const std::string& name : names) {
    if (!bench::workload_named(name, 0))
      return "no workload '" + name + "' (log, build, color, utf8, tui, ncurses, prompts)";
    out.push_back({name, [name, bytes] {
                     return bench::as_printed_file(*bench::workload_named(name, bytes));
                   }});
  }
  for (const std::string& file : files) {
    std::error_code error;
    if (fs::file_size(file, error) == 0 || error || !std::ifstream(file, std::ios::binary))
      return "'" + file + "' is empty or cannot be read";
    out.push_back({fs::path(file).filename().string(), [file, bytes] {
                     std::ifstream in(file, std::ios::binary);
                     const std::string once{std::istreambuf_iterator<char>(in), {}};
                     std::string text;
                     text.reserve(bytes + once.size());
                     do text += once;
                     while (!once.empty() && text.size() < bytes);
                     return text;
                   }});
  }
  return out;
}

int suite(const fs::path& dir, std::uint64_t bytes, int rounds, const std::vector<Flood>& floods,
          bool with_tmux, const std::string& json_path);

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t bytes = 128ull << 20;
  int rounds = 3;
  std::string workload_list = "log,build,tui";
  std::vector<std::string> files;
  std::string json_path;
  bool with_tmux = true;
  CLI::App app{"end-to-end flood: plain read() loop, backscroll, tmux, same run"};
  app.add_option("--bytes", bytes, "size of each workload file")->capture_default_str();
  app.add_option("--rounds", rounds, "floods per configuration (alternating)")
      ->capture_default_str();
  app.add_option("--workloads", workload_list, "log, build, color, utf8, tui, ncurses, prompts")
      ->capture_default_str();
  app.add_option("--file", files,
                 "also flood this file (a capture, as `cat` prints it), repeated to --bytes; "
                 "may be given more than once")
      ->check(CLI::ExistingFile);
  app.add_option("--json", json_path, "also write the results as JSON here");
  app.add_flag("!--no-tmux", with_tmux, "leave tmux out");
  CLI11_PARSE(app, argc, argv);
  if (with_tmux && std::system("tmux -V >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "flood_suite: tmux is not installed (.ci/setup installs it; --no-tmux)\n");
    return 1;
  }

  // --file alone floods only the files; the default workloads come with no option at all.
  const std::vector<std::string> names = app.count("--workloads") == 0 && !files.empty()
                                             ? std::vector<std::string>{}
                                             : split(workload_list);
  auto floods = floods_to_run(names, files, bytes);
  if (const auto* error = std::get_if<std::string>(&floods)) {
    std::fprintf(stderr, "flood_suite: %s\n", error->c_str());
    return 2;
  }
  char tmpl[] = "/tmp/backscroll-flood-suite-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  const int status =
      suite(dir, bytes, rounds, std::get<std::vector<Flood>>(floods), with_tmux, json_path);
  fs::remove_all(dir);
  return status;
}

namespace {

int suite(const fs::path& dir, std::uint64_t bytes, int rounds, const std::vector<Flood>& floods,
          bool with_tmux, const std::string& json_path) {
  fs::create_directories(dir / "shipped");
  fs::create_directories(dir / "no-mirror");
  bench::EngineUnderTest shipped({"--persist"}, dir / "shipped");
  bench::EngineUnderTest no_mirror({"--no-mirror"}, dir / "no-mirror");
  fs::create_directories(dir / "no-keyframes");
  bench::EngineUnderTest no_keyframes({"--persist", "--no-keyframes"}, dir / "no-keyframes");

  nlohmann::json out = {
      {"bytes", bytes}, {"rounds", rounds}, {"workloads", nlohmann::json::object()}};
  std::printf(
      "| workload | configuration | MB/s (median of %d) | ratio to plain | ratio to tmux |\n"
      "|---|---|---|---|---|\n",
      rounds);
  for (std::size_t f = 0; f < floods.size(); ++f) {
    const std::string& workload = floods[f].name;
    const fs::path file = dir / ("flood" + std::to_string(f) + ".txt");
    std::ofstream(file, std::ios::binary) << floods[f].text();
    const std::vector<std::string> cat = {"cat", file.string()};
    std::map<std::string, std::vector<double>> mb;
    std::map<std::string, std::vector<double>> cpu;   // engine CPU ms per MB, by thread
    std::map<std::string, std::vector<double>> runs;  // times put on a CPU per MB, by thread
    std::vector<double> plain_cpu;                    // the plain reader's CPU ms per MB
    std::vector<double> shipped_cpu;                  // the shipped engine's, all threads
    std::vector<double> fed_fraction;  // share of the bytes the shipped engine's mirror parsed
    std::vector<double> slowest_cpu;   // per round: the slowest CPU's loop time / the fastest's
    std::uint64_t delivered = 0;
    // Each engine thread's CPU time and times put on a CPU per MB of the flood, as
    // "CONFIG THREAD". Returns the whole process's CPU time per MB.
    const auto record_cpu = [&cpu, &runs](const std::string& config, pid_t pid, const auto& before,
                                          std::uint64_t flooded) {
      double all = 0;
      const double mb_flooded = static_cast<double>(flooded) / 1e6;
      for (const auto& [thread, now] : bench::thread_times(pid)) {
        const auto was = before.find(thread);
        const bench::ThreadTime then = was == before.end() ? bench::ThreadTime{} : was->second;
        const double ms_per_mb = (now.seconds - then.seconds) * 1e3 / mb_flooded;
        cpu[config + " " + thread].push_back(ms_per_mb);
        runs[config + " " + thread].push_back((now.runs - then.runs) / mb_flooded);
        all += ms_per_mb;
      }
      cpu[config + " (all threads)"].push_back(all);
      return all;
    };
    for (int r = 0; r < rounds; ++r) {
      const std::string actor = "flood" + std::to_string(f) + "-" + std::to_string(r);
      const std::vector<double> slowdowns = bench::cpu_slowdowns();
      slowest_cpu.push_back(
          slowdowns.empty() ? 1.0 : *std::max_element(slowdowns.begin(), slowdowns.end()));
      Sample p, b, k, d;
      const std::vector<std::function<void()>> configurations = {
          [&] { p = bench::plain_loop(cat); },
          [&] {
            const auto cpu_before = bench::thread_times(shipped.pid());
            const auto mirror_before = shipped.call("status").header["mirror"];
            b = bench::engine_flood(shipped, actor, cat, 2);
            const auto mirror_after = shipped.call("status").header["mirror"];
            const double fed =
                mirror_after["fed_bytes"].get<double>() - mirror_before["fed_bytes"].get<double>();
            fed_fraction.push_back(fed / static_cast<double>(b.bytes));
            shipped_cpu.push_back(record_cpu("backscroll", shipped.pid(), cpu_before, b.bytes));
          },
          [&] {
            const auto cpu_before = bench::thread_times(no_keyframes.pid());
            k = bench::engine_flood(no_keyframes, actor, cat, 2);
            record_cpu("no_keyframes", no_keyframes.pid(), cpu_before, k.bytes);
          },
          [&] {
            const auto cpu_before = bench::thread_times(no_mirror.pid());
            d = bench::engine_flood(no_mirror, actor, cat, 1);
            record_cpu("no_mirror", no_mirror.pid(), cpu_before, d.bytes);
          },
      };
      // Each round starts with the next configuration, so none always follows the same one (an
      // order effect would read as a difference between configurations), and each starts
      // after the transcripts written before it reached the disk, not while it runs.
      for (std::size_t i = 0; i < configurations.size(); ++i) {
        ::sync();
        configurations[(i + static_cast<std::size_t>(r)) % configurations.size()]();
      }
      delivered = p.bytes;
      plain_cpu.push_back(p.cpu_seconds * 1e3 / (static_cast<double>(p.bytes) / 1e6));
      if (b.bytes != p.bytes || d.bytes != p.bytes || k.bytes != p.bytes) {
        std::fprintf(stderr,
                     "flood_suite: %s delivered %llu bytes plain, %llu to backscroll, %llu "
                     "without keyframes, %llu without the mirror\n",
                     workload.c_str(), static_cast<unsigned long long>(p.bytes),
                     static_cast<unsigned long long>(b.bytes),
                     static_cast<unsigned long long>(k.bytes),
                     static_cast<unsigned long long>(d.bytes));
        return 1;
      }
      mb["plain"].push_back(p.mb_per_s());
      mb["backscroll"].push_back(b.mb_per_s());
      mb["no_mirror"].push_back(d.mb_per_s());
      mb["no_keyframes"].push_back(k.mb_per_s());
      std::fprintf(stderr,
                   "%s round %d: plain %.1f, backscroll %.1f (mirror parsed %.1f%%), "
                   "--no-keyframes %.1f, --no-mirror %.1f",
                   workload.c_str(), r, p.mb_per_s(), b.mb_per_s(), 100 * fed_fraction.back(),
                   k.mb_per_s(), d.mb_per_s());
      if (with_tmux) {
        Sample t = tmux_flood(dir, file, r);
        t.bytes = p.bytes;  // the same file through the same kind of PTY
        mb["tmux"].push_back(t.mb_per_s());
        std::fprintf(stderr, ", tmux %.1f", t.mb_per_s());
      }
      std::fprintf(stderr, " MB/s; the slowest CPU %.2fx the fastest\n", slowest_cpu.back());
    }
    const double plain = bench::median(mb["plain"]);
    const double tmux = with_tmux ? bench::median(mb["tmux"]) : 0;
    nlohmann::json w = {{"delivered_bytes", delivered}};
    w["mirror_fed_fraction"] = bench::median(fed_fraction);
    std::printf("| %s | the mirror parsed | %.1f%% of the bytes | | |\n", workload.c_str(),
                100 * bench::median(fed_fraction));
    for (const auto& [config, samples] : mb) {
      const double m = bench::median(samples);
      w[config] = {{"mb_s", samples}, {"median", m}, {"ratio_to_plain", m / plain}};
      if (with_tmux) w[config]["ratio_to_tmux"] = m / tmux;
      char to_tmux[16] = "-";
      if (with_tmux) std::snprintf(to_tmux, sizeof to_tmux, "%.3f", m / tmux);
      std::printf("| %s | %s | %.1f | %.3f | %s |\n", workload.c_str(), config.c_str(), m,
                  m / plain, to_tmux);
    }
    for (const auto& [thread, samples] : cpu) {
      w["engine_cpu_ms_per_mb"][thread] = bench::median(samples);
      std::printf("| %s | engine CPU, %s | %.2f ms/MB | | |\n", workload.c_str(), thread.c_str(),
                  bench::median(samples));
    }
    for (const auto& [thread, samples] : runs) {
      w["engine_runs_per_mb"][thread] = bench::median(samples);
      std::printf("| %s | times on a CPU, %s | %.0f per MB | | |\n", workload.c_str(),
                  thread.c_str(), bench::median(samples));
    }
    // The engine's CPU per MB over the plain reader's, per round (the same minutes).
    std::vector<double> cpu_ratio;
    for (std::size_t i = 0; i < plain_cpu.size(); ++i)
      cpu_ratio.push_back(shipped_cpu[i] / plain_cpu[i]);
    w["plain_reader_cpu_ms_per_mb"] = bench::median(plain_cpu);
    w["engine_cpu_to_plain_reader"] = bench::median(cpu_ratio);
    w["engine_cpu_to_plain_reader_per_round"] = cpu_ratio;
    w["slowest_cpu_per_round"] = slowest_cpu;
    std::printf("| %s | plain reader CPU | %.2f ms/MB | | |\n", workload.c_str(),
                bench::median(plain_cpu));
    std::printf("| %s | backscroll CPU / plain reader's | %.2fx | | |\n", workload.c_str(),
                bench::median(cpu_ratio));
    // A round whose CPUs ran at different speeds (a shared host) moved its CPU per MB with
    // wherever each thread ran: per round, the ratio beside the slowest CPU's slowdown.
    std::string per_round;
    for (std::size_t i = 0; i < cpu_ratio.size(); ++i) {
      char one[48];
      std::snprintf(one, sizeof one, "%s%.2fx (CPUs %.2f)", i ? ", " : "", cpu_ratio[i],
                    slowest_cpu[i]);
      per_round += one;
    }
    std::printf("| %s | the same per round (slowest CPU / fastest) | %s | | |\n", workload.c_str(),
                per_round.c_str());
    out["workloads"][workload] = w;
    fs::remove(file);
  }
  std::fprintf(stderr, "reader checksum %llu\n",
               static_cast<unsigned long long>(bench::g_checksum));
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}

}  // namespace
