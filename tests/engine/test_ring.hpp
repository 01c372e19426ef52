// An actor's ring in test memory, with the consumer gate the engine would give it: what the
// engine's worker threads (mirror, writer) read, without an engine.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "engine/consumer_gate.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"
#include "tests/shm/heap_buffer.hpp"

namespace backscroll::testing {

// The eventfd a worker thread (mirror, writer) and the rings' gates signal, as the engine's
// notify fd. Declare it before the worker: members go in reverse order, so it is closed only
// after the worker, which may write to it until it is joined, has gone.
struct NotifyFd {
  NotifyFd() = default;
  NotifyFd(const NotifyFd&) = delete;
  NotifyFd& operator=(const NotifyFd&) = delete;
  ~NotifyFd() { ::close(fd); }
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
};

struct TestRing {
  static constexpr std::uint64_t kCapacity = 8u << 20;

  explicit TestRing(const std::string& name, int notify_fd)
      : buffer(shm::kHeaderBytes + kCapacity),
        writer(shm::RingWriter::over(buffer.data(), {name, 7, kCapacity, Cursor{0}})),
        gate(kCapacity / 2, kCapacity / 4, notify_fd) {}

  shm::RingReader reader() const { return *shm::RingReader::over(buffer.data(), buffer.size()); }
  void write(std::string_view bytes) {
    writer.append(std::as_bytes(std::span(bytes.data(), bytes.size())));
  }

  HeapBuffer buffer;
  shm::RingWriter writer;
  engine::ConsumerGate gate;
};

}  // namespace backscroll::testing
