// wait_ring, the wait `attach` makes on its actor's ring and its own doorbell at once: each
// reason to wake ends the wait with its own answer, and a wake that came after the caller took
// its tokens, but before it began to wait, ends the wait at once (no lost wake-up).
#include "tools/cli_ring_wait.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"
#include "tests/shm/heap_buffer.hpp"

namespace backscroll::cli {
namespace {

using namespace std::chrono_literals;

// A bound that only keeps a broken wait from hanging the suite: each answer below comes from
// a wake, never from this timeout.
constexpr auto kLong = 60s;

class RingWaitTest : public ::testing::Test {
 protected:
  RingWaitTest() : buffer_(shm::kHeaderBytes + shm::kMinCapacity) {
    writer_.emplace(shm::RingWriter::over(
        buffer_.data(), shm::RingIdentity{"wait", 1, shm::kMinCapacity, Cursor{0}}));
    auto reader = shm::RingReader::over(buffer_.data(), buffer_.size());
    EXPECT_TRUE(reader.has_value());
    if (reader) reader_.emplace(std::move(*reader));
  }

  testing::HeapBuffer buffer_;
  std::optional<shm::RingWriter> writer_;
  std::optional<shm::RingReader> reader_;
  Doorbell bell_;
};

TEST_F(RingWaitTest, AWakeWithoutANewByteIsWoken) {
  writer_->append(std::as_bytes(std::span("ab", 2)));
  const std::uint32_t ring = reader_->wake_seen();
  const std::uint32_t bell = bell_.seen();
  std::thread engine([&] {
    std::this_thread::sleep_for(20ms);  // most likely asleep by then; either way the same answer
    writer_->wake_readers();            // a seal: nothing new to read
  });
  EXPECT_EQ(wait_ring(*reader_, Cursor{2}, ring, bell_, bell, kLong), RingWake::woken);
  engine.join();
}

TEST_F(RingWaitTest, AWakeBeforeTheWaitBeganIsNotLost) {
  const std::uint32_t ring = reader_->wake_seen();
  const std::uint32_t bell = bell_.seen();
  writer_->wake_readers();
  EXPECT_EQ(wait_ring(*reader_, Cursor{0}, ring, bell_, bell, kLong), RingWake::woken);
  EXPECT_EQ(reader_->wait(Cursor{0}, kLong, ring), shm::WaitResult::woken);
}

TEST_F(RingWaitTest, NewBytesAreReadyTheDoorbellIsADoorbellAndSilenceATimeout) {
  const std::uint32_t ring = reader_->wake_seen();
  const std::uint32_t bell = bell_.seen();
  EXPECT_EQ(wait_ring(*reader_, Cursor{0}, ring, bell_, bell, 10ms), RingWake::timeout);
  bell_.ring();
  EXPECT_EQ(wait_ring(*reader_, Cursor{0}, ring, bell_, bell, kLong), RingWake::doorbell);
  writer_->append(std::as_bytes(std::span("x", 1)));
  writer_->wake_readers();
  EXPECT_EQ(wait_ring(*reader_, Cursor{0}, ring, bell_, bell_.seen(), kLong), RingWake::ready);
}

}  // namespace
}  // namespace backscroll::cli
