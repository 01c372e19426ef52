#include "shm/control_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace backscroll::control {

Result<ControlClient> ControlClient::connect(const Places& places) {
  const std::string path = places.socket_path().string();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return fail(Errc::bad_request, "socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail_errno("socket", errno);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == ENOENT || err == ECONNREFUSED) {
      return fail(Errc::engine_unavailable, "no engine listens on " + path);
    }
    return fail_errno("connect " + path, err);
  }
  // The engine is the root of every reader's trust (it announces which rings are real), so the
  // process serving the socket must be this user's: another user who got a socket into this
  // path (a runtime folder under /tmp made before ours) is refused before a byte is exchanged.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) {
    const int err = errno;
    ::close(fd);
    return fail_errno("read the credentials of " + path, err);
  }
  if (peer.uid != ::geteuid()) {
    ::close(fd);
    return fail(Errc::permission_denied, "the process serving " + path + " runs as uid " +
                                             std::to_string(peer.uid) + ", not as this user (uid " +
                                             std::to_string(::geteuid()) + "); not used");
  }
  return ControlClient(fd, peer.pid);
}

ControlClient::ControlClient(ControlClient&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      peer_pid_(other.peer_pid_),
      next_id_(other.next_id_),
      decoder_(std::move(other.decoder_)),
      events_(std::move(other.events_)) {}

ControlClient& ControlClient::operator=(ControlClient&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    peer_pid_ = other.peer_pid_;
    next_id_ = other.next_id_;
    decoder_ = std::move(other.decoder_);
    events_ = std::move(other.events_);
  }
  return *this;
}

ControlClient::~ControlClient() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::optional<Frame>> ControlClient::read_frame(
    std::optional<std::chrono::milliseconds> timeout) {
  for (;;) {
    auto frame = decoder_.next();
    if (!frame || *frame) return frame;
    if (timeout) {
      pollfd p{fd_, POLLIN, 0};
      const int rc = ::poll(&p, 1, static_cast<int>(timeout->count()));
      if (rc == 0) return std::nullopt;
      if (rc < 0) {
        if (errno == EINTR) continue;  // a signal: poll again rather than block in recv
        return fail_errno("poll control socket", errno);
      }
    }
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n == 0) return fail(Errc::engine_unavailable, "the engine closed the connection");
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail_errno("read control socket", errno);
    }
    decoder_.feed({buf, static_cast<std::size_t>(n)});
  }
}

Result<Frame> ControlClient::call(std::string_view op, Json fields, std::string_view payload) {
  const std::uint64_t id = next_id_++;
  fields["op"] = op;
  fields["id"] = id;
  const std::string bytes = encode_frame(std::move(fields), payload);
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE || errno == ECONNRESET) {
        return fail(Errc::engine_unavailable, "the engine closed the connection");
      }
      return fail_errno("write control socket", errno);
    }
    sent += static_cast<std::size_t>(n);
  }
  for (;;) {
    auto next = read_frame(std::nullopt);
    if (!next) return tl::unexpected(next.error());
    Frame& frame = **next;  // without a timeout, read_frame returns a frame or an error
    if (frame.header.contains("event")) {
      events_.push_back(std::move(frame));
      continue;
    }
    const auto rid = frame.header.find("id");
    if (rid != frame.header.end() && rid->is_number_unsigned() && rid->get<std::uint64_t>() != id) {
      continue;  // a late answer to an abandoned request
    }
    if (auto error = error_from_response(frame.header)) return tl::unexpected(*error);
    return std::move(frame);
  }
}

Result<std::optional<Frame>> ControlClient::next_event(std::chrono::milliseconds timeout) {
  if (!events_.empty()) {
    Frame f = std::move(events_.front());
    events_.pop_front();
    return f;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // At least one look, even with no time left: a frame may wait in the decoder or the socket.
    const auto left = std::max(std::chrono::milliseconds(0),
                               std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()));
    auto frame = read_frame(left);
    if (!frame || !*frame) return frame;
    if ((*frame)->header.contains("event")) return frame;
  }
}

}  // namespace backscroll::control
