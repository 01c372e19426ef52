#include "engine/snapshot_lane.hpp"

namespace backscroll::engine {

void SnapshotLane::add(const std::string& actor, shm::RingReader ring,
                       std::shared_ptr<MirrorUsage> usage, std::uint64_t epoch) {
  const std::lock_guard lock(mutex_);
  entries_.insert_or_assign(
      actor, Entry{std::move(ring), std::move(usage), epoch, next_generation_++, {}, nullptr});
}

void SnapshotLane::remove(const std::string& actor) {
  const std::lock_guard lock(mutex_);
  if (const auto it = entries_.find(actor); it != entries_.end()) entries_.erase(it);
}

void SnapshotLane::changed(const std::string& actor) {
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find(actor);
  if (it == entries_.end()) return;
  it->second.generation = next_generation_++;
  it->second.taken.reset();
}

std::uint64_t SnapshotLane::generation(const std::string& actor) const {
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find(actor);
  return it == entries_.end() ? 0 : it->second.generation;
}

void SnapshotLane::keep(const std::string& actor, std::uint64_t generation,
                        const term::SnapshotOptions& options, const term::MirrorSnapshot& taken) {
  if (taken.snapshot.fallback_reason || taken.snapshot.bytes.size() > kMaxHeldBytes) return;
  auto copy = std::make_shared<const term::MirrorSnapshot>(taken);  // outside the lock
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find(actor);
  if (it == entries_.end() || it->second.generation != generation) return;
  it->second.options = options;
  it->second.taken = std::move(copy);
}

std::optional<SnapshotLane::Answer> SnapshotLane::held(const std::string& actor,
                                                       const term::SnapshotOptions& options,
                                                       Cursor not_before) {
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find(actor);
  if (it == entries_.end() || !it->second.taken || !(it->second.options == options)) {
    return std::nullopt;
  }
  const Entry& e = it->second;
  const Cursor at = e.taken->cursor;
  // `parsed` is a relaxed statistic of the mirror thread's: equal to `at`, the mirror has fed
  // nothing past the snapshot as of its last published turn. The committed cursor is loaded
  // with acquire by the reader. Either way the snapshot is the screen at `at`, a state the
  // stream really passed through; the checks only decide whether it is still the newest.
  const bool current =
      at == e.ring.committed() || at == Cursor{e.usage->parsed.load(std::memory_order_relaxed)};
  if (at < not_before || !current || at < e.ring.oldest()) return std::nullopt;
  answers_.fetch_add(1, std::memory_order_relaxed);
  return Answer{e.taken, e.epoch};
}

std::size_t SnapshotLane::held_bytes(const std::string& actor) const {
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find(actor);
  return it == entries_.end() || !it->second.taken ? 0 : it->second.taken->snapshot.bytes.size();
}

}  // namespace backscroll::engine
