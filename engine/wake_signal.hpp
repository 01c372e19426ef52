// WakeSignal: how a worker thread of the engine (the mirror thread, the writer thread) sleeps
// while it has nothing to do and how the io thread wakes it, without a lost wake-up and without
// a syscall per commit while the worker is busy.
//
// Dekker's pattern with the state the worker looks at (the rings' committed cursors, its command
// queue): the worker stores sleeping = true, fences, then looks for work; the waker publishes
// (commit, enqueue), fences, then exchanges sleeping to false and writes the eventfd if it was
// true. One of the two sees the other, so no work is left unseen while the worker sleeps.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <system_error>

#include "engine/eventfd_signal.hpp"

namespace backscroll::engine {

class WakeSignal {
 public:
  WakeSignal() : fd_(::eventfd(0, EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~WakeSignal() { ::close(fd_); }
  WakeSignal(const WakeSignal&) = delete;
  WakeSignal& operator=(const WakeSignal&) = delete;

  // Any thread, after publishing the work.
  void wake() noexcept {
    // Orders the caller's publication before the loads of sleeping_ (and wants_data_ in
    // wake_for_data); pairs with sleep().
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleeping_.exchange(false, std::memory_order_seq_cst)) {
      signal_eventfd(fd_);
    }
  }
  // The io thread, after committing bytes: like wake(), unless the worker went to sleep saying
  // it does not want to be woken for new bytes (it sleeps with a timeout then and looks itself).
  void wake_for_data() noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (wants_data_.load(std::memory_order_seq_cst) &&
        sleeping_.exchange(false, std::memory_order_seq_cst)) {
      signal_eventfd(fd_);
    }
  }

  // The worker thread: blocks until wake(), unless `has_work()` (which loads the published
  // state) finds something first; with `timeout_ms` >= 0, at most that long; woken by
  // wake_for_data() only if `wants_data`.
  template <class HasWork>
  void sleep(HasWork&& has_work, int timeout_ms = -1, bool wants_data = true) {
    wants_data_.store(wants_data, std::memory_order_seq_cst);
    sleeping_.store(true, std::memory_order_seq_cst);
    // Orders the store above before the loads in has_work(); pairs with wake().
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!has_work()) {
      pollfd p{fd_, POLLIN, 0};
      if (timeout_ms < 0 || ::poll(&p, 1, timeout_ms) > 0) {
        std::uint64_t count = 0;
        [[maybe_unused]] const ssize_t n = ::read(fd_, &count, sizeof count);
      }
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }

 private:
  int fd_;
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> wants_data_{true};
};

}  // namespace backscroll::engine
