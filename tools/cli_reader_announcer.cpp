#include "tools/cli_reader_announcer.hpp"

#include "tools/cli_engine.hpp"

namespace backscroll::cli {

void ReaderAnnouncer::report(Cursor cursor) {
  const auto now = std::chrono::steady_clock::now();
  if (last_ && now - *last_ < kInterval) return;
  last_ = now;
  if (!client_) {
    auto connected = connect_live(places_);
    if (!connected) return;  // no engine now: the ring is read all the same
    client_.emplace(std::move(*connected));
  }
  auto answer =
      client_->call("reader", {{"actor", actor_}, {"name", name_}, {"cursor", value(cursor)}});
  // A broken connection is opened again next time; a refusal (a deleted actor) is left alone.
  if (!answer && answer.error().code != Errc::no_such_actor &&
      answer.error().code != Errc::cursor_in_future)
    client_.reset();
}

}  // namespace backscroll::cli
