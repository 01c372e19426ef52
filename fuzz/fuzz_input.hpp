// FuzzInput: the operand reader the structured fuzz targets share. Values are little-endian;
// past the input's end every value is 0 and done() is true, so any prefix of an input is itself
// a complete input.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace backscroll::fuzzing {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  // The next `bytes` bytes (at most 8) as an unsigned number.
  std::uint64_t take(std::size_t bytes) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes && i < 8; ++i) {
      const std::uint64_t b = at_ < size_ ? data_[at_] : 0;
      ++at_;
      v |= b << (8 * i);
    }
    return v;
  }
  std::uint8_t u8() { return static_cast<std::uint8_t>(take(1)); }
  // The next `n` bytes as they are (fewer at the end of the input).
  std::span<const std::uint8_t> bytes(std::size_t n) {
    const std::size_t start = std::min(at_, size_);
    const std::size_t k = std::min(n, size_ - start);
    at_ += n;
    return {data_ + start, k};
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace backscroll::fuzzing
