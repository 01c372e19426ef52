// RingWriter and RingReader over one heap buffer (no segment): appends read back in order, the
// wrap splits a read into two spans, lapped and future cursors are errors carrying the right
// cursor, clear() and reserve() move the oldest readable cursor, a ring can start above cursor 0,
// meta and sessions round-trip through their seqlocks, and validate_ring_header rejects every
// malformed header field it is documented to check.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "shm/ring_layout.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"
#include "tests/shm/heap_buffer.hpp"

namespace backscroll::shm {
namespace {

using backscroll::testing::HeapBuffer;

constexpr std::uint64_t kCapacity = kMinCapacity;

// The byte the tests write at cursor c: not periodic in any power of two, so a byte served from
// the wrong offset or the wrong lap never matches.
std::byte byte_at(std::uint64_t c) {
  const std::uint64_t x = (c ^ (c >> 17)) * 0x9e3779b97f4a7c15ULL;
  return static_cast<std::byte>(x >> 56);
}

std::vector<std::byte> pattern(Cursor from, std::size_t n) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = byte_at(value(from) + i);
  return out;
}

std::vector<std::byte> bytes_of(const ReadView& view) {
  std::vector<std::byte> out(view.first.begin(), view.first.end());
  out.insert(out.end(), view.second.begin(), view.second.end());
  return out;
}

// Appends the pattern from the writer's committed cursor, in pieces of at most `piece` bytes.
void append_pattern(RingWriter& writer, std::uint64_t n, std::size_t piece = 4096) {
  while (n > 0) {
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, piece));
    writer.append(pattern(writer.committed(), k));
    n -= k;
  }
}

class Ring : public ::testing::Test {
 protected:
  explicit Ring(Cursor start = Cursor{0}) : buffer_(kHeaderBytes + kCapacity) {
    identity_ = RingIdentity{"ring-test", 0xfeedULL, kCapacity, start};
    writer_.emplace(RingWriter::over(buffer_.data(), identity_));
    auto reader = RingReader::over(buffer_.data(), buffer_.size());
    EXPECT_TRUE(reader.has_value()) << reader.error().describe();
    if (reader) reader_.emplace(std::move(*reader));
  }

  RingWriter& writer() { return *writer_; }
  const RingReader& reader() { return *reader_; }
  RingHeader& header() { return *reinterpret_cast<RingHeader*>(buffer_.data()); }
  const std::byte* data_area() { return buffer_.data() + kHeaderBytes; }

  HeapBuffer buffer_;
  RingIdentity identity_;
  std::optional<RingWriter> writer_;
  std::optional<RingReader> reader_;
};

TEST_F(Ring, ReaderReadsBackTheBytesAppendedInOrder) {
  append_pattern(writer(), 1000, 333);
  EXPECT_EQ(reader().committed(), Cursor{1000});
  auto view = reader().read(Cursor{0}, 1 << 20);
  ASSERT_TRUE(view.has_value()) << view.error().describe();
  EXPECT_EQ(view->from, Cursor{0});
  EXPECT_EQ(view->to, Cursor{1000});
  EXPECT_TRUE(view->second.empty());
  EXPECT_EQ(bytes_of(*view), pattern(Cursor{0}, 1000));
  EXPECT_TRUE(reader().intact(Cursor{0}));
}

TEST_F(Ring, ReaderReadsAtMostMaxBytes) {
  append_pattern(writer(), 1000);
  auto view = reader().read(Cursor{100}, 50);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->from, Cursor{100});
  EXPECT_EQ(view->to, Cursor{150});
  EXPECT_EQ(bytes_of(*view), pattern(Cursor{100}, 50));
}

TEST_F(Ring, ReaderReturnsAnEmptyViewAtTheCommittedCursor) {
  append_pattern(writer(), 10);
  auto view = reader().read(Cursor{10}, 4096);
  ASSERT_TRUE(view.has_value());
  EXPECT_TRUE(view->empty());
  EXPECT_EQ(view->to, Cursor{10});
}

