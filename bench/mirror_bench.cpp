// bench/mirror_bench: what the mirror costs per byte, per workload (Google Benchmark, in
// process), beside libvterm 0.1.4's own layers as reference points: its state layer alone (the
// parser and the cursor/pen logic, no cells) and its screen layer alone. The profile in
// docs/performance.md was taken on this binary (`perf record -g build/bin/mirror_bench ...`).
// Besides the generated workloads (bench/workloads.hpp) it feeds the recordings of real programs
// in tests/corpus/recordings (BM_MirrorRecording/<name>), and any capture given with
// `--file PATH` (repeatable: BM_MirrorRecording/<file name>; each LF read as a cooked PTY
// prints it, CR LF), to see at once what a program's output costs the mirror and how much of it
// the fast path takes (its `fast_path_share`).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>
#include <vterm.h>

#include "bench/workloads.hpp"
#include "engine/term/mirror.hpp"
#include "engine/term/plain_scroll_scan.hpp"

namespace {

using namespace backscroll;

constexpr std::size_t kWorkloadBytes = 4u << 20;
constexpr std::size_t kFeedBytes = 64 * 1024;  // what the mirror thread hands over at most

const std::string& workload(int which) {
  static const std::string kinds[] = {
      bench::log_lines(kWorkloadBytes),     bench::build_output(kWorkloadBytes),
      bench::utf8_lines(kWorkloadBytes),    bench::tui_redraws(kWorkloadBytes, 24),
      bench::colored_build(kWorkloadBytes), bench::ncurses_redraws(kWorkloadBytes, 24),
      bench::shell_prompts(kWorkloadBytes)};
  return kinds[which];
}
const char* workload_name(int which) {
  static const char* names[] = {"log", "build_sgr", "utf8", "tui", "color", "ncurses", "prompts"};
  return names[which];
}
constexpr int kWorkloads = 7;

template <typename Feed>
void feed_in_chunks(std::string_view bytes, Feed&& feed) {
  for (std::size_t at = 0; at < bytes.size(); at += kFeedBytes) feed(bytes.substr(at, kFeedBytes));
}

void mirror_feed(benchmark::State& state, bool fast_path, const std::string& bytes,
                 const std::string& label) {
  std::uint64_t fast_bytes = 0;
  for (auto _ : state) {
    term::Mirror mirror(Cursor{0}, 80, 24);
    mirror.set_fast_path(fast_path);
    feed_in_chunks(bytes, [&](std::string_view chunk) { mirror.feed(chunk); });
    benchmark::DoNotOptimize(mirror.parsed());
    fast_bytes = mirror.screen().fast_path_bytes();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
  state.counters["fast_path_share"] =
      static_cast<double>(fast_bytes) / static_cast<double>(bytes.size());
  state.SetLabel(label);
}

void mirror_feed(benchmark::State& state, bool fast_path) {
  const int which = static_cast<int>(state.range(0));
  mirror_feed(state, fast_path, workload(which), workload_name(which));
}

// The mirror as the engine runs it: the fast path (grid_fast_path.hpp) where it applies,
// libvterm elsewhere.
void BM_Mirror(benchmark::State& state) { mirror_feed(state, true); }
// The same with libvterm parsing every byte: what the fast path saves.
void BM_MirrorLibvtermOnly(benchmark::State& state) { mirror_feed(state, false); }

// The recordings of real programs (tests/corpus/recordings, every *.bin there: less, vim, top,
// tmux, ...), each repeated to kWorkloadBytes: the generated workloads above are kinder than
// real programs (docs/performance.md, fifteenth session). One benchmark per recording,
// BM_MirrorRecording/<name>, and BM_MirrorRecordingLibvtermOnly/<name>.
struct Recording {
  std::string name;
  std::string bytes;
};

// `file`'s bytes repeated to kWorkloadBytes; with `cooked`, each LF as CR LF (ONLCR). Empty for
// an empty or unreadable file.
Recording read_recording(const std::filesystem::path& file, bool cooked) {
  std::ifstream in(file, std::ios::binary);
  std::string once{std::istreambuf_iterator<char>(in), {}};
  Recording r{file.filename().string(), {}};
  if (cooked) {
    std::string crlf;
    for (const char c : once) {
      if (c == '\n') crlf += '\r';
      crlf += c;
    }
    once = std::move(crlf);
  }
  if (once.empty()) return r;
  while (r.bytes.size() < kWorkloadBytes) r.bytes += once;
  return r;
}

void register_recordings(std::vector<Recording>& all) {
  for (const Recording& r : all) {
    for (const bool fast_path : {true, false}) {
      const std::string name =
          std::string(fast_path ? "BM_MirrorRecording/" : "BM_MirrorRecordingLibvtermOnly/") +
          r.name;
      benchmark::RegisterBenchmark(name.c_str(), [&r, fast_path](benchmark::State& state) {
        mirror_feed(state, fast_path, r.bytes, r.name);
      })->Unit(benchmark::kMillisecond);
    }
  }
}

// The look ahead alone (PlainScrollScan over the bytes, as the mirror thread hands them over in
// pieces): what a flood that the mirror jumps over costs it per byte.
void BM_LookAheadScan(benchmark::State& state) {
  const std::string& bytes = workload(static_cast<int>(state.range(0)));
  Cursor reached{0};
  for (auto _ : state) {
    term::PlainScrollScan scan;
    scan.restart(Cursor{0});
    feed_in_chunks(bytes, [&](std::string_view chunk) { scan.scan(chunk); });
    reached = scan.scanned();
    benchmark::DoNotOptimize(reached);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
  // A scan that stops early measures nothing: say where it stopped.
  state.SetLabel(std::string(workload_name(static_cast<int>(state.range(0)))) +
                 (value(reached) == bytes.size() ? "" : ", stopped early"));
}

// libvterm with only the state layer's default behaviour (no callbacks: no cells are kept).
void BM_LibvtermStateOnly(benchmark::State& state) {
  const std::string& bytes = workload(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    VTerm* vt = vterm_new(24, 80);
    vterm_set_utf8(vt, 1);
    VTermState* vts = vterm_obtain_state(vt);
    vterm_state_reset(vts, 1);
    feed_in_chunks(
        bytes, [&](std::string_view chunk) { vterm_input_write(vt, chunk.data(), chunk.size()); });
    vterm_free(vt);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
  state.SetLabel(workload_name(static_cast<int>(state.range(0))));
}

// libvterm's screen layer with a scrollback callback that only counts lines.
void BM_LibvtermScreen(benchmark::State& state) {
  const std::string& bytes = workload(static_cast<int>(state.range(0)));
  static VTermScreenCallbacks callbacks{};
  callbacks.sb_pushline = [](int, const VTermScreenCell*, void* user) {
    ++*static_cast<std::size_t*>(user);
    return 1;
  };
  for (auto _ : state) {
    std::size_t pushed = 0;
    VTerm* vt = vterm_new(24, 80);
    vterm_set_utf8(vt, 1);
    VTermScreen* screen = vterm_obtain_screen(vt);
    vterm_screen_set_callbacks(screen, &callbacks, &pushed);
    vterm_screen_enable_altscreen(screen, 1);
    vterm_screen_reset(screen, 1);
    feed_in_chunks(
        bytes, [&](std::string_view chunk) { vterm_input_write(vt, chunk.data(), chunk.size()); });
    benchmark::DoNotOptimize(pushed);
    vterm_free(vt);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
  state.SetLabel(workload_name(static_cast<int>(state.range(0))));
}

// What one keyframe costs the mirror thread: the snapshot_v1 build of an 80x24 screen with
// 512 history lines (recorder::kKeyframeHistoryLines), after 1 MiB of the workload. Times the
// flood's keyframes per MB (the engine's `mirror.keyframes` counter) give their share.
void BM_KeyframeBuild(benchmark::State& state) {
  const std::string& bytes = workload(static_cast<int>(state.range(0)));
  term::Mirror mirror(Cursor{0}, 80, 24);
  feed_in_chunks(std::string_view(bytes).substr(0, 1u << 20),
                 [&](std::string_view chunk) { mirror.feed(chunk); });
  term::SnapshotOptions options;
  options.scrollback_lines = 512;
  std::size_t built = 0;
  for (auto _ : state) {
    const term::MirrorSnapshot taken = mirror.snapshot(options);
    built = taken.snapshot.bytes.size();
    benchmark::DoNotOptimize(built);
  }
  state.SetLabel(std::string(workload_name(static_cast<int>(state.range(0)))) + ", " +
                 std::to_string(built) + " bytes");
}

// The plain text an actor leaves when it is deleted (Mirror::final_text: every history line
// and the screen), at 80x24 with the history full of the workload (10,000 lines by default).
void BM_FinalText(benchmark::State& state) {
  const std::string& bytes = workload(static_cast<int>(state.range(0)));
  term::Mirror mirror(Cursor{0}, 80, 24);
  feed_in_chunks(bytes, [&](std::string_view chunk) { mirror.feed(chunk); });
  std::size_t size = 0;
  for (auto _ : state) {
    size = mirror.final_text().snapshot.bytes.size();
    benchmark::DoNotOptimize(size);
  }
  state.SetLabel(std::string(workload_name(static_cast<int>(state.range(0)))) + ", " +
                 std::to_string(mirror.screen().scrollback_lines()) + " history lines, " +
                 std::to_string(size) + " bytes");
}

BENCHMARK(BM_Mirror)->DenseRange(0, kWorkloads - 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MirrorLibvtermOnly)->DenseRange(0, kWorkloads - 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LookAheadScan)->DenseRange(0, kWorkloads - 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LibvtermStateOnly)->DenseRange(0, kWorkloads - 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LibvtermScreen)->DenseRange(0, kWorkloads - 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_KeyframeBuild)->DenseRange(0, kWorkloads - 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FinalText)->DenseRange(0, kWorkloads - 1)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  // The corpus's recordings (raw PTY output), then each --file (a capture, read as a cooked
  // PTY prints it); the rest of the arguments are Google Benchmark's.
  std::vector<std::filesystem::path> corpus;
  for (const auto& entry : std::filesystem::directory_iterator(BACKSCROLL_CORPUS_DIR)) {
    if (entry.path().extension() == ".bin") corpus.push_back(entry.path());
  }
  std::sort(corpus.begin(), corpus.end());
  // Benchmarks keep references into it: filled before any is registered.
  static std::vector<Recording> recordings;
  for (const std::filesystem::path& file : corpus) {
    Recording r = read_recording(file, /*cooked=*/false);
    r.name = file.stem().string();
    if (!r.bytes.empty()) recordings.push_back(std::move(r));
  }
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg != "--file") {
      rest.push_back(argv[i]);
      continue;
    }
    if (i + 1 == argc) {
      std::fprintf(stderr, "mirror_bench: --file needs a path\n");
      return 2;
    }
    Recording r = read_recording(argv[++i], /*cooked=*/true);
    if (r.bytes.empty()) {
      std::fprintf(stderr, "mirror_bench: %s: empty or unreadable\n", argv[i]);
      return 2;
    }
    recordings.push_back(std::move(r));
  }
  register_recordings(recordings);
  int rest_count = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_count, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
