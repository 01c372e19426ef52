#include "tools/cli_attach.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "shm/ring_reader.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_raw_terminal.hpp"
#include "tools/cli_ring_follower.hpp"
#include "tools/cli_terminal_modes.hpp"

namespace backscroll::cli {
namespace {

using control::Json;

constexpr std::chrono::milliseconds kWaitSlice{100};   // how often the output thread checks stop
constexpr std::uint64_t kPumpSliceBytes = 256 * 1024;  // replay in slices: detach stays prompt
constexpr std::size_t kInputReadBytes = 64 * 1024;
constexpr std::chrono::milliseconds kStopTimeout{1000};  // for the output side to finish

// Signals the attach loop handles, through a self-pipe (the handler only writes one byte).
constexpr int kHandledSignals[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT};

int g_signal_write_fd = -1;

extern "C" void on_signal(int sig) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(sig);
  (void)!::write(g_signal_write_fd, &byte, 1);  // non-blocking: a full pipe loses duplicates only
  errno = saved;
}

// Installs the self-pipe handlers (and ignores SIGPIPE: stdout may be a pipe, and dying of it
// would leave the terminal raw); puts the previous dispositions back on destruction.
class SignalPipe {
 public:
  SignalPipe() {
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
      fds_[0] = fds_[1] = -1;
      return;
    }
    g_signal_write_fd = fds_[1];
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    ::sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < std::size(kHandledSignals); ++i) {
      ::sigaction(kHandledSignals[i], &sa, &previous_[i]);
    }
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &previous_pipe_);
  }
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;
  ~SignalPipe() {
    if (fds_[0] < 0) return;
    for (std::size_t i = 0; i < std::size(kHandledSignals); ++i) {
      ::sigaction(kHandledSignals[i], &previous_[i], nullptr);
    }
    ::sigaction(SIGPIPE, &previous_pipe_, nullptr);
    g_signal_write_fd = -1;
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  bool ok() const { return fds_[0] >= 0; }
  int read_fd() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
  struct sigaction previous_[std::size(kHandledSignals)]{};
  struct sigaction previous_pipe_ {};
};

enum class End { detached, exited, deleted, signal, failed };

struct Outcome {
  End end = End::failed;
  Error error;                                // failed
  int signal = 0;                             // signal
  std::optional<shm::SessionRecord> session;  // exited
};

// The output side: follows the ring from `start` until told to stop or the session ends.
// Writes its outcome, then one byte to `done_fd` so the input side wakes.
void output_loop(const shm::RingReader& reader, Cursor start, const std::atomic<bool>& stop,
                 TerminalModes& modes, Outcome& outcome, bool& finished, int done_fd) {
  // Signals belong to the input side's self-pipe; keep this thread's futex waits quiet.
  sigset_t block;
  ::sigemptyset(&block);
  for (const int sig : kHandledSignals) ::sigaddset(&block, sig);
  ::pthread_sigmask(SIG_BLOCK, &block, nullptr);

  RingFollower follower(reader, start);
  const auto observe = [&modes](std::span<const std::byte> bytes) { modes.observe(bytes); };
  std::uint64_t watched = 0;
  auto finish = [&](Outcome o) {
    outcome = std::move(o);
    finished = true;
  };
  while (!stop.load(std::memory_order_relaxed)) {
    auto progress = follower.pump(STDOUT_FILENO, follower.cursor() + kPumpSliceBytes, observe);
    if (!progress) {
      finish({End::failed, progress.error(), 0, std::nullopt});
      break;
    }
    if (progress->written + progress->skipped >= kPumpSliceBytes) continue;  // more to replay

    const auto meta = reader.meta();
    if (meta && watched == 0) watched = meta->session;
    if (meta && watched != 0) {
      const auto record = reader.session(watched);
      const bool sealed = record && (record->flags & shm::kSessionSealed) != 0;
      if (sealed && follower.cursor() >= Cursor{record->end}) {
        if (meta->session > watched) {  // restarted meanwhile: stay with the new session
          watched = meta->session;
          continue;
        }
        // A delete marks the ring closed before the seal: read the meta again, after the seal.
        if (const auto now = reader.meta(); now && now->closed) {
          finish({End::deleted, {}, 0, std::nullopt});
        } else {
          finish({End::exited, {}, 0, record});
        }
        break;
      }
      if (!record && meta->session > watched) watched = meta->session;
    }

    const auto waited = reader.wait(follower.cursor(), kWaitSlice);
    if (waited == shm::WaitResult::closed) {
      (void)follower.pump(STDOUT_FILENO, std::nullopt, observe);
      finish({End::deleted, {}, 0, std::nullopt});
      break;
    }
    if (waited == shm::WaitResult::timeout && !ring_owner_alive(reader)) {
      finish(
          {End::failed,
           Error{Errc::engine_unavailable, "the engine that owns this actor is gone", std::nullopt},
           0, std::nullopt});
      break;
    }
  }
  const char byte = 1;
  (void)!::write(done_fd, &byte, 1);
}

