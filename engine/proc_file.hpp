// read_proc_file: a /proc file (stat, comm, cmdline, environ) whole, up to `limit` bytes; "" when
// it cannot be read (the process is gone, or another user's). Files under /proc report no size,
// so they are read until EOF; a read(2) loop, since a stream throws when the process exits
// meanwhile. Used by process_tree.cpp and foreground.cpp.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace backscroll::engine {

inline std::string read_proc_file(const std::string& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  ssize_t n = 0;
  while (out.size() < limit && (n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace backscroll::engine
