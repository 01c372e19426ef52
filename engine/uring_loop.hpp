// UringLoop: the engine's one io_uring (io thread only). Every PTY read and write, control
// socket accept/recv/send, pidfd and eventfd wait goes through it; uring_loop.cpp is the only
// file that includes <liburing.h>. An op names a Completion; the loop calls it exactly once per
// op with the CQE's result (-errno on failure, the liburing convention).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "shm/error.hpp"

namespace backscroll::engine {

// Whoever submitted an op. The object must outlive the op: owners count their ops in flight
// and are destroyed only when none is left.
class Completion {
 public:
  virtual void complete(int result) noexcept = 0;

 protected:
  ~Completion() = default;
};

// A Completion that forwards to a member function: `OpSlot<&Actor::on_read> read_op{this};`.
template <auto Method>
class OpSlot;
template <class Owner, void (Owner::*Method)(int) noexcept>
class OpSlot<Method> final : public Completion {
 public:
  explicit OpSlot(Owner* owner) : owner_(owner) {}
  void complete(int result) noexcept override { (owner_->*Method)(result); }

 private:
  Owner* owner_;
};

class UringLoop {
 public:
  static Result<std::unique_ptr<UringLoop>> create(unsigned entries);
  ~UringLoop();
  UringLoop(const UringLoop&) = delete;
  UringLoop& operator=(const UringLoop&) = delete;

  void read(int fd, std::span<std::byte> buffer, Completion* done) noexcept;
  void write(int fd, std::span<const std::byte> bytes, Completion* done) noexcept;
  void recv(int fd, std::span<std::byte> buffer, Completion* done) noexcept;
  void send(int fd, std::span<const std::byte> bytes, Completion* done) noexcept;
  // Completes with the new connection's fd (non-blocking, close-on-exec).
  void accept(int fd, Completion* done) noexcept;
  // One-shot poll; completes with the ready events mask.
  void poll(int fd, unsigned events, Completion* done) noexcept;
  // Asks the kernel to cancel every op submitted for `target`; each still completes (usually
  // with -ECANCELED, possibly with its real result if it raced).
  void cancel(Completion* target) noexcept;

  // Submits what was queued, waits for at least one completion or until `deadline`, then
  // dispatches every completion available. Returns how many it dispatched.
  int run_once(std::optional<std::chrono::steady_clock::time_point> deadline) noexcept;

 private:
  struct Ring;
  explicit UringLoop(std::unique_ptr<Ring> ring);
  void* next_sqe() noexcept;

  std::unique_ptr<Ring> ring_;
};

}  // namespace backscroll::engine