TEST_F(Ring, ReaderSplitsAReadThatCrossesTheEndOfTheDataAreaIntoTwoSpans) {
  append_pattern(writer(), kCapacity - 100);
  append_pattern(writer(), 300);
  auto view = reader().read(Cursor{kCapacity - 100}, 1 << 20);
  ASSERT_TRUE(view.has_value()) << view.error().describe();
  ASSERT_EQ(view->first.size(), 100u);
  ASSERT_EQ(view->second.size(), 200u);
  EXPECT_EQ(view->first.data(), data_area() + kCapacity - 100);
  EXPECT_EQ(view->second.data(), data_area());
  EXPECT_EQ(view->to, Cursor{kCapacity + 200});
  EXPECT_EQ(bytes_of(*view), pattern(Cursor{kCapacity - 100}, 300));
}

TEST_F(Ring, ReaderReportsCursorInFutureWithTheCommittedCursor) {
  append_pattern(writer(), 1234);
  for (const Cursor c :
       {Cursor{1235}, Cursor{kCapacity * 5}, Cursor{std::numeric_limits<std::uint64_t>::max()}}) {
    auto view = reader().read(c, 10);
    ASSERT_FALSE(view.has_value());
    EXPECT_EQ(view.error().code, Errc::cursor_in_future);
    EXPECT_EQ(view.error().cursor, 1234u);
  }
}

TEST_F(Ring, ReaderReportsCursorExpiredWithTheOldestCursorWhenTheWriterLappedIt) {
  append_pattern(writer(), 3 * kCapacity + 17, 5000);
  const Cursor oldest = reader().oldest();
  EXPECT_EQ(oldest, Cursor{2 * kCapacity + 17});
  for (const Cursor c : {Cursor{0}, Cursor{kCapacity}, oldest - 1}) {
    auto view = reader().read(c, 10);
    ASSERT_FALSE(view.has_value()) << value(c);
    EXPECT_EQ(view.error().code, Errc::cursor_expired);
    EXPECT_EQ(view.error().cursor, value(oldest));
  }
  auto view = reader().read(oldest, 1 << 20);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->size(), kCapacity);
  EXPECT_EQ(bytes_of(*view), pattern(oldest, kCapacity));
  EXPECT_TRUE(reader().intact(oldest));
}

TEST_F(Ring, ClearExpiresEveryOlderCursorAndKeepsTheCursorSpace) {
  append_pattern(writer(), 500);
  writer().clear();
  EXPECT_EQ(writer().floor(), Cursor{500});
  EXPECT_EQ(writer().committed(), Cursor{500});
  EXPECT_EQ(reader().oldest(), Cursor{500});
  for (const Cursor c : {Cursor{0}, Cursor{499}}) {
    auto view = reader().read(c, 10);
    ASSERT_FALSE(view.has_value());
    EXPECT_EQ(view.error().code, Errc::cursor_expired);
    EXPECT_EQ(view.error().cursor, 500u);
  }
  auto empty = reader().read(Cursor{500}, 10);
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());

  append_pattern(writer(), 10);
  EXPECT_EQ(reader().committed(), Cursor{510});
  auto view = reader().read(Cursor{500}, 100);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(bytes_of(*view), pattern(Cursor{500}, 10));
}

// A clear leaves none of the cleared bytes in the memory, also those a short read left behind:
// past committed, the unused end of its reservation still holds bytes of the lap before, which
// floor hides from readers but not from anyone who maps the segment. Found by
// Persistence.AClearLeavesNoTraceInTheRingTheMirrorTheCacheOrTheTranscript under load: the
// consumer gate held the next read back, so no read was in flight at the clear.
TEST_F(Ring, AClearZeroesWhatAShortReadLeftOfTheLapBefore) {
  const auto all_zero = [&] {
    const std::byte* d = data_area();
    return std::all_of(d, d + kCapacity, [](std::byte b) { return b == std::byte{0}; });
  };
  for (const bool read_in_flight : {false, true}) {
    SCOPED_TRACE(read_in_flight ? "a read in flight" : "no read in flight");
    append_pattern(writer(), 2 * kCapacity + 100);
    std::span<std::byte> space = writer().reserve(kCapacity / 4);  // a read asks for a quarter
    ASSERT_EQ(space.size(), kCapacity / 4);
    const std::vector<std::byte> got = pattern(writer().committed(), 10);
    std::memcpy(space.data(), got.data(), got.size());
    if (read_in_flight) {
      writer().clear(true);  // the kernel may still write the reservation: wiped at its end
      writer().commit(got.size());
      writer().clear();
    } else {
      writer().commit(got.size());  // ... but it got 10 bytes, and no read follows yet
      writer().clear();
    }
    EXPECT_TRUE(all_zero());
  }
  // And again after more bytes, in pieces that fill their reservations.
  append_pattern(writer(), 100);
  writer().clear();
  EXPECT_TRUE(all_zero());
}

