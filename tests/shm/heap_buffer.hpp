// HeapBuffer: zero-filled, cache-line aligned memory of kHeaderBytes + capacity (+ slack) bytes,
// as a fresh segment would be, for rings over caller memory (RingWriter::over, RingReader::over)
// in tests of the ring and of its in-process consumers.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>

#include "shm/ring_layout.hpp"

namespace backscroll::testing {

class HeapBuffer {
 public:
  explicit HeapBuffer(std::size_t bytes)
      : bytes_(bytes),
        memory_(
            static_cast<std::byte*>(::operator new (bytes, std::align_val_t{shm::kCacheLine}))) {
    std::memset(memory_, 0, bytes_);
  }
  HeapBuffer(const HeapBuffer&) = delete;
  HeapBuffer& operator=(const HeapBuffer&) = delete;
  ~HeapBuffer() { ::operator delete (memory_, std::align_val_t{shm::kCacheLine}); }

  std::byte* data() const noexcept { return memory_; }
  std::size_t size() const noexcept { return bytes_; }

 private:
  std::size_t bytes_;
  std::byte* memory_;
};

}  // namespace backscroll::testing
