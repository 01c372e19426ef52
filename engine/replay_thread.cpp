#include "engine/replay_thread.hpp"

#include <pthread.h>

#include "engine/eventfd_signal.hpp"
#include "engine/recorder/screen_at.hpp"

namespace backscroll::engine {

ReplayThread::ReplayThread(int notify_fd, term::ScrollbackLimits limits)
    : notify_fd_(notify_fd), limits_(limits) {
  thread_ = std::thread([this] { run(); });
}

ReplayThread::~ReplayThread() {
  // relaxed: the queue's enqueue/dequeue order the flag's only reader after it, and a job
  // replayed anyway is only wasted work.
  stopping_.store(true, std::memory_order_relaxed);
  jobs_.enqueue(std::nullopt);
  thread_.join();
}

void ReplayThread::submit(ReplayJob job) { jobs_.enqueue(std::move(job)); }

void ReplayThread::run() {
  ::pthread_setname_np(::pthread_self(), "bs-replay");
  for (;;) {
    std::optional<ReplayJob> job;
    jobs_.wait_dequeue(job);
    if (!job) return;
    if (stopping_.load(std::memory_order_relaxed)) continue;  // nobody will read the result
    const recorder::ScreenAt request{&job->keyframe, job->bytes, job->changes, job->options,
                                     limits_};
    results_.enqueue(ReplayResult{job->token, recorder::screen_at(request)});
    signal_eventfd(notify_fd_);
  }
}

}  // namespace backscroll::engine
