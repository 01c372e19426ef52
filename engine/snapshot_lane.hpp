// SnapshotLane: each actor's last snapshot of the present screen, held while the mirror's screen
// is still the one it shows, so that a request with the same options is answered at once by
// whichever thread receives it (the control thread, or the io thread for an `attach`) without
// waiting for the mirror thread, which may be busy with other actors' floods.
//
// A held snapshot answers when, at the moment of the request:
//   - no event changed the mirror since it was asked (resize, clear, reset: each calls
//     changed(), which drops it; a snapshot asked before an event is never kept);
//   - its options are the request's;
//   - either nothing was committed after its cursor (a quiet actor), or the mirror parsed
//     nothing after it (a mirror coasting through a flood, or holding back an unfinished
//     sequence): the mirror's state is still the one at that cursor;
//   - its cursor is still readable in the ring (else the mirror is asked again).
// Any thread may call held(); only the io thread changes the table. A mutex guards the table
// (the control thread takes it once per snapshot request; the io thread at each event, each
// mirror answer and each actor added or removed).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/mirror_thread.hpp"
#include "engine/term/mirror.hpp"
#include "shm/ring_reader.hpp"

namespace backscroll::engine {

class SnapshotLane {
 public:
  // Larger snapshots (200x50 with 10,000 lines: ~1 MB) go through the mirror every time.
  static constexpr std::size_t kMaxHeldBytes = 1u << 20;

  // Io thread. The actor's mirror starts: `ring` reads its ring (committed and oldest cursors),
  // `usage` is where the mirror thread publishes the cursor its screen shows.
  void add(const std::string& actor, shm::RingReader ring, std::shared_ptr<MirrorUsage> usage,
           std::uint64_t epoch);
  void remove(const std::string& actor);
  // The actor's mirror changed without new bytes (an event): the held snapshot is stale.
  void changed(const std::string& actor);
  // The current generation: a snapshot asked now is kept only if no event comes before it.
  std::uint64_t generation(const std::string& actor) const;
  // The mirror's answer to a request asked at `generation` with `options`: held unless an
  // event came since, or it is a fallback, or larger than kMaxHeldBytes.
  void keep(const std::string& actor, std::uint64_t generation,
            const term::SnapshotOptions& options, const term::MirrorSnapshot& taken);

  // Any thread. What the lane answers a request of `actor`'s present screen with `options`,
  // at or after `not_before`; null when the mirror must be asked. Counts the answers.
  struct Answer {
    std::shared_ptr<const term::MirrorSnapshot> taken;
    std::uint64_t epoch = 0;
  };
  std::optional<Answer> held(const std::string& actor, const term::SnapshotOptions& options,
                             Cursor not_before);
  // How many requests held() answered (status: mirror.quick_snapshots).
  std::uint64_t answers() const noexcept { return answers_.load(std::memory_order_relaxed); }
  // The bytes held for the actor (its memory in status).
  std::size_t held_bytes(const std::string& actor) const;

 private:
  struct Entry {
    shm::RingReader ring;
    std::shared_ptr<MirrorUsage> usage;
    std::uint64_t epoch = 0;
    std::uint64_t generation = 0;
    term::SnapshotOptions options;
    std::shared_ptr<const term::MirrorSnapshot> taken;  // null: none held
  };

  mutable std::mutex mutex_;
  std::map<std::string, Entry, std::less<>> entries_;  // guarded by mutex_
  std::uint64_t next_generation_ = 1;                  // guarded by mutex_
  std::atomic<std::uint64_t> answers_{0};              // a statistic: relaxed
};

}  // namespace backscroll::engine