TEST_F(Ring, ReservePublishesReservedAndFloorBeforeTheCommit) {
  append_pattern(writer(), kCapacity);
  const std::span<std::byte> space = writer().reserve(100);
  ASSERT_EQ(space.size(), 100u);
  EXPECT_EQ(space.data(), data_area());
  // Published, although nothing was committed yet.
  EXPECT_EQ(header().reserved, kCapacity + 100);
  EXPECT_EQ(header().floor, 100u);
  EXPECT_EQ(reader().committed(), Cursor{kCapacity});
  // A byte at cursor c lives where c + capacity will be written: the reservation may overwrite
  // cursors below reserved - capacity = 100.
  EXPECT_TRUE(reader().intact(Cursor{100}));
  EXPECT_FALSE(reader().intact(Cursor{99}));
  EXPECT_EQ(reader().oldest(), Cursor{100});
  auto lapped = reader().read(Cursor{99}, 10);
  ASSERT_FALSE(lapped.has_value());
  EXPECT_EQ(lapped.error().code, Errc::cursor_expired);
  EXPECT_EQ(lapped.error().cursor, 100u);
  auto view = reader().read(Cursor{100}, 1 << 20);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->size(), kCapacity - 100);

  // A partial commit leaves the rest of the reservation published.
  std::memcpy(space.data(), pattern(Cursor{kCapacity}, 40).data(), 40);
  writer().commit(40);
  EXPECT_EQ(reader().committed(), Cursor{kCapacity + 40});
  EXPECT_EQ(header().reserved, kCapacity + 100);
  EXPECT_FALSE(reader().intact(Cursor{99}));
}

TEST_F(Ring, ReserveNeverCrossesTheEndOfTheDataArea) {
  append_pattern(writer(), kCapacity - 10);
  const std::span<std::byte> tail = writer().reserve(100);
  EXPECT_EQ(tail.size(), 10u);
  EXPECT_EQ(tail.data(), data_area() + kCapacity - 10);
  writer().commit(tail.size());
  const std::span<std::byte> head = writer().reserve(100);
  EXPECT_EQ(head.size(), 100u);
  EXPECT_EQ(head.data(), data_area());
}

TEST_F(Ring, ReserveNeverLowersAnOutstandingReservation) {
  (void)writer().reserve(1000);
  (void)writer().reserve(10);
  EXPECT_EQ(writer().reserved(), Cursor{1000});
  EXPECT_EQ(header().reserved, 1000u);
}

TEST_F(Ring, IntactIsTrueExactlyWhileReservedIsAtMostOneCapacityAhead) {
  // Arranged by hand: only the published reserved cursor decides.
  const Cursor from{5000};
  header().reserved = value(from) + kCapacity;
  EXPECT_TRUE(reader().intact(from));
  header().reserved = value(from) + kCapacity + 1;
  EXPECT_FALSE(reader().intact(from));
  EXPECT_TRUE(reader().intact(from + 1));
}

TEST_F(Ring, CopyReturnsTheEndCursorAndTheBytesAcrossTheWrap) {
  append_pattern(writer(), kCapacity + 150, 7000);
  std::vector<std::byte> out(300);
  const Cursor from{kCapacity - 150};
  auto end = reader().copy(from, out);
  ASSERT_TRUE(end.has_value()) << end.error().describe();
  EXPECT_EQ(*end, from + 300);
  EXPECT_EQ(out, pattern(from, 300));
}

TEST_F(Ring, CopyStopsAtTheCommittedCursor) {
  append_pattern(writer(), 100);
  std::vector<std::byte> out(300);
  auto end = reader().copy(Cursor{40}, out);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(*end, Cursor{100});
  EXPECT_EQ(std::vector<std::byte>(out.begin(), out.begin() + 60), pattern(Cursor{40}, 60));
}

TEST_F(Ring, CopyReportsCursorExpiredForALappedCursor) {
  append_pattern(writer(), 2 * kCapacity);
  std::vector<std::byte> out(10);
  auto end = reader().copy(Cursor{kCapacity - 1}, out);
  ASSERT_FALSE(end.has_value());
  EXPECT_EQ(end.error().code, Errc::cursor_expired);
  EXPECT_EQ(end.error().cursor, kCapacity);
}

