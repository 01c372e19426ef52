// Attachments: who is attached to which actor, and which controller owns each actor's size
// (docs/protocol.md, "Size ownership"; docs/design.md, "Attachments and size"). The table and
// its rules only: the engine resizes PTYs and sends the events its answers describe. Io thread.
//
// Invariants: ids are never reused; order_[actor] lists the actor's controller attachments in
// the order they last took control, the owner last; it is never an empty vector and holds no id
// that by_id_ does not.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/control_server.hpp"
#include "engine/pty_process.hpp"
#include "shm/error.hpp"

namespace backscroll::engine {

struct Attachment {
  std::string actor;
  ConnectionId connection = 0;
  bool controller = false;
  // Controllers only: the size it asked for (its attach's, else the actor's then; its own
  // resizes and take_control update it). The actor follows its owner's.
  WindowSize size{};
  std::int64_t attached_ms = 0;  // wall clock when it attached (status shows its age)
};

class Attachments {
 public:
  // Registers attachment `id` (fresh, never used before). A controller does not own the actor
  // until take_control(): the caller decides when, to send its event.
  void add(std::uint64_t id, Attachment attachment);
  const Attachment* find(std::uint64_t id) const;

  // `id` when it is one of `connection`'s attachments, else bad_request.
  Result<std::uint64_t> own(ConnectionId connection, std::uint64_t id) const;

  // The actor's owner: its controller attachment that took control last.
  std::optional<std::uint64_t> owner_of(const std::string& actor) const;
  // The size the actor's owner asked for, when it has one.
  std::optional<WindowSize> owner_size(const std::string& actor) const;
  // Controller `id` becomes its actor's owner. Returns the owner it replaced, if any.
  std::optional<std::uint64_t> take_control(std::uint64_t id);
  // Records a new size for controller `id` (the owner's resize, take_control with a size).
  void set_size(std::uint64_t id, WindowSize size);
  // May `attachment` (absent: a client without one) resize `actor`? Only its owner may, or
  // anyone while it has no controller: stale_controller otherwise, bad_request for a viewer.
  Result<void> check_resize(const std::string& actor,
                            std::optional<std::uint64_t> attachment) const;

  struct Ended {
    std::string actor;
    // Set when the ended attachment owned the actor and another controller takes over.
    std::optional<std::uint64_t> new_owner;
  };
  // Ends attachment `id` (detach, its connection closed); nothing when unknown.
  std::optional<Ended> end(std::uint64_t id);
  // Every attachment `connection` holds, in id order.
  std::vector<std::uint64_t> of_connection(ConnectionId connection) const;
  // `actor`'s attachments, in id order (the order they attached).
  std::vector<std::pair<std::uint64_t, const Attachment*>> of_actor(const std::string& actor) const;
  // The connections holding an attachment to `actor`, each once, in order.
  std::vector<ConnectionId> connections_of(const std::string& actor) const;
  // Forgets every attachment to `actor` (it was deleted); no hand-back.
  void drop_actor(const std::string& actor);

 private:
  std::map<std::uint64_t, Attachment> by_id_;
  std::map<std::string, std::vector<std::uint64_t>> order_;
};

}  // namespace backscroll::engine
