#include "engine/uring_loop.hpp"

#include <liburing.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "engine/log.hpp"

namespace backscroll::engine {

struct UringLoop::Ring {
  io_uring ring{};
  ~Ring() { io_uring_queue_exit(&ring); }
};

UringLoop::UringLoop(std::unique_ptr<Ring> ring) : ring_(std::move(ring)) {}
UringLoop::~UringLoop() = default;

Result<std::unique_ptr<UringLoop>> UringLoop::create(unsigned entries) {
  auto ring = std::make_unique<Ring>();
  io_uring_params params{};
  // The SQ is drained by our own io_uring_enter calls; the CQ gets 4x room because completions
  // of many actors arrive in bursts between two calls.
  params.flags = IORING_SETUP_CQSIZE;
  params.cq_entries = entries * 4;
  const int rc = io_uring_queue_init_params(entries, &ring->ring, &params);
  if (rc < 0) return fail_errno("io_uring_queue_init", -rc);
  return std::unique_ptr<UringLoop>(new UringLoop(std::move(ring)));
}

void* UringLoop::next_sqe() noexcept {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
  while (sqe == nullptr) {
    // The SQ is full: hand it to the kernel and take a fresh slot.
    io_uring_submit(&ring_->ring);
    sqe = io_uring_get_sqe(&ring_->ring);
  }
  return sqe;
}

void UringLoop::read(int fd, std::span<std::byte> buffer, Completion* done) noexcept {
  auto* sqe = static_cast<io_uring_sqe*>(next_sqe());
  // offset -1: use (and ignore) the file position; a PTY has none.
  io_uring_prep_read(sqe, fd, buffer.data(), static_cast<unsigned>(buffer.size()), -1);
  io_uring_sqe_set_data(sqe, done);
}

void UringLoop::write(int fd, std::span<const std::byte> bytes, Completion* done) noexcept {
  auto* sqe = static_cast<io_uring_sqe*>(next_sqe());
  io_uring_prep_write(sqe, fd, bytes.data(), static_cast<unsigned>(bytes.size()), -1);
  io_uring_sqe_set_data(sqe, done);
}

void UringLoop::recv(int fd, std::span<std::byte> buffer, Completion* done) noexcept {
  auto* sqe = static_cast<io_uring_sqe*>(next_sqe());
  io_uring_prep_recv(sqe, fd, buffer.data(), buffer.size(), 0);
  io_uring_sqe_set_data(sqe, done);
}

void UringLoop::send(int fd, std::span<const std::byte> bytes, Completion* done) noexcept {
  auto* sqe = static_cast<io_uring_sqe*>(next_sqe());
  io_uring_prep_send(sqe, fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  io_uring_sqe_set_data(sqe, done);
}

void UringLoop::accept(int fd, Completion* done) noexcept {
  auto* sqe = static_cast<io_uring_sqe*>(next_sqe());
  io_uring_prep_accept(sqe, fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  io_uring_sqe_set_data(sqe, done);
}

void UringLoop::poll(int fd, unsigned events, Completion* done) noexcept {
  auto* sqe = static_cast<io_uring_sqe*>(next_sqe());
  io_uring_prep_poll_add(sqe, fd, events);
  io_uring_sqe_set_data(sqe, done);
}

void UringLoop::cancel(Completion* target) noexcept {
  auto* sqe = static_cast<io_uring_sqe*>(next_sqe());
  io_uring_prep_cancel(sqe, target, IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data(sqe, nullptr);  // the cancel's own completion is not interesting
}

int UringLoop::run_once(std::optional<std::chrono::steady_clock::time_point> deadline) noexcept {
  io_uring_cqe* cqe = nullptr;
  int rc;
  if (deadline) {
    const auto left = *deadline - std::chrono::steady_clock::now();
    const auto ns = std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::nanoseconds>(left).count());
    __kernel_timespec ts{};
    ts.tv_sec = ns / 1'000'000'000;
    ts.tv_nsec = ns % 1'000'000'000;
    rc = io_uring_submit_and_wait_timeout(&ring_->ring, &cqe, 1, &ts, nullptr);
  } else {
    rc = io_uring_submit_and_wait_timeout(&ring_->ring, &cqe, 1, nullptr, nullptr);
  }
  if (rc < 0 && rc != -ETIME && rc != -EINTR) {
    log(LogLevel::error, "io_uring_submit_and_wait: {}", rc);
  }
  int dispatched = 0;
  unsigned head;
  unsigned seen = 0;
  // A completion handler may queue new SQEs but never reaps CQEs, so iterating is safe.
  io_uring_for_each_cqe(&ring_->ring, head, cqe) {
    ++seen;
    if (auto* done = static_cast<Completion*>(io_uring_cqe_get_data(cqe))) {
      done->complete(cqe->res);
      ++dispatched;
    }
  }
  io_uring_cq_advance(&ring_->ring, seen);
  return dispatched;
}

}  // namespace backscroll::engine
