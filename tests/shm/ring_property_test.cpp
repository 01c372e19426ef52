// The ring against a model: "every byte ever written + the capacity". Random writes (0..3x the
// capacity), reservations the "kernel" fills with other bytes, clears, random reads and a polling
// reader. A read returns exactly the model's bytes from its cursor, or cursor_expired exactly when
// the cursor is below max(floor, reserved - capacity), or cursor_in_future exactly when it is past
// committed; bytes a reader confirmed with intact() are never torn.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <ostream>
#include <span>
#include <vector>

#include "shm/ring_layout.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"

namespace backscroll::shm {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Byte i of a write made with `seed`.
std::byte byte_of(std::uint64_t seed, std::uint64_t i) {
  return static_cast<std::byte>(mix(seed + i * 0x9e3779b97f4a7c15ULL) >> 56);
}

std::vector<std::byte> bytes_for(std::uint64_t seed, std::uint64_t n) {
  std::vector<std::byte> out(static_cast<std::size_t>(n));
  for (std::uint64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = byte_of(seed, i);
  return out;
}

// One committed run of bytes. The model keeps these instead of the bytes so that copying a model
// (rapidcheck does, once per command) stays cheap.
struct Written {
  std::uint64_t from;
  std::uint64_t n;
  std::uint64_t seed;
};

struct Model {
  std::uint64_t capacity = 0;
  std::uint64_t start = 0;
  std::uint64_t committed = 0;
  std::uint64_t reserved = 0;
  std::uint64_t floor = 0;
  std::uint64_t reader = 0;  // the polling reader's cursor
  std::vector<Written> writes;

  std::uint64_t oldest() const { return std::max(floor, reserved - std::min(reserved, capacity)); }
  void publish_reserved(std::uint64_t r) {
    reserved = std::max(reserved, r);
    floor = std::max(floor, reserved - std::min(reserved, capacity));
  }
  void commit(std::uint64_t n, std::uint64_t seed) {
    if (n == 0) return;
    writes.push_back({committed, n, seed});
    committed += n;
  }
  std::byte byte_at(std::uint64_t c) const {
    auto it = std::upper_bound(writes.begin(), writes.end(), c,
                               [](std::uint64_t x, const Written& w) { return x < w.from; });
    const Written& w = *std::prev(it);
    return byte_of(w.seed, c - w.from);
  }
  std::vector<std::byte> bytes(std::uint64_t from, std::uint64_t n) const {
    std::vector<std::byte> out(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = byte_at(from + i);
    return out;
  }
};

class HeapRing {
 public:
  explicit HeapRing(const Model& m)
      : bytes_(kHeaderBytes + m.capacity),
        memory_(static_cast<std::byte*>(::operator new (bytes_, std::align_val_t{kCacheLine}))) {
    std::memset(memory_, 0, bytes_);
    writer.emplace(
        RingWriter::over(memory_, RingIdentity{"model", 9, m.capacity, Cursor{m.start}}));
    auto r = RingReader::over(memory_, bytes_);
    RC_ASSERT(r.has_value());
    reader.emplace(std::move(*r));
  }
  HeapRing(const HeapRing&) = delete;
  HeapRing& operator=(const HeapRing&) = delete;
  ~HeapRing() { ::operator delete (memory_, std::align_val_t{kCacheLine}); }

  const RingHeader& header() const { return *reinterpret_cast<const RingHeader*>(memory_); }
  const std::byte* data_area() const { return memory_ + kHeaderBytes; }

  std::optional<RingWriter> writer;
  std::optional<RingReader> reader;

 private:
  std::size_t bytes_;
  std::byte* memory_;
};

using Command = rc::state::Command<Model, HeapRing>;

std::vector<std::byte> bytes_of(const ReadView& view) {
  std::vector<std::byte> out(view.first.begin(), view.first.end());
  out.insert(out.end(), view.second.begin(), view.second.end());
  return out;
}

// The published cursors agree with the model after every command.
void check_cursors(const Model& m, const HeapRing& ring) {
  RC_ASSERT(value(ring.reader->committed()) == m.committed);
  RC_ASSERT(value(ring.reader->oldest()) == m.oldest());
  RC_ASSERT(ring.header().reserved == m.reserved);
  RC_ASSERT(ring.header().floor == m.floor);
}

// A read of `max` bytes at `c` gives exactly what the model says; the spans lie in the data area
// at the cursor's offset.
void check_read(const Model& m, const HeapRing& ring, std::uint64_t c, std::size_t max) {
  auto view = ring.reader->read(Cursor{c}, max);
  if (c > m.committed) {
    RC_ASSERT(!view.has_value());
    RC_ASSERT(view.error().code == Errc::cursor_in_future);
    RC_ASSERT(view.error().cursor == m.committed);
    return;
  }
  if (c < m.oldest()) {
    RC_ASSERT(!view.has_value());
    RC_ASSERT(view.error().code == Errc::cursor_expired);
    RC_ASSERT(view.error().cursor == m.oldest());
    return;
  }
  RC_ASSERT(view.has_value());
  const std::uint64_t n = std::min<std::uint64_t>(m.committed - c, max);
  RC_ASSERT(value(view->from) == c);
  RC_ASSERT(value(view->to) == c + n);
  RC_ASSERT(view->size() == n);
  if (n > 0) RC_ASSERT(view->first.data() == ring.data_area() + c % m.capacity);
  if (!view->second.empty()) RC_ASSERT(view->second.data() == ring.data_area());
  RC_ASSERT(bytes_of(*view) == m.bytes(c, n));
  RC_ASSERT(ring.reader->intact(Cursor{c}));
}

// A cursor somewhere around the readable range, often exactly on a boundary.
std::uint64_t gen_cursor(const Model& m) {
  const std::uint64_t oldest = m.oldest();
  const std::uint64_t lo = oldest - std::min(oldest, 2 * m.capacity);
  switch (*rc::gen::inRange(0, 6)) {
    case 0: return oldest - std::min<std::uint64_t>(oldest, 1);
    case 1: return oldest;
    case 2: return m.committed;
    case 3: return m.committed + 1;
    default: return *rc::gen::inRange<std::uint64_t>(lo, m.committed + 64);
  }
}

struct Write : Command {
  std::uint64_t n;
  std::uint64_t seed;
  explicit Write(const Model& m)
      : n(*rc::gen::inRange<std::uint64_t>(0, 3 * m.capacity + 1)),
        seed(*rc::gen::arbitrary<std::uint64_t>()) {}
  void apply(Model& m) const override {
    m.commit(n, seed);
    m.publish_reserved(m.committed);
  }
  void run(const Model& m, HeapRing& ring) const override {
    ring.writer->append(bytes_for(seed, n));
    check_cursors(nextState(m), ring);
  }
  void show(std::ostream& os) const override { os << "Write(" << n << ")"; }
};

// The engine's path: reserve, let the "kernel" fill the whole span, commit part of it.
struct ReserveAndCommit : Command {
  std::uint64_t want;
  std::uint64_t commit_bytes;
  std::uint64_t seed;
  explicit ReserveAndCommit(const Model& m)
      : want(*rc::gen::inRange<std::uint64_t>(0, 2 * m.capacity + 1)),
        commit_bytes(*rc::gen::inRange<std::uint64_t>(0, want + 1)),
        seed(*rc::gen::arbitrary<std::uint64_t>()) {}
  static std::uint64_t span_size(const Model& m, std::uint64_t want) {
    return std::min(want, m.capacity - m.committed % m.capacity);
  }
  void apply(Model& m) const override {
    const std::uint64_t s = span_size(m, want);
    m.publish_reserved(m.committed + s);
    m.commit(std::min(commit_bytes, s), seed);
  }
  void run(const Model& m, HeapRing& ring) const override {
    const std::span<std::byte> space = ring.writer->reserve(static_cast<std::size_t>(want));
    RC_ASSERT(space.size() == span_size(m, want));
    RC_ASSERT(space.data() == ring.data_area() + m.committed % m.capacity);
    const std::vector<std::byte> fill = bytes_for(seed, space.size());
    std::memcpy(space.data(), fill.data(), fill.size());
    ring.writer->commit(
        static_cast<std::size_t>(std::min<std::uint64_t>(commit_bytes, space.size())));
    check_cursors(nextState(m), ring);
  }
  void show(std::ostream& os) const override {
    os << "ReserveAndCommit(" << want << ", " << commit_bytes << ")";
  }
};

struct Clear : Command {
  // Every cleared byte may be zeroed from now on: reserved runs a capacity ahead of committed.
  void apply(Model& m) const override {
    m.floor = m.committed;
    m.publish_reserved(m.committed + m.capacity);
  }
  void run(const Model& m, HeapRing& ring) const override {
    ring.writer->clear();
    check_cursors(nextState(m), ring);
  }
  void show(std::ostream& os) const override { os << "Clear"; }
};

struct Read : Command {
  std::uint64_t cursor;
  std::size_t max;
  bool use_copy;
  explicit Read(const Model& m)
      : cursor(gen_cursor(m)),
        max(*rc::gen::inRange<std::size_t>(0, 2 * m.capacity + 1)),
        use_copy(*rc::gen::arbitrary<bool>()) {}
  void run(const Model& m, HeapRing& ring) const override {
    if (!use_copy) {
      check_read(m, ring, cursor, max);
      return;
    }
    std::vector<std::byte> out(max);
    auto end = ring.reader->copy(Cursor{cursor}, out);
    if (cursor > m.committed) {
      RC_ASSERT(!end.has_value());
      RC_ASSERT(end.error().code == Errc::cursor_in_future);
      RC_ASSERT(end.error().cursor == m.committed);
    } else if (cursor < m.oldest()) {
      RC_ASSERT(!end.has_value());
      RC_ASSERT(end.error().code == Errc::cursor_expired);
      RC_ASSERT(end.error().cursor == m.oldest());
    } else {
      const std::uint64_t n = std::min<std::uint64_t>(m.committed - cursor, max);
      RC_ASSERT(end.has_value());
      RC_ASSERT(value(*end) == cursor + n);
      out.resize(static_cast<std::size_t>(n));
      RC_ASSERT(out == m.bytes(cursor, n));
    }
  }
  void show(std::ostream& os) const override {
    os << (use_copy ? "Copy(" : "Read(") << cursor << ", " << max << ")";
  }
};

// A reader that follows the stream: consumes what is new, resyncs to the oldest cursor on a lap.
struct Poll : Command {
  std::size_t max;
  explicit Poll(const Model& m) : max(*rc::gen::inRange<std::size_t>(1, 2 * m.capacity + 1)) {}
  void apply(Model& m) const override {
    if (m.reader < m.oldest()) {
      m.reader = m.oldest();
    } else {
      m.reader += std::min<std::uint64_t>(m.committed - m.reader, max);
    }
  }
  void run(const Model& m, HeapRing& ring) const override { check_read(m, ring, m.reader, max); }
  void show(std::ostream& os) const override { os << "Poll(" << max << ")"; }
};

// Reads in place, then the engine reserves (and the kernel writes) before the reader confirms:
// intact() must say false exactly when the reservation reached the bytes read, and when it says
// true, every byte read is still the model's.
struct ReadThenKernelWrites : Command {
  std::uint64_t cursor;
  std::size_t max;
  std::uint64_t want;
  explicit ReadThenKernelWrites(const Model& m)
      : cursor(*rc::gen::inRange<std::uint64_t>(m.oldest(), m.committed + 1)),
        max(*rc::gen::inRange<std::size_t>(0, 2 * m.capacity + 1)),
        want(*rc::gen::inRange<std::uint64_t>(0, 2 * m.capacity + 1)) {}
  void apply(Model& m) const override {
    m.publish_reserved(m.committed + ReserveAndCommit::span_size(m, want));
  }
  void run(const Model& m, HeapRing& ring) const override {
    auto view = ring.reader->read(Cursor{cursor}, max);
    RC_ASSERT(view.has_value());
    const std::span<std::byte> space = ring.writer->reserve(static_cast<std::size_t>(want));
    for (std::byte& b : space) b = ~b;  // differs from whatever was there: a torn read shows
    const Model after = nextState(m);
    const bool intact = ring.reader->intact(Cursor{cursor});
    RC_ASSERT(intact == (after.reserved <= cursor + m.capacity));
    if (intact) RC_ASSERT(bytes_of(*view) == m.bytes(cursor, view->size()));
    check_cursors(after, ring);
  }
  void show(std::ostream& os) const override {
    os << "ReadThenKernelWrites(" << cursor << ", " << max << ", " << want << ")";
  }
};

Model initial_model() {
  Model m;
  m.capacity = *rc::gen::element(std::uint64_t{kPageBytes}, std::uint64_t{2 * kPageBytes},
                                 std::uint64_t{kMinCapacity});
  m.start = *rc::gen::oneOf(rc::gen::just<std::uint64_t>(0),
                            rc::gen::inRange<std::uint64_t>(0, 10 * m.capacity),
                            rc::gen::inRange<std::uint64_t>(1ULL << 50, (1ULL << 50) + m.capacity));
  m.committed = m.reserved = m.floor = m.reader = m.start;
  return m;
}

RC_GTEST_PROP(RingReader, ServesExactlyTheModelBytesOrCursorExpiredAtTheModelBoundary, ()) {
  const Model m = initial_model();
  HeapRing ring(m);
  rc::state::check(m, ring,
                   rc::state::gen::execOneOfWithArgs<Write, Write, ReserveAndCommit, Clear, Read,
                                                     Read, Poll, Poll, ReadThenKernelWrites>());
}

}  // namespace
}  // namespace backscroll::shm