TEST_F(Ring, CopyIntoAnEmptyBufferReturnsTheSameCursor) {
  append_pattern(writer(), 100);
  auto end = reader().copy(Cursor{30}, {});
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(*end, Cursor{30});
}

TEST_F(Ring, ReaderSeesTheIdentityTheWriterPublished) {
  EXPECT_EQ(header().magic, kRingMagic);
  EXPECT_EQ(reader().epoch(), 0xfeedULL);
  EXPECT_EQ(reader().capacity(), kCapacity);
  EXPECT_EQ(reader().actor(), "ring-test");
  EXPECT_EQ(reader().header().engine_pid, ::getpid());
  EXPECT_EQ(reader().header().layout_version, kRingLayoutVersion);
}

TEST_F(Ring, ReaderSeesMetaOnlyOncePublished) {
  auto initial = reader().meta();
  ASSERT_TRUE(initial.has_value());
  EXPECT_EQ(initial->state, ActorState::idle);
  EXPECT_EQ(initial->closed, 0u);
  EXPECT_EQ(initial->session, 0u);

  writer().publish_meta(ActorMeta{ActorState::draining, 132, 43, 0, 7, 4242});
  auto meta = reader().meta();
  ASSERT_TRUE(meta.has_value());
  EXPECT_EQ(meta->state, ActorState::draining);
  EXPECT_EQ(meta->cols, 132u);
  EXPECT_EQ(meta->rows, 43u);
  EXPECT_EQ(meta->closed, 0u);
  EXPECT_EQ(meta->session, 7u);
  EXPECT_EQ(meta->pid, 4242);
  EXPECT_EQ(header().meta.seq % 2, 0u);
}

TEST_F(Ring, ReaderSeesTheOutputStatusWholeOncePublished) {
  auto initial = reader().output();
  ASSERT_TRUE(initial.has_value());
  EXPECT_EQ(initial->cursor, 0u);
  EXPECT_EQ(initial->title_bytes, 0u);
  EXPECT_EQ(initial->agent_status, OutputAgentStatus::unknown);

  OutputStatus out;
  out.cursor = 1234;
  out.bells = 3;
  out.agent_status = OutputAgentStatus::permission;
  const std::string title(kOutputTitleBytes, 'x');  // as long as it can be
  std::memcpy(out.title, title.data(), title.size());
  out.title_bytes = static_cast<std::uint32_t>(title.size());
  std::memcpy(out.agent, "claude", 6);
  out.agent_bytes = 6;
  writer().publish_output(out);
  const auto seen = reader().output();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->cursor, 1234u);
  EXPECT_EQ(seen->bells, 3u);
  EXPECT_EQ(seen->agent_status, OutputAgentStatus::permission);
  EXPECT_EQ(std::string_view(seen->title, seen->title_bytes), title);
  EXPECT_EQ(std::string_view(seen->agent, seen->agent_bytes), "claude");
  EXPECT_EQ(header().output.seq % 2, 0u);
}

TEST_F(Ring, ReaderFindsASessionByIdAndNotAnotherThatSharesItsSlot) {
  const SessionRecord third{3, 100, 200, 777, 1, 0, kSessionExited | kSessionSealed, 0};
  writer().publish_session(third);
  auto found = reader().session(3);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->id, 3u);
  EXPECT_EQ(found->start, 100u);
  EXPECT_EQ(found->end, 200u);
  EXPECT_EQ(found->pid, 777);
  EXPECT_EQ(found->exit_code, 1);
  EXPECT_EQ(found->term_signal, 0);
  EXPECT_EQ(found->flags, kSessionExited | kSessionSealed);
  EXPECT_FALSE(reader().session(4).has_value());                  // an empty slot
  EXPECT_FALSE(reader().session(3 + kSessionSlots).has_value());  // same slot, other id

  SessionRecord later{3 + kSessionSlots, 200, 200, 778, -1, 0, 0, 0};
  writer().publish_session(later);
  EXPECT_FALSE(reader().session(3).has_value());
  ASSERT_TRUE(reader().session(3 + kSessionSlots).has_value());
  EXPECT_EQ(reader().session(3 + kSessionSlots)->flags, 0u);
  later.end = 900;
  later.flags = kSessionSealed;
  writer().publish_session(later);
  EXPECT_EQ(reader().session(3 + kSessionSlots)->end, 900u);
  EXPECT_EQ(reader().session(3 + kSessionSlots)->flags, kSessionSealed);
}

