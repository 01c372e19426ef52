// The ring: the shared-memory layout one engine writes and any number of local readers map
// read-only. This file holds the layout and nothing else; the single producer is RingWriter
// (engine io thread), the consumers are RingReader (any process).
//
//   header segment (kHeaderBytes)             data segment (capacity bytes)
//   +----------------------------------------+    +-------------------------------------------+
//   | RingHeader (identity, cursors, wake,   |    | byte of cursor c at c % capacity          |
//   | meta, session table, output status),   |
//   | zero padded                            |    |                                           |
//   +----------------------------------------+    +-------------------------------------------+
//
// Two sealed memfds (shm/segment.hpp): both of fixed size; the header also sealed against every
// write but the engine's own mapping. Tests and benchmarks may lay the two out contiguously in
// memory of their own (RingWriter::over, RingReader::over): header first, data right after it.
//
// Publication protocol, in the order the engine performs it for one PTY read:
//   1. floor    = max(floor, reserved' - capacity)   (store, release)
//   2. reserved = reserved'                          (store, release) -- before the read is
//   submitted
//   3. the kernel copies PTY bytes into data[committed .. reserved')
//   4. committed += n                                (store, release) -- THE COMMIT POINT
//   5. wake += 1, FUTEX_WAKE                         (once per loop iteration, not per read)
// A reader loads committed (acquire), uses data[c .. committed) in place, then issues an acquire
// fence and loads reserved: if reserved - capacity > c, the engine may have overwritten what it
// read, and the reader discards it (cursor_expired). This is a seqlock over a byte ring.
//
// Every shared field is a plain integer accessed only through std::atomic_ref (readers' mapping
// is read-only, so they never perform read-modify-write operations). Writers: the engine io
// thread only. docs/memory-ordering.md has one row per field.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shm/actor_name.hpp"

namespace backscroll::shm {

inline constexpr std::uint64_t kRingMagic = 0x31474e4952534b42ULL;  // "BKSRING1" little-endian
inline constexpr std::uint32_t kRingLayoutVersion = 3;              // 2: the nonce; 3: OutputStatus
inline constexpr std::size_t kCacheLine = 64;  // fixed: a cross-process layout must not vary
inline constexpr std::size_t kHeaderBytes = 16384;
inline constexpr std::size_t kSessionSlots = 64;    // session id s lives in slot s % kSessionSlots
inline constexpr std::size_t kPageBytes = 4096;     // capacity is a multiple of this
inline constexpr std::size_t kRingNonceBytes = 16;  // 128 random bits per segment

static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic_ref<std::uint32_t>::is_always_lock_free);

enum class ActorState : std::uint32_t {
  idle = 0,      // no session yet, or the last one is sealed
  running = 1,   // a live session
  stopping = 2,  // SIGHUP sent, waiting for exit (SIGKILL after the grace period)
  draining = 3,  // the program exited; reading the PTY until EOF or the drain window ends
};

// Session flags.
inline constexpr std::uint32_t kSessionExited = 1u << 0;  // exit_code / term_signal are valid
inline constexpr std::uint32_t kSessionSealed = 1u << 1;  // end is final

// One session of the actor's program. Trivially copyable; published through a SeqlockCell.
struct SessionRecord {
  std::uint64_t id = 0;     // 1-based, per actor; 0 marks an empty slot
  std::uint64_t start = 0;  // cursor of the session's first byte
  std::uint64_t end = 0;    // cursor one past its last byte; final once kSessionSealed is set
  std::int64_t pid = 0;
  std::int32_t exit_code = -1;   // WEXITSTATUS, when exited normally
  std::int32_t term_signal = 0;  // the signal that killed it, else 0
  std::uint32_t flags = 0;
  std::uint32_t reserved_ = 0;
};
static_assert(sizeof(SessionRecord) % 8 == 0);

// Mutable actor facts that are not cursors. Published through a SeqlockCell.
struct ActorMeta {
  ActorState state = ActorState::idle;
  std::uint32_t cols = 0;
  std::uint32_t rows = 0;
  std::uint32_t closed = 0;   // 1 once the engine is removing this segment: readers stop
  std::uint64_t session = 0;  // id of the newest session (live or sealed), 0 before the first
  std::int64_t pid = 0;       // pid of the live session's program, 0 when none
};
static_assert(sizeof(ActorMeta) % 8 == 0);

