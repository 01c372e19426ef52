#include "tools/cli_reader_announcer.hpp"

#include <sys/socket.h>
#include <sys/time.h>

#include "tools/cli_engine.hpp"

namespace backscroll::cli {

void ReaderAnnouncer::report(Cursor cursor) {
  const auto now = std::chrono::steady_clock::now();
  if (last_ && now - *last_ < kInterval) return;
  last_ = now;
  if (!client_) {
    auto connected = connect_live(places_);
    if (!connected) return;  // no engine now: the ring is read all the same
    // A stopped or stuck engine costs the reader at most this per report, never its reading.
    const timeval limit{0, static_cast<suseconds_t>(kReplyTimeout.count() * 1000)};
    ::setsockopt(connected->fd(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ::setsockopt(connected->fd(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    client_.emplace(std::move(*connected));
  }
  auto answer =
      client_->call("reader", {{"actor", actor_}, {"name", name_}, {"cursor", value(cursor)}});
  // A broken or timed-out connection is opened again next time (a late answer must not be
  // read as the next one's); a refusal (a deleted actor) is left alone.
  if (!answer && answer.error().code != Errc::no_such_actor &&
      answer.error().code != Errc::cursor_in_future)
    client_.reset();
}

}  // namespace backscroll::cli
