#include "tools/cli_ring_follower.hpp"

#include <sys/types.h>

#include "shm/process_identity.hpp"
#include "tools/cli_output.hpp"

namespace backscroll::cli {

Result<shm::RingReader> open_ring(const Places& places, std::string_view actor) {
  auto reader = shm::RingReader::open(places, actor);
  if (reader) return reader;
  Error e = reader.error();
  if (e.code == Errc::no_such_actor) {
    e.message = "no actor named '" + std::string(actor) + "' in the engine at " +
                places.runtime_dir.string();
  } else if (e.code == Errc::stale_segment) {
    e.message = "the ring of '" + std::string(actor) + "' belongs to an engine that is gone";
  }
  return tl::unexpected(std::move(e));
}

bool ring_owner_alive(const shm::RingReader& reader) {
  const ProcessIdentity owner{static_cast<pid_t>(reader.header().engine_pid),
                              reader.header().engine_start_ticks};
  return owner.alive();
}

Error ring_owner_gone(const shm::RingReader& reader, std::string_view actor) {
  return Error{Errc::engine_unavailable,
               "the engine (pid " + std::to_string(reader.header().engine_pid) +
                   ") is gone; the ring of '" + std::string(actor) + "' will not grow",
               std::nullopt};
}

RingFollower::RingFollower(const shm::RingReader& reader, Cursor from, std::size_t buffer_bytes)
    : reader_(&reader), cursor_(from), buffer_(buffer_bytes) {}

Result<RingFollower::Progress> RingFollower::pump(int fd, std::optional<Cursor> until,
                                                  const Observer& observer) {
  return pump_to(
      [&](std::span<const std::byte> bytes) -> Result<void> {
        if (auto w = write_all(fd, bytes); !w) return tl::unexpected(w.error());
        if (observer) observer(bytes);
        return {};
      },
      until);
}

Result<RingFollower::Progress> RingFollower::pump_to(const Sink& sink,
                                                     std::optional<Cursor> until) {
  Progress progress;
  Cursor target = reader_->committed();
  if (until) target = min(target, *until);
  while (cursor_ < target) {
    const std::uint64_t want = std::min<std::uint64_t>(target - cursor_, buffer_.size());
    auto end = reader_->copy(cursor_, std::span(buffer_.data(), static_cast<std::size_t>(want)));
    if (!end) {
      const Error& e = end.error();
      if (e.code == Errc::cursor_expired && e.cursor && Cursor{*e.cursor} > cursor_) {
        // Lapped: the bytes are gone from the ring. Resume at the oldest retained cursor.
        const Cursor oldest{*e.cursor};
        progress.skipped += oldest - cursor_;
        cursor_ = oldest;
        continue;
      }
      return tl::unexpected(e);
    }
    const std::span<const std::byte> bytes(buffer_.data(),
                                           static_cast<std::size_t>(*end - cursor_));
    if (auto w = sink(bytes); !w) return tl::unexpected(w.error());
    progress.written += bytes.size();
    cursor_ = *end;
  }
  return progress;
}

std::optional<SessionWatch::End> SessionWatch::ended(const shm::RingReader& reader) {
  const auto meta = reader.meta();
  if (!meta) return std::nullopt;
  if (id_ == 0) id_ = meta->session;
  if (id_ == 0) return std::nullopt;  // no session yet
  const auto record = reader.session(id_);
  if (!record) {
    if (meta->session > id_) return End{};  // its slot was reused: long sealed
    return std::nullopt;
  }
  if ((record->flags & shm::kSessionSealed) == 0) return std::nullopt;
  const int status = record->term_signal > 0  ? 128 + record->term_signal
                     : record->exit_code >= 0 ? record->exit_code
                                              : 0;
  return End{Cursor{record->end}, status};
}

}  // namespace backscroll::cli
