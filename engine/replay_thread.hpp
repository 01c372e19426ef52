// ReplayThread: the engine's replay thread (`bs-replay`; docs/recorder.md, "The screen at any
// cursor"). It rebuilds past screens (recorder::screen_at: a keyframe plus the bytes after it in
// a scratch mirror) off the io thread, which must never parse, and off the mirror thread, whose
// actors must never wait behind a replay of megabytes. One job at a time, in order.
//
// The io thread submits jobs with everything they need copied in (the keyframe, the bytes, the
// size changes) and collects results after its notify eventfd fires, as with the mirror thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <concurrentqueue/blockingconcurrentqueue.h>

#include "engine/recorder/keyframe.hpp"
#include "engine/term/mirror.hpp"

namespace backscroll::engine {

struct ReplayJob {
  std::uint64_t token = 0;  // the io thread's handle for the result
  recorder::Keyframe keyframe;
  std::string bytes;  // [keyframe.cursor, target)
  std::vector<recorder::SizeChange> changes;
  term::SnapshotOptions options;
};

struct ReplayResult {
  std::uint64_t token = 0;
  term::MirrorSnapshot taken;
};

class ReplayThread {
 public:
  // `notify_fd`: the io thread's eventfd, written after a result is queued. Starts the thread.
  ReplayThread(int notify_fd, term::ScrollbackLimits limits);
  ~ReplayThread();  // finishes the job under way, skips the rest, joins
  ReplayThread(const ReplayThread&) = delete;
  ReplayThread& operator=(const ReplayThread&) = delete;

  // Io thread.
  void submit(ReplayJob job);
  bool next_result(ReplayResult& out) { return results_.try_dequeue(out); }

 private:
  void run();

  int notify_fd_;
  term::ScrollbackLimits limits_;
  // Jobs, and an empty optional to stop (single producer: the io thread).
  moodycamel::BlockingConcurrentQueue<std::optional<ReplayJob>> jobs_;
  moodycamel::ConcurrentQueue<ReplayResult> results_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace backscroll::engine
