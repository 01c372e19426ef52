// The error vocabulary shared by the engine, the reader library and every tool.
// Each Errc has a stable snake_case name: it is the `code` of a control-socket error and the
// one-line message prefix of the CLI. Names never change once released (docs/protocol.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace backscroll {

enum class Errc : std::uint8_t {
  bad_request,        // malformed frame, JSON, field or argument
  unknown_op,         // the op name is not one the engine knows
  no_such_actor,      // the actor name is not registered
  actor_exists,       // spawn of a name that is already registered
  bad_actor_name,     // name outside [A-Za-z0-9][A-Za-z0-9._-]{0,63}
  not_running,        // the actor has no live session (input, resize)
  cursor_expired,     // the cursor is older than the oldest retained byte; `cursor` = that oldest
  cursor_in_future,   // the cursor is past the last committed byte; `cursor` = committed
  data_lost,          // the bytes at the cursor were damaged or lost; the gap is [`from`, `cursor`)
  wrong_epoch,        // the cursor belongs to another epoch (an earlier engine's cursor space)
  stale_controller,   // resize from an attachment that is no longer the controller
  too_large,          // frame, payload, size or queue over its bound
  spawn_failed,       // the program could not be started (errno in the message)
  permission_denied,  // peer credentials or file ownership refused
  bad_segment,        // a ring segment whose header does not validate
  stale_segment,      // a ring segment left by an engine that is no longer running
  engine_unavailable,  // no engine answers on the control socket
  already_running,     // a second engine for the same runtime directory
  shutting_down,       // the engine is stopping and takes no new work
  io_error,            // an OS call failed (errno in the message)
  out_of_memory,       // a spawn would bring the engine near its memory cap (RLIMIT_AS, cgroup)
  over_budget,         // a spawn would take the actors' reserved memory past memory_budget
  timed_out,           // a send --when-idle found the actor never waiting for input in time
  cancelled,           // a queued send was cancelled (cancel_send), or its actor's program ended
  internal,            // a bug: the engine logs it with context
};

std::string_view to_string(Errc code) noexcept;
std::optional<Errc> errc_from_string(std::string_view name) noexcept;

struct Error {
  Errc code = Errc::internal;
  std::string message;
  // For cursor_expired: the oldest retained cursor. For cursor_in_future: the committed cursor.
  // For data_lost: the first cursor after the gap (where reading can go on).
  std::optional<std::uint64_t> cursor;
  // For data_lost: the first cursor of the gap.
  std::optional<std::uint64_t> from = std::nullopt;

  // "cursor_expired: <message>", the form the CLI prints.
  std::string describe() const;
};

template <class T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> fail(Errc code, std::string message,
                                  std::optional<std::uint64_t> cursor = std::nullopt) {
  return tl::unexpected<Error>(Error{code, std::move(message), cursor, std::nullopt});
}

// data_lost for the gap [from, to).
tl::unexpected<Error> fail_data_lost(std::uint64_t from, std::uint64_t to, std::string_view why);

// An OS failure with errno text and the context that explains it ("open segment bs-1: ...").
tl::unexpected<Error> fail_errno(std::string_view context, int err);
// The same, always io_error: durable storage (transcripts, archives) reports every failure of
// its files as one kind, a permission error included.
tl::unexpected<Error> fail_io(std::string_view context, int err);

}  // namespace backscroll
