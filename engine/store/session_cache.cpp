#include "engine/store/session_cache.hpp"

#include <algorithm>

namespace backscroll::store {

SessionCache::SessionCache(std::size_t per_actor, std::size_t total)
    : per_actor_(std::min(per_actor, total)), total_(total) {}

void SessionCache::touch(std::list<Entry>::iterator it) {
  entries_.splice(entries_.begin(), entries_, it);
}

void SessionCache::put(const std::string& actor, Cursor start, std::string_view bytes) {
  auto found = index_.find(actor);
  if (found == index_.end()) {
    entries_.push_front(Entry{actor, start, {}});
    found = index_.emplace(actor, entries_.begin()).first;
  }
  Entry& e = *found->second;
  bytes_ -= e.bytes.size();
  if (e.start + e.bytes.size() != start) {  // not a continuation: a new tail
    e.bytes.clear();
    e.start = start;
  }
  e.bytes.append(bytes);
  if (e.bytes.size() > per_actor_) {
    const std::size_t drop = e.bytes.size() - per_actor_;
    e.bytes.erase(0, drop);
    e.start = e.start + drop;
  }
  e.bytes.shrink_to_fit();
  bytes_ += e.bytes.size();
  touch(found->second);
  // Invariant: bytes_ <= total_ after every put; the newest tail is never the one evicted,
  // since per_actor_ <= total_.
  while (bytes_ > total_) {
    const Entry& oldest = entries_.back();
    bytes_ -= oldest.bytes.size();
    index_.erase(oldest.actor);
    entries_.pop_back();
  }
}

std::optional<std::string> SessionCache::get(const std::string& actor, Cursor from, Cursor to,
                                             std::size_t max_bytes) {
  const auto found = index_.find(actor);
  if (found == index_.end()) return std::nullopt;
  const Entry& e = *found->second;
  const Cursor end = e.start + e.bytes.size();
  if (from < e.start || from >= end) return std::nullopt;
  touch(found->second);
  const std::size_t offset = static_cast<std::size_t>(from - e.start);
  const std::size_t n =
      static_cast<std::size_t>(std::min<std::uint64_t>({min(to, end) - from, max_bytes}));
  return e.bytes.substr(offset, n);
}

std::optional<std::pair<Cursor, Cursor>> SessionCache::range(const std::string& actor) const {
  const auto found = index_.find(actor);
  if (found == index_.end()) return std::nullopt;
  const Entry& e = *found->second;
  return std::pair{e.start, e.start + e.bytes.size()};
}

void SessionCache::erase(const std::string& actor) {
  const auto found = index_.find(actor);
  if (found == index_.end()) return;
  bytes_ -= found->second->bytes.size();
  entries_.erase(found->second);
  index_.erase(found);
}

std::vector<std::string> SessionCache::order() const {
  std::vector<std::string> out;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) out.push_back(it->actor);
  return out;
}

}  // namespace backscroll::store
