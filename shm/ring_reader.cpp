#include "shm/ring_reader.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

#include "shm/control_client.hpp"
#include "shm/process_identity.hpp"
#include "shm/random_hex.hpp"
#include "shm/seqlock.hpp"

namespace backscroll::shm {
namespace {

// atomic_ref needs a non-const object; every access here is a load, so the read-only mapping
// is never written.
template <class T>
T load(const T& field, std::memory_order order) noexcept {
  return std::atomic_ref<T>(const_cast<T&>(field)).load(order);
}

}  // namespace

Result<const RingHeader*> validate_ring_header(const std::byte* header, std::size_t header_bytes,
                                               std::uint64_t data_bytes) {
  if (header == nullptr || header_bytes < kHeaderBytes) {
    return fail(Errc::bad_segment, "ring header segment smaller than a header");
  }
  const auto* h = reinterpret_cast<const RingHeader*>(header);
  // acquire: pairs with the release store of magic in RingWriter::initialise; after it every
  // identity field is initialised.
  if (load(h->magic, std::memory_order_acquire) != kRingMagic) {
    return fail(Errc::bad_segment, "not a backscroll ring (bad magic)");
  }
  if (h->layout_version != kRingLayoutVersion) {
    return fail(Errc::bad_segment, "ring layout version " + std::to_string(h->layout_version) +
                                       ", this reader knows " + std::to_string(kRingLayoutVersion));
  }
  if (h->header_bytes != kHeaderBytes) {
    return fail(Errc::bad_segment, "ring header size " + std::to_string(h->header_bytes));
  }
  if (h->capacity == 0 || h->capacity % kPageBytes != 0 || h->capacity > kMaxCapacity ||
      h->capacity != data_bytes) {
    return fail(Errc::bad_segment, "ring capacity " + std::to_string(h->capacity) +
                                       " does not match the mapped data size " +
                                       std::to_string(data_bytes));
  }
  if (std::memchr(h->actor, '\0', sizeof h->actor) == nullptr) {
    return fail(Errc::bad_segment, "actor name not terminated");
  }
  return h;
}

RingReader::RingReader(std::shared_ptr<const RingSegments> segments, const RingHeader* header,
                       const std::byte* data)
    : segments_(std::move(segments)), header_(header), data_(data), capacity_(header->capacity) {}

Result<RingReader> RingReader::over(const std::byte* header, std::size_t header_bytes,
                                    const std::byte* data, std::size_t data_bytes) {
  auto validated = validate_ring_header(header, header_bytes, data_bytes);
  if (!validated) return tl::unexpected(validated.error());
  return RingReader(nullptr, *validated, data);
}

Result<RingReader> RingReader::over(const std::byte* base, std::size_t mapped_bytes) {
  const std::size_t header_bytes = std::min(mapped_bytes, kHeaderBytes);
  return over(base, header_bytes, base + header_bytes, mapped_bytes - header_bytes);
}

Result<RingReader> RingReader::open_announced(const RingAnnouncement& announced) {
  const std::string ring = "the ring of '" + announced.actor + "'";
  auto header_segment = Segment::open_read_only(announced.engine_pid, announced.header_fd,
                                                kHeaderBytes, Sealing::size_and_writes);
  if (!header_segment) return tl::unexpected(header_segment.error());
  auto data_segment = Segment::open_read_only(announced.engine_pid, announced.data_fd,
                                              announced.capacity, Sealing::size);
  if (!data_segment) return tl::unexpected(data_segment.error());
  auto refuse = [&](const std::string& why) {
    return fail(Errc::bad_segment,
                ring + " " + why + ": it is not the ring the engine announced; not read");
  };
  auto header =
      validate_ring_header(header_segment->data(), header_segment->size(), data_segment->size());
  if (!header) {
    Error e = header.error();
    e.message = ring + ": " + e.message;
    return tl::unexpected(std::move(e));
  }
  if (std::string_view((*header)->actor) != announced.actor) {
    return refuse("holds actor '" + std::string((*header)->actor) + "'");
  }
  if (to_hex((*header)->nonce) != announced.nonce) return refuse("has another nonce");
  const ProcessIdentity owner{static_cast<pid_t>((*header)->engine_pid),
                              (*header)->engine_start_ticks};
  if (owner.pid != announced.engine_pid || !owner.alive()) {
    return fail(Errc::stale_segment,
                ring + " belongs to engine pid " + std::to_string(owner.pid) + ", which is gone");
  }
  const std::byte* data = data_segment->data();
  return RingReader(std::make_shared<const RingSegments>(
                        RingSegments{std::move(*header_segment), std::move(*data_segment)}),
                    *header, data);
}

namespace {

Result<RingAnnouncement> ask_engine_for_ring(const Places& places, std::string_view actor) {
  auto client = control::ControlClient::connect(places);
  if (!client) return tl::unexpected(client.error());
  auto answer = client->call("status", control::Json{{"actor", actor}});
  if (!answer) return tl::unexpected(answer.error());
  // A malformed answer is the engine's bug, not the reader's: internal, with what was missing.
  const control::Json& actors = answer->header.value("actors", control::Json::array());
  if (!actors.is_array() || actors.size() != 1 || !actors[0].is_object()) {
    return fail(Errc::internal,
                "the engine's status answer for '" + std::string(actor) + "' has no actor entry");
  }
  const control::Json& a = actors[0];
  auto descriptor = [&](const char* key) -> int {
    const auto it = a.find(key);
    if (it == a.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() > INT_MAX) return -1;
    return static_cast<int>(it->get<std::uint64_t>());
  };
  const int header_fd = descriptor("header_fd");
  const int data_fd = descriptor("data_fd");
  const auto nonce = a.find("nonce");
  const auto capacity = a.find("capacity");
  if (header_fd < 0 || data_fd < 0 || nonce == a.end() || !nonce->is_string() ||
      capacity == a.end() || !capacity->is_number_unsigned()) {
    return fail(Errc::internal, "the engine's status answer for '" + std::string(actor) +
                                    "' lacks header_fd, data_fd, nonce or capacity");
  }
  // The descriptors are the engine's: its pid comes from the socket's peer credentials, which
  // the kernel vouches for, not from anything the answer says.
  return RingAnnouncement{std::string(actor),
                          client->peer_pid(),
                          header_fd,
                          data_fd,
                          nonce->get<std::string>(),
                          capacity->get<std::uint64_t>()};
}

}  // namespace

Result<RingReader> RingReader::open(const Places& places, std::string_view actor) {
  if (!is_valid_actor_name(actor)) {
    return fail(Errc::bad_actor_name, "invalid actor name '" + std::string(actor) + "'");
  }
  auto announced = ask_engine_for_ring(places, actor);
  if (!announced) return tl::unexpected(announced.error());
  return open_announced(*announced);
}

Cursor RingReader::committed() const noexcept {
  // acquire: pairs with RingWriter::commit; bytes below the loaded value are final.
  return Cursor{load(header_->committed, std::memory_order_acquire)};
}

Cursor RingReader::oldest() const noexcept {
  // acquire: pairs with the release stores of floor in RingWriter.
  const Cursor floor{load(header_->floor, std::memory_order_acquire)};
  const Cursor reserved{load(header_->reserved, std::memory_order_acquire)};
  const Cursor lapped = reserved - std::min(value(reserved), capacity_);
  return max(floor, lapped);
}

Result<ReadView> RingReader::read(Cursor from, std::size_t max_bytes) const noexcept {
  const Cursor end = committed();
  if (from > end) {
    return fail(Errc::cursor_in_future,
                "cursor " + std::to_string(value(from)) + " is past the committed cursor " +
                    std::to_string(value(end)),
                value(end));
  }
  const Cursor oldest_now = oldest();
  if (from < oldest_now) {
    return fail(Errc::cursor_expired,
                "cursor " + std::to_string(value(from)) +
                    " is older than the oldest retained cursor " +
                    std::to_string(value(oldest_now)),
                value(oldest_now));
  }
  // A consistent ring never has more than `capacity` readable bytes after `oldest`; the clamp
  // keeps a damaged header (committed beyond reserved) from yielding spans past the data area.
  const std::uint64_t n = std::min<std::uint64_t>({end - from, max_bytes, capacity_});
  const std::uint64_t offset = value(from) % capacity_;
  const std::uint64_t first = std::min(n, capacity_ - offset);
  ReadView view;
  view.from = from;
  view.to = from + n;
  view.first = {data_ + offset, static_cast<std::size_t>(first)};
  view.second = {data_, static_cast<std::size_t>(n - first)};
  return view;
}

bool RingReader::intact(Cursor from) const noexcept {
  // acquire fence: every load of ring bytes the caller made before this call is ordered before
  // the reserved load below; pairs with the release store of reserved in RingWriter, which
  // precedes any kernel write into the newly reserved space.
  std::atomic_thread_fence(std::memory_order_acquire);
  const std::uint64_t reserved = load(header_->reserved, std::memory_order_relaxed);
  // Written as a difference: `from + capacity` could overflow in a damaged header's cursor space.
  return reserved <= value(from) || reserved - value(from) <= capacity_;
}

Result<Cursor> RingReader::copy(Cursor from, std::span<std::byte> out) const noexcept {
  auto view = read(from, out.size());
  if (!view) return tl::unexpected(view.error());
  // Guarded: an empty `out` may have a null data(), and memcpy(nullptr, _, 0) is undefined.
  if (!view->first.empty()) std::memcpy(out.data(), view->first.data(), view->first.size());
  if (!view->second.empty()) {
    std::memcpy(out.data() + view->first.size(), view->second.data(), view->second.size());
  }
  if (!intact(from)) {
    const Cursor oldest_now = oldest();
    return fail(Errc::cursor_expired,
                "the engine overwrote cursor " + std::to_string(value(from)) + " while it was read",
                value(oldest_now));
  }
  return view->to;
}

std::uint32_t RingReader::wake_seen() const noexcept {
  // acquire: pairs with the release increment in RingWriter::wake_readers, so whatever the
  // engine published before that wake (commits, a sealed session) is seen by the checks after.
  return std::atomic_ref<std::uint32_t>(const_cast<std::uint32_t&>(header_->wake))
      .load(std::memory_order_acquire);
}

WaitResult RingReader::wait(Cursor after, std::chrono::milliseconds timeout) const noexcept {
  return wait(after, timeout, wake_seen());
}

WaitResult RingReader::wait(Cursor after, std::chrono::milliseconds timeout,
                            std::uint32_t seen) const noexcept {
  timespec deadline{};
  ::clock_gettime(CLOCK_MONOTONIC, &deadline);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  deadline.tv_sec += static_cast<time_t>(ns / 1'000'000'000);
  deadline.tv_nsec += static_cast<long>(ns % 1'000'000'000);
  if (deadline.tv_nsec >= 1'000'000'000) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1'000'000'000;
  }
  auto& word = const_cast<std::uint32_t&>(header_->wake);
  for (;;) {
    // Order matters: wake first, then committed (RingWriter stores them in the opposite order),
    // so a commit this check misses has already changed `word` when the kernel compares it.
    const std::uint32_t now_seen = wake_seen();
    if (committed() > after) return WaitResult::ready;
    if (auto m = meta(); !m || m->closed) return WaitResult::closed;
    // A wake without a new byte (a session sealed while the reader had every byte) is news of
    // its own: the caller looks again at what it waits for, now rather than at its timeout.
    if (now_seen != seen) return WaitResult::woken;
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > deadline.tv_sec ||
        (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec)) {
      return WaitResult::timeout;
    }
    // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. Not FUTEX_PRIVATE: the word
    // is shared between processes. A read-only mapping is enough to wait on it. Woken, the
    // word changed already (EAGAIN), a signal: the checks above say which.
    const long rc = ::syscall(SYS_futex, &word, FUTEX_WAIT_BITSET, seen, &deadline, nullptr,
                              FUTEX_BITSET_MATCH_ANY);
    if (rc == -1 && errno == ETIMEDOUT) {
      return committed() > after ? WaitResult::ready : WaitResult::timeout;
    }
  }
}

std::optional<ActorMeta> RingReader::meta() const noexcept { return seqlock_load(header_->meta); }

std::optional<OutputStatus> RingReader::output() const noexcept {
  return seqlock_load(header_->output);
}

std::optional<SessionRecord> RingReader::session(std::uint64_t id) const noexcept {
  if (id == 0) return std::nullopt;  // ids start at 1; empty slots hold id 0
  auto record = seqlock_load(header_->sessions[id % kSessionSlots]);
  if (!record || record->id != id) return std::nullopt;
  return record;
}

}  // namespace backscroll::shm
