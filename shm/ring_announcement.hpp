// RingAnnouncement: what an engine tells a reader about one actor's ring over its control socket
// (the `header_fd`, `data_fd`, `nonce` and `capacity` fields of a `status` answer,
// docs/protocol.md). The socket is the root of trust: it lives in a 0700 folder and the client
// checks the engine's peer credentials, which also name the engine's pid. A reader maps a ring
// only when it matches the announcement (RingReader::open_announced); a ring nobody announced is
// never read, whoever made it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace backscroll::shm {

struct RingAnnouncement {
  std::string actor;
  pid_t engine_pid = 0;  // the process holding the descriptors (SO_PEERCRED of the socket)
  int header_fd = -1;    // its descriptors of the two sealed memfds: /proc/<pid>/fd/<fd>
  int data_fd = -1;
  std::string nonce;           // the header's nonce, 2 x kRingNonceBytes lowercase hex digits
  std::uint64_t capacity = 0;  // data bytes: the data segment's size
};

}  // namespace backscroll::shm
