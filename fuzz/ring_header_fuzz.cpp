// Fuzz target: the ring a reader maps (validate_ring_header, RingReader over it, and
// RingReader::open_announced over a real ring, two sealed memfds, holding the crafted image). A
// small input describes a ring the harness builds with RingWriter::over, then damages and queries
// it: validation must reject or accept without crashing, an accepted ring must never hand out a
// span outside its data area, whatever its cursors say, and a ring that does not match its
// announcement (sizes, seals, actor, nonce) must be refused. Input layout (little-endian):
//   [0] capacity (1 + b % 16 pages)  [1] mapped size (exact / shorter / longer / tiny, delta)
//   [2..9] start cursor  [10..13] bytes appended first (mod 4 x capacity)
//   then ops until the input ends: 0 poke(u16 offset, u8 n, n bytes), 1 field(u8 which, u64),
//   2 query(u8 mode, u64 cursor, u32 max), 3 writer(u8 what, u32 n),
//   4 segment(u8 how, u64 capacity, then a query's operands).
// Run: ring_header_fuzz -dict=fuzz/ring_header.dict -max_len=512 fuzz/corpus/ring_header
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "shm/random_hex.hpp"
#include "shm/ring_layout.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"
#include "shm/segment.hpp"

namespace {

using namespace backscroll;
using namespace backscroll::shm;

[[noreturn]] void violated() { __builtin_trap(); }

// Scratch reused across runs: a fresh allocation per run costs more in page faults than the
// target itself. Writer input bytes come from `kFill`; copy() output lands in `copy_out`, whose
// bytes past the requested length are a canary the copy must not touch.
constexpr std::size_t kCanary = 64;
const std::vector<std::byte> kFill(4096, std::byte{0x61});
// A reader's capacity is at most 16 pages + the 15-page mapping delta, so reads ask <= 2 x 32
// pages.
std::vector<std::byte> copy_out(2 * 32 * kPageBytes + 1 + kCanary);

void append_filler(RingWriter& writer, std::uint64_t n) {
  while (n > 0) {
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, kFill.size()));
    writer.append(std::span(kFill.data(), k));
    n -= k;
  }
}

using Input = fuzzing::FuzzInput;

