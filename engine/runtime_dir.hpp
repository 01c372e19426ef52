// RuntimeDir: the engine's claim on its runtime directory (docs/settings.md, "Places"): a folder
// owned by this user with mode 0700 (a symlink, a foreign owner or looser permissions make the
// engine refuse to start), an exclusive lock that lets one engine per folder run, then a fresh
// listening socket with mode 0600 in place of whatever socket a crashed predecessor left.
// Holding the lock is what makes that safe: a live engine holds it. (Rings leave nothing to
// clean up: they are memfds, gone with the last process that maps them.)
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

 private:
  RuntimeDir(Places places, int lock_fd) : places_(std::move(places)), lock_fd_(lock_fd) {}
  Places places_;
  int lock_fd_ = -1;
  bool listening_ = false;
};

}  // namespace backscroll::engine
