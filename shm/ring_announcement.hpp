// RingAnnouncement: what an engine tells a reader about one actor's ring over its control socket
// (the `segment`, `nonce` and `capacity` fields of a `status` answer, docs/protocol.md). The
// socket is the root of trust: it lives in a 0700 folder and the client checks the engine's peer
// credentials. A reader maps a segment only when it matches the announcement
// (RingReader::open_announced); a ring nobody announced is never read, whoever made it.
#pragma once

#include <cstdint>
#include <string>

namespace backscroll::shm {

struct RingAnnouncement {
  std::string actor;
  std::string segment;  // the shared-memory name: /dev/shm/<segment>
  std::string nonce;    // the header's nonce, 2 x kRingNonceBytes lowercase hex digits
  std::uint64_t capacity = 0;  // data bytes; the segment is kHeaderBytes + capacity long
};

}  // namespace backscroll::shm
