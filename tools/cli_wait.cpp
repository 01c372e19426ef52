#include "tools/cli_wait.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "engine/term/plain_lines.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_pattern.hpp"
#include "tools/cli_ring_follower.hpp"

namespace backscroll::cli {
namespace {

using Clock = std::chrono::steady_clock;

// How often the agent status and the quiet time are looked at while no byte arrives.
constexpr std::chrono::milliseconds kPollSlice{100};

// Reads output from a cursor on as plain lines and looks for the pattern in each, and in the
// line still being written.
class OutputMatcher {
 public:
  OutputMatcher(std::unique_ptr<Pattern> pattern, Cursor from)
      : pattern_(std::move(pattern)), lines_(from) {}

  // Feeds `bytes`; the first matching line's text, if any.
  std::optional<std::string> feed(std::string_view bytes) {
    lines_.feed(bytes);
    for (const term::PlainLine& line : lines_.lines()) {
      const std::string_view text = lines_.text_of(line);
      if (pattern_->find(text)) return std::string(text);
    }
    lines_.clear();
    const std::string_view partial = lines_.unfinished();
    if (!partial.empty() && pattern_->find(partial)) return std::string(partial);
    return std::nullopt;
  }

 private:
  std::unique_ptr<Pattern> pattern_;
  term::PlainLines lines_;
};

std::string seconds_text(std::chrono::milliseconds d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(d.count()) / 1000.0);
  return text;
}

}  // namespace

int run_wait(const EngineTarget& engine, const WaitArgs& args) {
  std::unique_ptr<Pattern> pattern;
  if (args.match) {
    auto compiled = Pattern::compile(*args.match, args.ignore_case);
    if (!compiled) return report_usage("wait: --match: " + compiled.error().message);
    pattern = std::move(*compiled);
  }
  auto reader = open_ring(engine.places, args.actor);
  if (!reader) return report(reader.error());

  const Clock::time_point started = Clock::now();
  SessionWatch session;
  const auto already = session.ended(*reader);  // also picks the session: the newest now
  if (already && args.exit) return already->status;

  // Output from now on (bytes already there are what the script saw before it asked), or from
  // the cursor the script took before it acted.
  const Cursor committed = reader->committed();
  Cursor from = args.from.value_or(committed);
  if (from > committed) {
    return report(Error{Errc::cursor_in_future,
                        "cursor " + std::to_string(value(from)) + " is past the committed cursor " +
                            std::to_string(value(committed)),
                        value(committed)});
  }
  if (from < reader->oldest()) {
    warn("wait: output from cursor " + std::to_string(value(from)) + " is gone; looking from " +
         std::to_string(value(reader->oldest())));
    from = reader->oldest();
  }
  std::optional<OutputMatcher> matcher;
  if (pattern) matcher.emplace(std::move(pattern), from);
  RingFollower follower(*reader, from);
  Cursor last_seen = from;
  Clock::time_point last_output = started;

  for (;;) {
    // Taken before looking, so a wake from here on ends the wait below.
    const std::uint32_t wake_seen = reader->wake_seen();
    if (matcher) {
      std::optional<std::string> found;
      auto pumped = follower.pump_to([&](std::span<const std::byte> bytes) -> Result<void> {
        if (!found) {
          found = matcher->feed(
              std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        }
        return {};
      });
      if (!pumped) return report(pumped.error());
      if (found) {
        return write_all(STDOUT_FILENO, *found + "\n") ? kExitOk : kExitError;
      }
    }
    const Cursor now_committed = reader->committed();
    const Clock::time_point now = Clock::now();
    if (now_committed != last_seen) {
      last_seen = now_committed;
      last_output = now;
    }
    if (const auto end = session.ended(*reader)) {
      // With --match, only once every byte of the session was looked at.
      if (!matcher || follower.cursor() >= end->end) {
        if (args.exit) return end->status;
        return report(Error{Errc::not_running,
                            args.actor + "'s program ended (status " + std::to_string(end->status) +
                                ") before the wait was over (add --exit to wait for that)",
                            std::nullopt});
      }
    }
    if (args.idle) {
      const auto output = reader->output();
      const bool agent_known = output && output->agent_bytes > 0;
      if (agent_known && output->agent_status == shm::OutputAgentStatus::idle) return kExitOk;
      if (!agent_known && now - last_output >= args.quiet) return kExitOk;
    }
    if (args.timeout && now - started >= *args.timeout) {
      (void)write_all(STDERR_FILENO, "backscroll: timed_out: " + args.actor + ": not over after " +
                                         seconds_text(*args.timeout) + "\n");
      return kExitTimedOut;
    }
    auto slice = kPollSlice;
    if (args.timeout) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*args.timeout - (now - started));
      slice = std::clamp(left, std::chrono::milliseconds{1}, kPollSlice);
    }
    // Without --match nothing reads the bytes: sleep until more than what was seen is
    // committed, or the slice ends (the quiet time and the agent status are looked at then).
    switch (reader->wait(matcher ? follower.cursor() : now_committed, slice, wake_seen)) {
      case shm::WaitResult::ready:
      case shm::WaitResult::woken:
      case shm::WaitResult::timeout:
        if (!ring_owner_alive(*reader)) return report(ring_owner_gone(*reader, args.actor));
        break;
      case shm::WaitResult::closed:
        return report(
            Error{Errc::no_such_actor, "actor '" + args.actor + "' was deleted", std::nullopt});
    }
  }
}

}  // namespace backscroll::cli