TEST_F(Ring, ReaderFindsNoSessionZero) {
  // Session ids start at 1; an empty slot holds id 0 and must not read as session 0.
  EXPECT_FALSE(reader().session(0).has_value());
  writer().publish_session(SessionRecord{kSessionSlots, 5, 9, 1, -1, 0, 0, 0});  // slot 0
  EXPECT_FALSE(reader().session(0).has_value());
  EXPECT_TRUE(reader().session(kSessionSlots).has_value());
}

TEST_F(Ring, ReaderReportsNoMetaWhenTheWriterDiedMidUpdate) {
  // A crashed engine can leave a seqlock odd forever: readers give up instead of spinning.
  header().meta.seq = 1;
  EXPECT_FALSE(reader().meta().has_value());
  EXPECT_EQ(reader().wait(Cursor{0}, std::chrono::milliseconds(0)), WaitResult::closed);
}

class RingStartingAboveZero : public Ring {
 protected:
  RingStartingAboveZero() : Ring(Cursor{7 * kCapacity + 12345}) {}
};

TEST_F(RingStartingAboveZero, ReaderStartsAtTheIdentityStartCursor) {
  const Cursor start{7 * kCapacity + 12345};
  EXPECT_EQ(writer().committed(), start);
  EXPECT_EQ(reader().committed(), start);
  EXPECT_EQ(reader().oldest(), start);
  auto before = reader().read(start - 1, 10);
  ASSERT_FALSE(before.has_value());
  EXPECT_EQ(before.error().code, Errc::cursor_expired);
  EXPECT_EQ(before.error().cursor, value(start));
  auto empty = reader().read(start, 10);
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());

  append_pattern(writer(), 3000);
  auto view = reader().read(start, 1 << 20);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->first.data(), data_area() + value(start) % kCapacity);
  EXPECT_EQ(bytes_of(*view), pattern(start, 3000));
  EXPECT_EQ(reader().oldest(), start);
}

TEST_F(RingStartingAboveZero, ReaderIsLappedRelativeToTheStartCursor) {
  const Cursor start{7 * kCapacity + 12345};
  append_pattern(writer(), kCapacity + 1);
  EXPECT_EQ(reader().oldest(), start + 1);
  auto view = reader().read(start, 1);
  ASSERT_FALSE(view.has_value());
  EXPECT_EQ(view.error().code, Errc::cursor_expired);
  EXPECT_EQ(view.error().cursor, value(start) + 1);
}

class RingStartingBelowOneCapacity : public Ring {
 protected:
  RingStartingBelowOneCapacity() : Ring(Cursor{1000}) {}
};

TEST_F(RingStartingBelowOneCapacity, ReaderServesNothingBelowTheStartCursor) {
  EXPECT_EQ(reader().oldest(), Cursor{1000});
  auto view = reader().read(Cursor{999}, 1);
  ASSERT_FALSE(view.has_value());
  EXPECT_EQ(view.error().code, Errc::cursor_expired);
  EXPECT_EQ(view.error().cursor, 1000u);
}

// --- cursors near 2^63 and the end of the cursor space ---------------------------------------

// A ring whose cursors start `before` bytes ahead of `point`: laps, reads and intact() across
// 2^63 (the sign bit of a signed cast) and up to kCursorEnd, where the cursor space ends.
class RingNearACursorLimit : public Ring, public ::testing::WithParamInterface<std::uint64_t> {
 protected:
  static constexpr std::uint64_t kBefore = 3 * kCapacity + 777;
  RingNearACursorLimit() : Ring(Cursor{GetParam() - kBefore}) {}
};

