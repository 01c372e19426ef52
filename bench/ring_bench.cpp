// Ring micro-benchmarks (Google Benchmark) over a 16 MiB ring in heap memory: the writer's
// append at PTY-read sizes, a zero-copy reader walking the whole ring in 64 KiB spans (read,
// touch one byte per cache line, intact), and the copying reader (copy() into 64 KiB).
// Smoke-run by ctest as bench.ring.smoke; real runs: ring_bench --benchmark_min_time=1.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <vector>

#include "shm/ring_layout.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"

namespace backscroll::shm {
namespace {

constexpr std::uint64_t kBenchCapacity = 16 << 20;
constexpr std::size_t kSpan = 64 * 1024;

class HeapRing {
 public:
  explicit HeapRing(std::uint64_t capacity)
      : bytes_(kHeaderBytes + capacity),
        memory_(static_cast<std::byte*>(::operator new (bytes_, std::align_val_t{kCacheLine}))) {
    std::memset(memory_, 0, bytes_);
    writer.emplace(RingWriter::over(memory_, RingIdentity{"bench", 1, capacity, Cursor{0}}));
    reader.emplace(*RingReader::over(memory_, bytes_));
  }
  HeapRing(const HeapRing&) = delete;
  HeapRing& operator=(const HeapRing&) = delete;
  ~HeapRing() { ::operator delete (memory_, std::align_val_t{kCacheLine}); }

  // Fills the ring once, so [oldest, committed) is the whole data area.
  void fill() {
    std::vector<std::byte> chunk(kSpan);
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<std::byte>(i * 31);
    for (std::uint64_t done = 0; done < writer->capacity(); done += chunk.size()) {
      writer->append(chunk);
    }
  }

  std::optional<RingWriter> writer;
  std::optional<RingReader> reader;

 private:
  std::size_t bytes_;
  std::byte* memory_;
};

void BM_RingAppend(benchmark::State& state) {
  HeapRing ring(kBenchCapacity);
  const std::vector<std::byte> bytes(static_cast<std::size_t>(state.range(0)), std::byte{0x41});
  for (auto _ : state) {
    ring.writer->append(bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_RingAppend)->Arg(4095)->Arg(65536);

void BM_RingReadInPlace(benchmark::State& state) {
  HeapRing ring(kBenchCapacity);
  ring.fill();
  const RingReader& reader = *ring.reader;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    Cursor c = reader.oldest();
    const Cursor end = reader.committed();
    while (c < end) {
      auto view = reader.read(c, kSpan);
      if (!view) {
        state.SkipWithError("read failed");
        return;
      }
      for (const auto span : {view->first, view->second}) {
        for (std::size_t i = 0; i < span.size(); i += kCacheLine) {
          sum += static_cast<std::uint64_t>(span[i]);
        }
      }
      if (!reader.intact(c)) {
        state.SkipWithError("lapped without a writer");
        return;
      }
      c = view->to;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kBenchCapacity));
}
BENCHMARK(BM_RingReadInPlace);

void BM_RingCopyOut(benchmark::State& state) {
  HeapRing ring(kBenchCapacity);
  ring.fill();
  const RingReader& reader = *ring.reader;
  std::vector<std::byte> out(kSpan);
  for (auto _ : state) {
    Cursor c = reader.oldest();
    const Cursor end = reader.committed();
    while (c < end) {
      auto next = reader.copy(c, out);
      if (!next) {
        state.SkipWithError("copy failed");
        return;
      }
      c = *next;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kBenchCapacity));
}
BENCHMARK(BM_RingCopyOut);

}  // namespace
}  // namespace backscroll::shm

BENCHMARK_MAIN();