class AlignedBuffer {
 public:
  explicit AlignedBuffer(std::size_t bytes)
      : size_(bytes),
        data_(static_cast<std::byte*>(::operator new (bytes, std::align_val_t{kCacheLine}))) {
    std::memset(data_, 0, size_);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { ::operator delete (data_, std::align_val_t{kCacheLine}); }
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::size_t size_;
  std::byte* data_;
};

void set_field(RingHeader& h, std::uint8_t which, std::uint64_t v) {
  switch (which % 14) {
    case 0: h.magic = v; break;
    case 1: h.layout_version = static_cast<std::uint32_t>(v); break;
    case 2: h.header_bytes = static_cast<std::uint32_t>(v); break;
    case 3: h.capacity = v; break;
    case 4: h.epoch = v; break;
    case 5: h.engine_pid = static_cast<std::int64_t>(v); break;
    case 6: h.engine_start_ticks = v; break;
    case 7: h.committed = v; break;
    case 8: h.reserved = v; break;
    case 9: h.floor = v; break;
    case 10: h.wake = static_cast<std::uint32_t>(v); break;
    case 11: h.meta.seq = v; break;
    case 12: h.sessions[v % kSessionSlots].seq = v >> 8; break;
    default: h.actor[v % sizeof h.actor] = static_cast<char>(v >> 8); break;
  }
}

// Every span of an accepted read lies inside the data area; touching each byte lets the
// sanitizer see any that does not.
void check_view(const ReadView& view, const std::byte* data, std::uint64_t capacity) {
  for (const auto span : {view.first, view.second}) {
    if (span.empty()) continue;
    if (span.data() < data || span.data() + span.size() > data + capacity) violated();
    unsigned sum = 0;
    for (const std::byte b : span) sum += static_cast<unsigned>(b);
    volatile unsigned sink = sum;
    (void)sink;
  }
}

// A refused ring takes a query's operands too, so what follows in the input keeps its meaning.
void skip_query_operands(Input& in) {
  (void)in.u8();
  (void)in.take(8);
  (void)in.take(4);
}

// Reads through an accepted reader whose image was `mapped` bytes (header and data).
void exercise(Input& in, const RingReader* reader, std::size_t mapped) {
  const std::uint8_t mode = in.u8();
  const std::uint64_t raw = in.take(8);
  const std::uint32_t max_raw = static_cast<std::uint32_t>(in.take(4));
  const std::uint64_t capacity = reader->capacity();
  if (capacity != mapped - kHeaderBytes || capacity % kPageBytes != 0) violated();
  if (reader->data_area().size() != capacity) violated();
  const Cursor committed = reader->committed();
  const Cursor oldest = reader->oldest();
  const std::uint64_t span = 2 * capacity + 1;
  Cursor c{raw};
  switch (mode % 4) {
    case 1: c = committed - raw % span; break;
    case 2: c = oldest + raw % span; break;
    case 3: c = committed + raw % 3; break;
    default: break;
  }
  const std::size_t max = max_raw % span;
  const std::byte* data = reader->data_area().data();

  auto view = reader->read(c, max);
  if (view) {
    if (view->from != c || view->to != c + view->size() || view->size() > max) violated();
    if (c > committed || c < oldest) violated();
    check_view(*view, data, capacity);
    (void)reader->intact(c);
  } else {
    const Error& e = view.error();
    if (e.code == Errc::cursor_in_future) {
      if (!(c > committed) || e.cursor != value(committed)) violated();
    } else if (e.code == Errc::cursor_expired) {
      if (!(c < oldest) || e.cursor != value(oldest)) violated();
    } else {
      violated();
    }
  }

  if (max + kCanary > copy_out.size()) violated();
  const std::span<std::byte> out(copy_out.data(), max);
  std::fill(copy_out.begin() + static_cast<std::ptrdiff_t>(max),
            copy_out.begin() + static_cast<std::ptrdiff_t>(max + kCanary), std::byte{0xcc});
  auto end = reader->copy(c, out);
  if (end && (*end < c || *end - c > out.size())) violated();
  for (std::size_t i = max; i < max + kCanary; ++i) {
    if (copy_out[i] != std::byte{0xcc}) violated();
  }

  if (reader->actor().size() > kActorNameMax) violated();
  const RingHeader& h = reader->header();
  // A seqlock left odd makes the load spin ~a million times before giving up: skip those.
  if (h.meta.seq % 2 == 0) (void)reader->meta();
  if (h.sessions[raw % kSessionSlots].seq % 2 == 0) (void)reader->session(raw);
  (void)reader->epoch();
}

void query(Input& in, const AlignedBuffer& buffer, std::size_t mapped) {
  const std::size_t header_bytes = std::min(mapped, kHeaderBytes);
  auto header = validate_ring_header(buffer.data(), header_bytes, mapped - header_bytes);
  if (!header) {
    if (header.error().code != Errc::bad_segment) violated();
    skip_query_operands(in);
    return;
  }
  auto reader = RingReader::over(buffer.data(), mapped);
  if (!reader) violated();
  exercise(in, &*reader, mapped);
}

// The image, `mapped` bytes of it, in a real ring: a header memfd and a data memfd, opened
// through open_announced with an announcement that matches them or differs in one way `how`
// picks (capacity, nonce, actor, a header segment of another size or without its write seal).
// A difference or an image that does not validate must be refused; an accepted ring is read
// like any other.
void through_segments(Input& in, const AlignedBuffer& buffer, std::size_t mapped) {
  const std::uint8_t how = in.u8();
  const std::uint64_t other_capacity = in.take(8);
  if (mapped <= kHeaderBytes) {
    skip_query_operands(in);
    return;
  }
  const std::size_t data_bytes = mapped - kHeaderBytes;
  const std::size_t header_bytes = (how & 8) ? kHeaderBytes - kPageBytes : kHeaderBytes;
  const Sealing header_sealing = (how & 16) ? Sealing::size : Sealing::size_and_writes;
  auto header = Segment::create("bs-fuzz", header_bytes, header_sealing);
  auto data = Segment::create("bs-fuzz", data_bytes, Sealing::size);
  if (!header || !data) {  // out of memory: nothing to learn
    skip_query_operands(in);
    return;
  }
  std::memcpy(header->data(), buffer.data(), std::min(header_bytes, buffer.size()));
  if (buffer.size() > kHeaderBytes) {
    std::memcpy(data->data(), buffer.data() + kHeaderBytes,
                std::min(data_bytes, buffer.size() - kHeaderBytes));
  }
  bool differs = header_bytes != kHeaderBytes || header_sealing != Sealing::size_and_writes;
  const auto& h = *reinterpret_cast<const RingHeader*>(buffer.data());
  RingAnnouncement announced{
      "fuzz",    ::getpid(), header->fd(), data->fd(), std::string(2 * kRingNonceBytes, '0'),
      data_bytes};
  if (how & 1) {
    announced.capacity = other_capacity % (4 * kMaxCapacity);
    differs |= announced.capacity != data_bytes;
  }
  if (how & 2) announced.nonce = random_hex(kRingNonceBytes);
  differs |= announced.nonce != to_hex(h.nonce);  // pokes may have changed the header's
  const char* end = static_cast<const char*>(std::memchr(h.actor, '\0', sizeof h.actor));
  const std::string actor = end ? std::string(h.actor, end) : std::string();
  if (how & 4) announced.actor = "other";
  differs |= announced.actor != actor;
  auto reader = RingReader::open_announced(announced);
  if (reader) {
    if (differs) violated();
    if (reader->capacity() != announced.capacity) violated();
    exercise(in, &*reader, mapped);
  } else {
    skip_query_operands(in);
    const Errc code = reader.error().code;
    if (code != Errc::bad_segment && code != Errc::stale_segment) violated();
  }
}

void writer_op(Input& in, RingWriter& writer) {
  const std::uint8_t what = in.u8();
  const std::uint64_t n = in.take(4) % (2 * writer.capacity() + 1);
  switch (what % 6) {
    case 0: append_filler(writer, n); break;
    case 1: {
      const std::span<std::byte> space = writer.reserve(static_cast<std::size_t>(n));
      std::fill(space.begin(), space.end(), std::byte{0x62});
      writer.commit(space.size() / 2);
      break;
    }
    case 2: writer.clear(); break;
    case 3: writer.wake_if_committed(); break;
    case 4: {
      ActorMeta meta;
      meta.state = static_cast<ActorState>(n % 4);
      meta.closed = static_cast<std::uint32_t>(n & 1);
      meta.session = n;
      writer.publish_meta(meta);
      break;
    }
    default: {
      SessionRecord s;
      s.id = n;
      s.start = value(writer.floor());
      s.end = value(writer.committed());
      writer.publish_session(s);
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint64_t capacity = (1 + in.u8() % 16) * kPageBytes;
  const std::uint8_t shape = in.u8();
  const std::uint64_t start = in.take(8);
  const std::uint64_t prefill = in.take(4) % (4 * capacity + 1);

  const std::size_t needed = kHeaderBytes + capacity;
  const std::size_t delta = ((shape >> 2) & 0x0f) * ((shape & 0x80) ? kPageBytes : 1);
  std::size_t mapped = needed;
  switch (shape & 3) {
    case 1: mapped = needed - std::min(delta, needed); break;
    case 2: mapped = needed + delta; break;
    case 3: mapped = delta; break;  // often smaller than the header alone
    default: break;
  }
  AlignedBuffer buffer(std::max(mapped, needed));
  RingWriter writer =
      RingWriter::over(buffer.data(), RingIdentity{"fuzz", 1, capacity, Cursor{start}});
  append_filler(writer, prefill);
  auto& header = *reinterpret_cast<RingHeader*>(buffer.data());

  for (int ops = 0; !in.done() && ops < 256; ++ops) {
    switch (in.u8() % 5) {
      case 0: {
        const std::size_t offset = static_cast<std::size_t>(in.take(2)) % buffer.size();
        const auto bytes = in.bytes(in.u8() % 32);
        const std::size_t n = std::min(bytes.size(), buffer.size() - offset);
        std::memcpy(buffer.data() + offset, bytes.data(), n);
        break;
      }
      case 1: {
        const std::uint8_t which = in.u8();
        set_field(header, which, in.take(8));
        break;
      }
      case 2: query(in, buffer, mapped); break;
      case 3: writer_op(in, writer); break;
      default: through_segments(in, buffer, mapped); break;
    }
  }
  // Every input ends with one query, so even an input of only the prelude validates something.
  Input none(nullptr, 0);
  query(none, buffer, mapped);
  return 0;
}
