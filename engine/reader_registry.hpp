// ReaderRegistry: the shm readers that announced themselves (docs/protocol.md, `reader`), so
// that status and `backscroll top` show who reads each actor and how far behind it is.
//
// Announcing is optional and goes over the control socket: a reader names itself and reports
// the cursor it has read up to, as often as it likes (the CLI's readers: at most once a
// second), never per byte. Nothing here touches a ring: the engine only compares the reported
// cursor with its own. An entry lives as long as the connection that made it (or its actor).
// Bounded: kMaxPerConnection entries per connection, kMaxEntries in all. Io thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/control_server.hpp"
#include "shm/cursor.hpp"
#include "shm/error.hpp"

namespace backscroll::engine {

struct AnnouncedReader {
  std::string actor;
  std::string name;              // what the reader calls itself ("tail", "phone-bridge")
  pid_t pid = 0;                 // the announcing connection's process (SO_PEERCRED)
  Cursor cursor{0};              // read up to here, as last reported
  std::int64_t reported_ms = 0;  // wall clock of the last report
  std::int64_t since_ms = 0;     // wall clock of the first
};

class ReaderRegistry {
 public:
  static constexpr std::size_t kMaxPerConnection = 64;
  static constexpr std::size_t kMaxEntries = 4096;
  static constexpr std::size_t kMaxNameBytes = 64;

  // Records (or updates: the same connection, actor and name) a reader's report.
  // bad_request for an empty or overlong name or one with control characters; too_large past
  // the bounds.
  Result<void> report(ConnectionId connection, const AnnouncedReader& reader);
  // The connection ended: its readers go.
  void drop_connection(ConnectionId connection);
  // The actor was deleted: its readers go (a reader of a new actor of that name announces again).
  void drop_actor(const std::string& actor);
  // The readers of `actor`, in the order they first announced.
  std::vector<AnnouncedReader> of_actor(const std::string& actor) const;

 private:
  struct Key {
    ConnectionId connection;
    std::string actor;
    std::string name;
    auto operator<=>(const Key&) const = default;
  };
  std::map<Key, AnnouncedReader> entries_;
};

}  // namespace backscroll::engine
