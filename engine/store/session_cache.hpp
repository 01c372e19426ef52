// SessionCache: the completed-session cache (docs/transcripts.md, "Stopped actors"). The tail of
// each stopped actor's stream, kept in memory after its session is sealed, so `history` answers the
// end of a finished run without files, and a stopped actor's big ring can be released. At most
// `per_actor` bytes per actor and `total` bytes in all; when a new tail does not fit, the least
// recently used actors' tails go first. Io thread only.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shm/cursor.hpp"

namespace backscroll::store {

class SessionCache {
 public:
  static constexpr std::size_t kPerActor = 256 * 1024;
  static constexpr std::size_t kTotal = 8 * 1024 * 1024;

  explicit SessionCache(std::size_t per_actor = kPerActor, std::size_t total = kTotal);

  // Keeps `bytes`, the stream of `actor` from cursor `start` on, as its tail: appended to what
  // the actor has when that ends exactly at `start`, else replacing it; only the last per_actor
  // bytes stay. The actor becomes the most recently used; others are evicted to fit `total`.
  void put(const std::string& actor, Cursor start, std::string_view bytes);
  // Bytes [from, min(to, end)) of the actor's tail, at most max_bytes; nullopt unless `from` is
  // inside it. A hit makes the actor the most recently used.
  std::optional<std::string> get(const std::string& actor, Cursor from, Cursor to,
                                 std::size_t max_bytes);
  // The cursors the actor's tail covers, [start, end); nullopt when none (no use recorded).
  std::optional<std::pair<Cursor, Cursor>> range(const std::string& actor) const;
  void erase(const std::string& actor);

  std::size_t bytes() const noexcept { return bytes_; }
  // Actors from least to most recently used (tests, status).
  std::vector<std::string> order() const;

 private:
  struct Entry {
    std::string actor;
    Cursor start{0};
    std::string bytes;
  };
  void touch(std::list<Entry>::iterator it);

  std::size_t per_actor_;
  std::size_t total_;
  std::size_t bytes_ = 0;
  std::list<Entry> entries_;  // most recently used first
  std::map<std::string, std::list<Entry>::iterator, std::less<>> index_;
};

}  // namespace backscroll::store