// The terminal's size as request fields (none when stdin has no size).
Json size_fields() {
  const auto size = terminal_size(STDIN_FILENO);
  if (!size) return Json::object();
  const auto clamp = [](unsigned short v) {
    return std::clamp<std::uint64_t>(v, kMinTerminalSize, kMaxTerminalSize);
  };
  return {{"cols", clamp(size->ws_col)}, {"rows", clamp(size->ws_row)}};
}

// Sends the terminal's size as the actor's controller. Errors are not worth ending the
// attachment for: not_running (the session just ended; the output side will say so) and
// stale_controller (another client took over; this one goes on watching).
void send_size(control::ControlClient& client, const std::string& actor, std::uint64_t attachment) {
  Json fields = size_fields();
  if (fields.empty()) return;
  fields["actor"] = actor;
  fields["attachment"] = attachment;
  (void)client.call("resize", std::move(fields));
}

// Attaches as the controller at the terminal's size and shows the actor's current screen: the
// snapshot's bytes on a reset terminal, or nothing for a raw replay. Returns the cursor to
// follow the ring from and the attachment id.
struct Attached {
  Cursor from;
  std::uint64_t attachment;
};
Result<Attached> attach_and_show(control::ControlClient& client, const std::string& actor,
                                 TerminalModes& modes) {
  Json fields = size_fields();
  fields["actor"] = actor;
  fields["role"] = "controller";
  fields["formats"] = Json::array({"snapshot_v1"});
  auto r = client.call("attach", std::move(fields));
  if (!r) return tl::unexpected(r.error());
  const Json& h = r->header;
  const Attached attached{Cursor{h.value("cursor", std::uint64_t{0})},
                          h.value("attachment", std::uint64_t{0})};
  if (h.value("format", "") == "snapshot_v1") {
    // A snapshot draws on a fresh terminal: reset the modes, the region and the pen, clear.
    constexpr std::string_view kFreshTerminal = "\x1b[!p\x1b[0m\x1b[r\x1b[H\x1b[2J";
    if (auto w = write_all(STDOUT_FILENO, kFreshTerminal); !w) return tl::unexpected(w.error());
    if (auto w = write_all(STDOUT_FILENO, r->payload); !w) return tl::unexpected(w.error());
    modes.observe(std::as_bytes(std::span(r->payload.data(), r->payload.size())));
  }
  return attached;
}

// Forwards keystrokes; errors that mean "not now" (not_running, too_large) drop the bytes.
Result<void> send_input(control::ControlClient& client, const std::string& actor,
                        std::string_view bytes) {
  if (bytes.empty()) return {};
  auto r = client.call("input", {{"actor", actor}}, bytes);
  if (r || r.error().code == Errc::not_running || r.error().code == Errc::too_large) return {};
  return tl::unexpected(r.error());
}

}  // namespace

