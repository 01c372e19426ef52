// RuntimeDir: the engine's claim on its runtime directory (DESIGN section 8): a folder owned by
// this user with mode 0700 (a symlink, a foreign owner or looser permissions make the engine
// refuse to start), an exclusive lock that lets one engine per folder run, then the cleanup of
// what a crashed predecessor left (its socket and its ring segments) and a fresh listening
// socket with mode 0600. Holding the lock is what makes the cleanup safe: the segments and
// socket of a live engine are never touched, because a live engine holds the lock.
#pragma once

#include "shm/error.hpp"
#include "shm/places.hpp"

namespace backscroll::engine {

class RuntimeDir {
 public:
  static Result<RuntimeDir> claim(const Places& places);
  RuntimeDir(RuntimeDir&& other) noexcept;
  RuntimeDir& operator=(RuntimeDir&&) = delete;
  ~RuntimeDir();  // unlinks the socket, releases the lock

  // Bound, listening, non-blocking, close-on-exec; the caller owns it.
  Result<int> listen();
  // How many stale segments the claim removed.
  int stale_segments_removed() const noexcept { return stale_segments_; }

 private:
  RuntimeDir(Places places, int lock_fd) : places_(std::move(places)), lock_fd_(lock_fd) {}
  Places places_;
  int lock_fd_ = -1;
  int stale_segments_ = 0;
  bool listening_ = false;
};

}  // namespace backscroll::engine