// What the actor's output says now, as the engine's mirror read it: the window title, the bells
// rung, the agent status the engine's rule table reads from the title (docs/recorder.md, "In the
// ring header"). Zero-copy readers (the bridge's page, a status bar) read it here instead of
// scanning the stream. Published through a SeqlockCell after each batch the mirror reports.
inline constexpr std::size_t kOutputTitleBytes = 256;  // the scanner's title bound
inline constexpr std::size_t kOutputAgentBytes = 64;
enum class OutputAgentStatus : std::uint32_t { unknown = 0, working = 1, idle = 2, permission = 3 };
struct OutputStatus {
  std::uint64_t cursor = 0;  // the output was read up to here (0 with nothing read yet)
  std::uint64_t bells = 0;   // bells rung since the engine began mirroring the actor
  OutputAgentStatus agent_status = OutputAgentStatus::unknown;
  std::uint32_t title_bytes = 0;  // of `title`: sanitized UTF-8, no control characters
  std::uint32_t agent_bytes = 0;  // of `agent`: the matching rule's agent ("" when none)
  std::uint32_t reserved_ = 0;
  char title[kOutputTitleBytes] = {};
  char agent[kOutputAgentBytes] = {};
};
static_assert(sizeof(OutputStatus) % 8 == 0);

// A value of a few words written by one thread and read by any process without locks.
// Writer: seq odd -> words -> seq even. Reader: retry until it saw the same even seq around its
// copy. See seqlock.hpp for the operations and their ordering.
template <class T>
struct SeqlockCell {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0);
  std::uint64_t seq;
  alignas(8) unsigned char words[sizeof(T)];
};

struct RingHeader {
  // --- identity: written once before `magic` is published, then never changed -------------
  std::uint64_t magic;  // release-stored last at creation; readers acquire-load it first
  std::uint32_t layout_version;
  std::uint32_t header_bytes;
  std::uint64_t capacity;            // data bytes; a multiple of kPageBytes
  std::uint64_t epoch;               // random id of this actor's cursor space
  std::int64_t engine_pid;           // the engine that owns the segment
  std::uint64_t engine_start_ticks;  // its start time (clock ticks since boot, /proc/PID/stat)
  // Random per segment (getrandom), announced by the engine over its control socket: a reader
  // trusts a segment only when this matches the announcement (docs/security.md).
  std::byte nonce[kRingNonceBytes];
  char actor[kActorNameMax + 1];  // NUL terminated

  // --- published cursors, each alone on its cache line ------------------------------------
  alignas(kCacheLine) std::uint64_t committed;  // every byte below is final
  alignas(kCacheLine) std::uint64_t reserved;   // the kernel may be writing any byte below
  alignas(kCacheLine) std::uint64_t floor;      // the oldest readable cursor
  alignas(kCacheLine) std::uint32_t wake;       // futex word: bumped after commits

  // --- seqlocked facts ---------------------------------------------------------------------
  alignas(kCacheLine) SeqlockCell<ActorMeta> meta;
  alignas(kCacheLine) SeqlockCell<SessionRecord> sessions[kSessionSlots];
  alignas(kCacheLine) SeqlockCell<OutputStatus> output;
};

static_assert(std::is_standard_layout_v<RingHeader>);
static_assert(sizeof(RingHeader) <= kHeaderBytes);
static_assert(kHeaderBytes % kPageBytes == 0);
static_assert(alignof(RingHeader) == kCacheLine);

// Bounds the engine accepts for a ring's data area.
inline constexpr std::uint64_t kMinCapacity = 64 * 1024;
inline constexpr std::uint64_t kMaxCapacity =
    50'000'000ULL / kPageBytes * kPageBytes;  // <= the cap

// Rounds a requested size (per_actor_bytes) up to a page multiple within the bounds.
constexpr std::uint64_t ring_capacity_for(std::uint64_t requested_bytes) noexcept {
  // Clamp first: rounding a request within a page of 2^64 up would wrap to a tiny ring.
  if (requested_bytes > kMaxCapacity) return kMaxCapacity;
  std::uint64_t c = (requested_bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  if (c < kMinCapacity) c = kMinCapacity;
  if (c > kMaxCapacity) c = kMaxCapacity;
  return c;
}

}  // namespace backscroll::shm