int run_attach(const EngineTarget& engine, const AttachArgs& args) {
  if (::isatty(STDIN_FILENO) != 1) return report_usage("attach: stdin is not a terminal");
  auto client = engine.connect();
  if (!client) return report(client.error());

  if (args.spawn) {
    SpawnArgs spawn = args.spawn_args;
    spawn.actor = args.actor;
    if (const auto size = terminal_size(STDIN_FILENO)) {
      if (!spawn.cols) spawn.cols = std::clamp<std::uint32_t>(size->ws_col, 1, kMaxTerminalSize);
      if (!spawn.rows) spawn.rows = std::clamp<std::uint32_t>(size->ws_row, 1, kMaxTerminalSize);
    }
    auto fields = spawn_fields(spawn);
    if (!fields) return report(fields.error());
    auto r = client->call("spawn", std::move(*fields));
    if (!r && r.error().code != Errc::actor_exists) return report(r.error());
    if (!r) {
      // It exists. If its program has ended, start it again: `attach NAME --spawn` always lands
      // in a live program (the actor's own argv; CMD only applies to a new actor).
      auto status = client->call("status", {{"actor", args.actor}});
      if (!status) return report(status.error());
      const Json actors = status->header.value("actors", Json::array());
      if (!actors.empty() && actors.front().value("state", "") == "idle") {
        auto restarted = client->call("restart", {{"actor", args.actor}});
        if (!restarted) return report(restarted.error());
      }
    }
  }

  auto reader = open_ring(engine.places, args.actor);
  if (!reader) return report(reader.error());

  SignalPipe signals;
  int done[2];
  if (!signals.ok() || ::pipe2(done, O_CLOEXEC) != 0)
    return report(fail_errno("pipe", errno).value());
  struct PipeCloser {
    int* fds;
    ~PipeCloser() {
      ::close(fds[0]);
      ::close(fds[1]);
    }
  } done_closer{done};

  RawTerminal terminal(STDIN_FILENO);
  if (auto raw = terminal.enter(); !raw) return report(raw.error());
  TerminalModes modes;
  auto attached = attach_and_show(*client, args.actor, modes);
  if (!attached) {
    terminal.leave();
    return report(attached.error());
  }

  std::atomic<bool> stop{false};
  Outcome thread_outcome;
  bool thread_finished = false;
  std::thread output(output_loop, std::cref(*reader), attached->from, std::cref(stop),
                     std::ref(modes), std::ref(thread_outcome), std::ref(thread_finished), done[1]);

  Outcome outcome{End::detached, {}, 0, std::nullopt};
  std::string input(kInputReadBytes, '\0');
  bool running = true;
  while (running) {
    pollfd fds[3] = {
        {STDIN_FILENO, POLLIN, 0}, {signals.read_fd(), POLLIN, 0}, {done[0], POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      outcome = {End::failed, fail_errno("poll", errno).value(), 0, std::nullopt};
      break;
    }
    if (fds[2].revents != 0) break;  // the output side ended: its outcome wins
    if (fds[1].revents & POLLIN) {
      unsigned char sigs[64];
      const ssize_t n = ::read(signals.read_fd(), sigs, sizeof sigs);
      for (ssize_t i = 0; i < n && running; ++i) {
        const int sig = sigs[i];
        if (sig == SIGWINCH) {
          send_size(*client, args.actor, attached->attachment);
        } else if (sig == SIGTSTP) {
          // Stopped from outside (the raw terminal sends ^Z to the program instead): give the
          // terminal back while stopped.
          terminal.leave();
          ::raise(SIGSTOP);
        } else if (sig == SIGCONT) {
          (void)terminal.enter();
          send_size(*client, args.actor, attached->attachment);
        } else {
          outcome = {End::signal, {}, sig, std::nullopt};
          running = false;
        }
      }
    }
    if (running && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(STDIN_FILENO, input.data(), input.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) break;  // the terminal went away: detach
      std::string_view bytes(input.data(), static_cast<std::size_t>(n));
      std::size_t key_at = std::string_view::npos;
      if (args.detach_key) key_at = bytes.find(static_cast<char>(*args.detach_key));
      if (auto sent = send_input(*client, args.actor, bytes.substr(0, key_at)); !sent) {
        outcome = {End::failed, sent.error(), 0, std::nullopt};
        break;
      }
      if (key_at != std::string_view::npos) break;  // detach key
    }
  }

  // The output side notices `stop` within a wait slice, unless it is blocked writing to a
  // terminal that does not read (a stopped or frozen emulator). Then it is left behind: the
  // process ends below without touching the ring again.
  stop.store(true, std::memory_order_relaxed);
  pollfd finished{done[0], POLLIN, 0};
  const bool joined = ::poll(&finished, 1, static_cast<int>(kStopTimeout.count())) == 1;
  if (!joined) {
    // Writing anything more would block as well: restore the mode without draining and go.
    output.detach();
    terminal.leave(/*now=*/true);
    std::_Exit(kExitOk);  // no destructors: the output thread still uses the ring
  }
  output.join();
  if (thread_finished) outcome = thread_outcome;
  // Still raw (no output translation): undo the program's modes, then start a fresh line
  // unless leaving the alternate screen already put the cursor back where it was.
  std::string farewell;
  if (::isatty(STDOUT_FILENO) == 1) farewell = modes.reset_sequence();
  if (!modes.alternate_screen()) farewell += "\r\n";
  (void)write_all(STDOUT_FILENO, farewell);
  terminal.leave();

  switch (outcome.end) {
    case End::detached:
      (void)write_all(STDOUT_FILENO, "[detached from " + args.actor + "]\n");
      return kExitOk;
    case End::exited: {
      std::string how = "exited";
      if (outcome.session->term_signal > 0) {
        how += ": signal " + std::to_string(outcome.session->term_signal);
      } else if (outcome.session->flags & shm::kSessionExited) {
        how += ": status " + std::to_string(outcome.session->exit_code);
      }
      (void)write_all(STDOUT_FILENO, "[" + args.actor + " " + how + "]\n");
      return kExitOk;
    }
    case End::deleted:
      (void)write_all(STDOUT_FILENO, "[" + args.actor + " was deleted]\n");
      return kExitOk;
    case End::signal:
      // The terminal is restored: now die of the signal, as its sender meant.
      ::signal(outcome.signal, SIG_DFL);
      ::raise(outcome.signal);
      return 128 + outcome.signal;
    case End::failed:
      return report(outcome.error);
  }
  return kExitError;
}

}  // namespace backscroll::cli