TEST_P(RingNearACursorLimit, ReadsLapsAndIntactHoldAcrossIt) {
  const Cursor start{GetParam() - kBefore};
  const Cursor limit{GetParam()};
  Cursor read_at = start;
  // A reader that keeps up reads every byte exactly, right up to the limit.
  while (writer().committed() < limit) {
    const std::uint64_t n = std::min<std::uint64_t>(5000, limit - writer().committed());
    append_pattern(writer(), n, 1500);
    std::vector<std::byte> got(n);
    auto to = reader().copy(read_at, got);
    ASSERT_TRUE(to.has_value()) << to.error().describe();
    ASSERT_EQ(*to, read_at + n);
    ASSERT_EQ(got, pattern(read_at, n)) << "at " << value(read_at);
    read_at = *to;
  }
  EXPECT_EQ(writer().committed(), limit);
  // A reader a lap behind is told, with the oldest cursor; one inside the last lap is intact.
  EXPECT_EQ(reader().oldest(), limit - kCapacity);
  const auto lapped = reader().read(limit - kCapacity - 1, 10);
  ASSERT_FALSE(lapped.has_value());
  EXPECT_EQ(lapped.error().code, Errc::cursor_expired);
  EXPECT_EQ(lapped.error().cursor, value(limit) - kCapacity);
  EXPECT_FALSE(reader().intact(limit - kCapacity - 1));
  EXPECT_TRUE(reader().intact(limit - kCapacity));
  EXPECT_TRUE(reader().intact(limit - 1));
  auto view = reader().read(limit - 100, 1000);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(bytes_of(*view), pattern(limit - 100, 100));
}

INSTANTIATE_TEST_SUITE_P(TwoToTheSixtyThreeAndTheEnd, RingNearACursorLimit,
                         ::testing::Values(std::uint64_t{1} << 63, value(kCursorEnd)));

class RingAtTheEndOfTheCursorSpace : public Ring {
 protected:
  static constexpr std::uint64_t kBefore = 3 * kCapacity + 777;
  RingAtTheEndOfTheCursorSpace() : Ring(kCursorEnd - kBefore) {}
};

TEST_F(RingAtTheEndOfTheCursorSpace, NoByteIsWrittenAtOrPastItAndNothingWraps) {
  append_pattern(writer(), kBefore, 4096);
  EXPECT_EQ(writer().committed(), kCursorEnd);
  EXPECT_TRUE(writer().reserve(4096).empty()) << "no byte at or past kCursorEnd";
  const std::vector<std::byte> more(100, std::byte{1});
  EXPECT_EQ(writer().append(more), 0u);
  EXPECT_EQ(writer().committed(), kCursorEnd);
  EXPECT_EQ(reader().committed(), kCursorEnd);
  EXPECT_TRUE(reader().intact(kCursorEnd - 1));
  // Released like an idle ring: reserved = committed + capacity, still no overflow.
  (void)writer().release_pages();  // on heap memory the madvise fails; reserved is published first
  EXPECT_FALSE(reader().intact(kCursorEnd - 1));
  EXPECT_EQ(advance_capped(kCursorEnd - 10, 1ULL << 40), kCursorEnd);
  EXPECT_EQ(advance_capped(Cursor{5}, 10), Cursor{15});
}

// --- validate_ring_header -------------------------------------------------------------------

class ValidateRingHeader : public ::testing::Test {
 protected:
  // One spare page so that a test can claim a larger mapping than the ring's.
  ValidateRingHeader() : buffer_(kHeaderBytes + kCapacity + kPageBytes) {
    (void)RingWriter::over(buffer_.data(), RingIdentity{"validate", 1, kCapacity, Cursor{0}});
  }
  RingHeader& header() { return *reinterpret_cast<RingHeader*>(buffer_.data()); }
  Result<const RingHeader*> validate(std::size_t mapped = kHeaderBytes + kCapacity) {
    const std::size_t header = std::min(mapped, kHeaderBytes);
    return validate_ring_header(buffer_.data(), header, mapped - header);
  }
  static void expect_bad_segment(const Result<const RingHeader*>& result) {
    ASSERT_FALSE(result.has_value());
    EXPECT_EQ(result.error().code, Errc::bad_segment);
    EXPECT_FALSE(result.error().message.empty());
  }

  HeapBuffer buffer_;
};

TEST_F(ValidateRingHeader, AcceptsTheHeaderAWriterInitialised) {
  auto result = validate();
  ASSERT_TRUE(result.has_value()) << result.error().describe();
  EXPECT_EQ(static_cast<const void*>(*result), static_cast<const void*>(buffer_.data()));
}

TEST_F(ValidateRingHeader, RejectsABufferShorterThanTheHeader) {
  expect_bad_segment(validate(kHeaderBytes - 1));
  expect_bad_segment(validate(0));
  expect_bad_segment(validate_ring_header(nullptr, kHeaderBytes, kCapacity));
}

