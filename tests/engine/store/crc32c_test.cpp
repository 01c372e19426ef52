// CRC-32C of transcript records: the published check values (RFC 3720 B.4), and the fast path
// equal to a bit-by-bit reference at every length and alignment.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "engine/store/crc32c.hpp"

namespace backscroll::testing {
namespace {

std::uint32_t reference(const unsigned char* p, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

TEST(Crc32c, PublishedCheckValues) {
  EXPECT_EQ(store::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(store::crc32c("", 0), 0u);
  const std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(store::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(store::crc32c(ones.data(), ones.size()), 0x62A8AB43u);
}

TEST(Crc32c, EqualsTheReferenceAtEveryLengthAndAlignment) {
  std::mt19937 gen(3);
  std::string data(300, '\0');
  for (char& c : data) c = static_cast<char>(gen());
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  for (std::size_t offset = 0; offset < 9; ++offset) {
    for (std::size_t n = 0; n + offset <= data.size(); n += 7) {
      ASSERT_EQ(store::crc32c(bytes + offset, n), reference(bytes + offset, n))
          << "offset " << offset << " length " << n;
    }
  }
}

// Long inputs run three streams at once, joined by shifting: every length around the multiples
// of the three-stream chunk (3 KiB), and offsets, against the reference.
TEST(Crc32c, EqualsTheReferenceOnLongInputsInEveryPlaceTheStreamsJoin) {
  std::mt19937 gen(5);
  std::string data(20'000, '\0');
  for (char& c : data) c = static_cast<char>(gen());
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  for (std::size_t offset : {0u, 1u, 5u}) {
    for (std::size_t chunks = 1; chunks <= 6; ++chunks) {
      for (std::size_t n = chunks * 3072 - 9; n <= chunks * 3072 + 9; ++n) {
        if (offset + n > data.size()) break;
        ASSERT_EQ(store::crc32c(bytes + offset, n), reference(bytes + offset, n))
            << "offset " << offset << " length " << n;
      }
    }
  }
  // A long run of one byte value: the streams' states are alike, the join must still be exact.
  const std::string ones(9 * 1024 + 3, '\xff');
  EXPECT_EQ(store::crc32c(ones.data(), ones.size()),
            reference(reinterpret_cast<const unsigned char*>(ones.data()), ones.size()));
}

}  // namespace
}  // namespace backscroll::testing
