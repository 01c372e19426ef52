#include "shm/error.hpp"

#include <array>
#include <cstring>
#include <utility>

namespace backscroll {
namespace {

constexpr std::array<std::pair<Errc, std::string_view>, 25> kNames{{
    {Errc::bad_request, "bad_request"},
    {Errc::unknown_op, "unknown_op"},
    {Errc::no_such_actor, "no_such_actor"},
    {Errc::actor_exists, "actor_exists"},
    {Errc::bad_actor_name, "bad_actor_name"},
    {Errc::not_running, "not_running"},
    {Errc::cursor_expired, "cursor_expired"},
    {Errc::cursor_in_future, "cursor_in_future"},
    {Errc::data_lost, "data_lost"},
    {Errc::wrong_epoch, "wrong_epoch"},
    {Errc::stale_controller, "stale_controller"},
    {Errc::too_large, "too_large"},
    {Errc::spawn_failed, "spawn_failed"},
    {Errc::permission_denied, "permission_denied"},
    {Errc::bad_segment, "bad_segment"},
    {Errc::stale_segment, "stale_segment"},
    {Errc::engine_unavailable, "engine_unavailable"},
    {Errc::already_running, "already_running"},
    {Errc::shutting_down, "shutting_down"},
    {Errc::io_error, "io_error"},
    {Errc::out_of_memory, "out_of_memory"},
    {Errc::over_budget, "over_budget"},
    {Errc::timed_out, "timed_out"},
    {Errc::cancelled, "cancelled"},
    {Errc::internal, "internal"},
}};

}  // namespace

std::string_view to_string(Errc code) noexcept {
  for (const auto& [c, name] : kNames) {
    if (c == code) return name;
  }
  return "internal";
}

std::optional<Errc> errc_from_string(std::string_view name) noexcept {
  for (const auto& [c, n] : kNames) {
    if (n == name) return c;
  }
  return std::nullopt;
}

tl::unexpected<Error> fail_data_lost(std::uint64_t from, std::uint64_t to, std::string_view why) {
  std::string message = "cursors " + std::to_string(from) + ".." + std::to_string(to) + " are lost";
  if (!why.empty()) {
    message += " (";
    message += why;
    message += ")";
  }
  return tl::unexpected<Error>(Error{Errc::data_lost, std::move(message), to, from});
}

tl::unexpected<Error> fail_io(std::string_view context, int err) {
  std::string message(context);
  message += ": ";
  message += std::strerror(err);
  return tl::unexpected<Error>(Error{Errc::io_error, std::move(message), std::nullopt});
}

std::string Error::describe() const {
  std::string out(to_string(code));
  if (!message.empty()) {
    out += ": ";
    out += message;
  }
  return out;
}

tl::unexpected<Error> fail_errno(std::string_view context, int err) {
  tl::unexpected<Error> e = fail_io(context, err);
  if (err == EACCES || err == EPERM) e.value().code = Errc::permission_denied;
  return e;
}

}  // namespace backscroll