TEST_F(ValidateRingHeader, RejectsBadMagic) {
  header().magic = kRingMagic ^ 1;
  expect_bad_segment(validate());
  header().magic = 0;  // a segment whose writer has not published yet
  expect_bad_segment(validate());
}

TEST_F(ValidateRingHeader, RejectsAnotherLayoutVersion) {
  header().layout_version = kRingLayoutVersion + 1;
  expect_bad_segment(validate());
}

TEST_F(ValidateRingHeader, RejectsAnotherHeaderSize) {
  header().header_bytes = kHeaderBytes + kPageBytes;
  expect_bad_segment(validate());
}

TEST_F(ValidateRingHeader, RejectsACapacityThatDoesNotMatchTheMappedSize) {
  expect_bad_segment(validate(kHeaderBytes + kCapacity - kPageBytes));
  expect_bad_segment(validate(kHeaderBytes + kCapacity + kPageBytes));
  expect_bad_segment(validate(kHeaderBytes));
}

TEST_F(ValidateRingHeader, RejectsACapacityThatIsNotAPageMultiple) {
  header().capacity = kCapacity + 1;
  expect_bad_segment(validate(kHeaderBytes + kCapacity + 1));
}

TEST_F(ValidateRingHeader, RejectsZeroCapacity) {
  header().capacity = 0;
  expect_bad_segment(validate(kHeaderBytes));
}

TEST_F(ValidateRingHeader, RejectsACapacityOverTheMaximum) {
  header().capacity = kMaxCapacity + kPageBytes;
  // validate reads the header only, so the claimed mapping may exceed the buffer.
  expect_bad_segment(validate(kHeaderBytes + kMaxCapacity + kPageBytes));
}

TEST_F(ValidateRingHeader, RejectsAnUnterminatedActorName) {
  std::memset(header().actor, 'a', sizeof header().actor);
  expect_bad_segment(validate());
}

TEST_F(ValidateRingHeader, AcceptsAnActorNameOfTheMaximumLength) {
  const std::string longest(kActorNameMax, 'n');
  (void)RingWriter::over(buffer_.data(), RingIdentity{longest, 1, kCapacity, Cursor{0}});
  auto reader = RingReader::over(buffer_.data(), kHeaderBytes + kCapacity);
  ASSERT_TRUE(reader.has_value()) << reader.error().describe();
  EXPECT_EQ(reader->actor(), longest);
}

TEST_F(ValidateRingHeader, RingReaderOverRefusesWhatItRejects) {
  header().layout_version = 0;
  auto reader = RingReader::over(buffer_.data(), kHeaderBytes + kCapacity);
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code, Errc::bad_segment);
}

TEST(RingCapacity, RoundsUpToAPageMultipleWithinTheBounds) {
  EXPECT_EQ(ring_capacity_for(0), kMinCapacity);
  EXPECT_EQ(ring_capacity_for(1), kMinCapacity);
  EXPECT_EQ(ring_capacity_for(kMinCapacity + 1), kMinCapacity + kPageBytes);
  EXPECT_EQ(ring_capacity_for(10'485'760), 10'485'760u);
  EXPECT_EQ(ring_capacity_for(50'000'000), kMaxCapacity);
  EXPECT_LE(kMaxCapacity, 50'000'000u);  // docs/settings.md caps per_actor_bytes at 50,000,000
  EXPECT_GT(kMaxCapacity + kPageBytes, 50'000'000u);
  EXPECT_EQ(kMaxCapacity % kPageBytes, 0u);
  EXPECT_EQ(ring_capacity_for(std::numeric_limits<std::uint64_t>::max() / 2), kMaxCapacity);
}

TEST(RingCapacity, ClampsARequestNearTheTopOfTheRangeToTheMaximum) {
  // Regression: (requested + kPageBytes - 1) wrapped for requests within a page of 2^64, so a
  // huge per_actor_bytes produced the minimum ring instead of the maximum.
  EXPECT_EQ(ring_capacity_for(std::numeric_limits<std::uint64_t>::max()), kMaxCapacity);
  EXPECT_EQ(ring_capacity_for(std::numeric_limits<std::uint64_t>::max() - kPageBytes + 2),
            kMaxCapacity);
}

}  // namespace
}  // namespace backscroll::shm
