#include "tools/cli_attach.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "shm/ring_reader.hpp"
#include "tools/cli_attach_view.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_raw_terminal.hpp"
#include "tools/cli_ring_follower.hpp"
#include "tools/cli_terminal_input.hpp"

namespace backscroll::cli {
namespace {

using control::Json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kInputReadBytes = 64 * 1024;
constexpr std::chrono::milliseconds kStopTimeout{1000};  // for the output side to finish
constexpr std::chrono::milliseconds kHintTime{3000};     // a hint replaces the status this long
// Events can make this client resize the actor or restart its view, which brings more events:
// rounds of that per wake-up, at most (two clients cannot make it loop).
constexpr int kSettleRounds = 4;
// The output side may ask for fresh snapshots in a row (a growing actor whose mirror is behind
// a flood): one at most this often.
constexpr std::chrono::milliseconds kResyncInterval{100};
// When the engine cannot draw the screen on the canvas (a raw replay: docs/snapshot.md,
// "Fallbacks"), the view is rendered and passthrough is tried again this much later.
constexpr std::chrono::milliseconds kPassthroughRetry{2000};

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

// The output side's messages (AttachView::kEnded, ...), one byte each.
class MessagePipe {
 public:
  MessagePipe() {
    if (::pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
    if (fds_[0] >= 0) ::fcntl(fds_[0], F_SETFL, ::fcntl(fds_[0], F_GETFL) | O_NONBLOCK);
  }
  MessagePipe(const MessagePipe&) = delete;
  MessagePipe& operator=(const MessagePipe&) = delete;
  ~MessagePipe() {
    if (fds_[0] >= 0) ::close(fds_[0]);
    if (fds_[1] >= 0) ::close(fds_[1]);
  }
  bool ok() const { return fds_[0] >= 0; }
  int read_fd() const { return fds_[0]; }
  int write_fd() const { return fds_[1]; }
  // What has arrived (empty when nothing).
  std::string take() const {
    char buf[256];
    const ssize_t n = ::read(fds_[0], buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }

 private:
  int fds_[2] = {-1, -1};
};

struct Size {
  std::uint16_t cols = 0;
  std::uint16_t rows = 0;
  bool operator==(const Size&) const = default;
  std::string text() const { return std::to_string(cols) + "x" + std::to_string(rows); }
};

// The terminal's size as the user sees it, if it reports one.
std::optional<Size> terminal_now() {
  const auto ws = terminal_size(STDIN_FILENO);
  if (!ws) return std::nullopt;
  return Size{ws->ws_col, ws->ws_row};
}

// A size the engine accepts (1..1000 each).
Size engine_size(Size s) {
  const auto clamp = [](std::uint16_t v) {
    return static_cast<std::uint16_t>(
        std::clamp<std::uint64_t>(v, kMinTerminalSize, kMaxTerminalSize));
  };
  return {clamp(s.cols), clamp(s.rows)};
}

std::string key_name(std::optional<unsigned char> key) {
  if (!key) return "no detach key";
  if (*key < 0x20) return std::string("Ctrl-") + static_cast<char>(*key + 0x40);
  if (*key == 0x7f) return "Ctrl-?";
  return std::string(1, static_cast<char>(*key));
}

// Forwards keystrokes; errors that mean "not now" (not_running, too_large) drop the bytes.
Result<void> send_input(control::ControlClient& client, const std::string& actor,
                        std::string_view bytes) {
  if (bytes.empty()) return {};
  auto r = client.call("input", {{"actor", actor}}, bytes);
  if (r || r.error().code == Errc::not_running || r.error().code == Errc::too_large) return {};
  return tl::unexpected(r.error());
}

// The input side: what the engine says about the attachment (owner, sizes), what the user types
// and how the window changes, turned into requests and the output side's mode (cli_attach.hpp).
class AttachClient {
 public:
  AttachClient(control::ControlClient& client, const AttachArgs& args, AttachView& view)
      : client_(client), args_(args), view_(view) {}

  // Attaches and gives the output side its first start (before its thread runs).
  Result<void> attach();
  // Each handler leaves the mode to settle(), which the loop calls after every wake-up.
  // False: the detach key.
  Result<bool> on_stdin(std::string_view bytes);
  void on_window_change();
  void on_continued() { view_.redraw(); }
  Result<void> on_view_message(char message);
  Result<void> on_deadline(Clock::time_point now);
  // Handles the events that arrived (on the socket, or read during a call) and makes the mode
  // and the actor's size follow the policy.
  Result<void> settle();
  // When on_deadline() is due next: the catch-up's answer timeout, a deferred resync.
  std::optional<Clock::time_point> deadline() const;
  bool control_lost() const { return control_lost_; }
  // After the view stopped: the status answers the terminal still owes (the view's sentinels).
  unsigned answers_outstanding() { return guard_.answers_outstanding() + view_.take_answers_due(); }
  // The actor's size, as the engine said last.
  std::string actor_size() const { return actor_.text(); }

 private:
  bool owns() const { return !args_.read_only && owner_ == attachment_; }
  ViewMode wanted_mode() const {
    return owns() && actor_ == terminal_ && !passthrough_retry_at_ ? ViewMode::passthrough
                                                                   : ViewMode::render;
  }
  // A snapshot request's fields for a start in `mode`: passthrough on the canvas draws the
  // screen shown, no history; a rendered model takes the history (a growing actor takes lines
  // back from it, as its own terminal does).
  Json snapshot_fields(ViewMode mode) const;
  // Gives the output side a start from a snapshot answer asked for `mode`.
  void start_view(const control::Frame& answer, ViewMode mode);
  ViewStart start_from(const control::Frame& answer, ViewMode mode) const;
  // Handles the events read so far; true when there were any.
  bool drain_events();
  void handle_event(const Json& event);
  Result<void> reconcile();
  Result<void> restart_view(ViewMode mode);
  void resize_actor(Size size);
  Result<void> take_control();
  Result<void> deliver(const std::string& keys);
  void update_status();

  control::ControlClient& client_;
  const AttachArgs& args_;
  AttachView& view_;
  std::uint64_t attachment_ = 0;
  std::optional<std::uint64_t> owner_;  // the owner's attachment, as the engine said last
  Size owner_size_;
  Size actor_;                 // the actor's size, as the engine said last
  Size terminal_;              // the user's terminal
  std::optional<Size> asked_;  // the size this client asked the actor for last
  ViewMode mode_ = ViewMode::passthrough;
  std::vector<ActorResize> resizes_;  // learned, not yet handed to the output side
  CatchUpGuard guard_;
  std::string held_;               // keys typed during a catch-up
  TerminalInput displaced_input_;  // what a displaced client types: only a plain `t` counts
  std::string status_;
  bool control_lost_ = false;
  std::optional<Clock::time_point> resync_at_;  // a fresh start is due then
  Clock::time_point last_resync_{};
  std::optional<Clock::time_point> passthrough_retry_at_;  // rendered until then
  bool view_started_ = false;
};

std::optional<Clock::time_point> AttachClient::deadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& t : {guard_.deadline(), resync_at_, passthrough_retry_at_}) {
    if (t && (!next || *t < *next)) next = t;
  }
  return next;
}

Json AttachClient::snapshot_fields(ViewMode mode) const {
  Json fields{{"actor", args_.actor}, {"formats", Json::array({"snapshot_v1"})}};
  if (!args_.history && mode == ViewMode::passthrough) {
    fields["canvas"] = "alternate";
    fields["scrollback"] = 0;
  }
  return fields;
}

void AttachClient::start_view(const control::Frame& answer, ViewMode mode) {
  if (mode == ViewMode::passthrough && !args_.history &&
      answer.header.value("format", "") != "snapshot_v1") {
    // A raw replay cannot be passed through on the canvas (it would stop at its first screen
    // switch, again and again): the model replays it, and passthrough is tried again later.
    // A model already running goes on (replaying the ring again would only cost).
    passthrough_retry_at_ = Clock::now() + kPassthroughRetry;
    if (view_started_ && mode_ == ViewMode::render) return;
    mode = ViewMode::render;
  }
  if (mode == ViewMode::passthrough) guard_.begin();
  view_.start(start_from(answer, mode), std::exchange(resizes_, {}));
  mode_ = mode;
  view_started_ = true;
}

ViewStart AttachClient::start_from(const control::Frame& answer, ViewMode mode) const {
  const Json& h = answer.header;
  ViewStart start;
  start.mode = mode;
  start.cursor = Cursor{h.value("cursor", std::uint64_t{0})};
  start.cols = static_cast<std::uint16_t>(h.value("cols", actor_.cols));
  start.rows = static_cast<std::uint16_t>(h.value("rows", actor_.rows));
  // A raw replay (graphics, an unmodelled mode, ...) starts at the oldest cursor, no snapshot.
  if (h.value("format", "") == "snapshot_v1") start.snapshot = answer.payload;
  return start;
}

Result<void> AttachClient::attach() {
  terminal_ = terminal_now().value_or(Size{80, 24});
  // A controller at the terminal's size passes the output through: its snapshot is drawn on
  // the canvas. A viewer renders.
  const ViewMode expected = args_.read_only ? ViewMode::render : ViewMode::passthrough;
  Json fields = snapshot_fields(expected);
  fields["role"] = args_.read_only ? "viewer" : "controller";
  if (!args_.read_only) {
    asked_ = engine_size(terminal_);
    fields["cols"] = asked_->cols;
    fields["rows"] = asked_->rows;
  }
  auto r = client_.call("attach", std::move(fields));
  if (!r) return tl::unexpected(r.error());
  attachment_ = r->header.value("attachment", std::uint64_t{0});
  actor_ = {static_cast<std::uint16_t>(r->header.value("cols", 80)),
            static_cast<std::uint16_t>(r->header.value("rows", 24))};
  if (!args_.read_only) owner_ = attachment_;  // attaching made it the owner
  // The attach's own events, and any that came after it, arrived before the answer.
  drain_events();
  const ViewMode mode = wanted_mode();
  if (mode == expected) {
    start_view(*r, mode);
  } else if (auto again = restart_view(mode); !again) {  // its snapshot was drawn for the other
    return again;
  }
  update_status();
  return {};
}

bool AttachClient::drain_events() {
  bool any = false;
  while (!control_lost_) {
    auto event = client_.next_event(std::chrono::milliseconds(0));
    if (!event) {
      // The engine closed the connection: the output side tells how the attachment ended
      // (the session's seal, or the engine gone); requests fail from now on.
      control_lost_ = true;
      break;
    }
    if (!*event) break;
    handle_event((*event)->header);
    any = true;
  }
  return any;
}

void AttachClient::handle_event(const Json& event) {
  if (event.value("actor", "") != args_.actor) return;
  const std::string name = event.value("event", "");
  if (name == "controller") {
    owner_ = event.value("attachment", std::uint64_t{0});
    owner_size_ = {static_cast<std::uint16_t>(event.value("cols", 0)),
                   static_cast<std::uint16_t>(event.value("rows", 0))};
  } else if (name == "resized") {
    actor_ = {static_cast<std::uint16_t>(event.value("cols", 0)),
              static_cast<std::uint16_t>(event.value("rows", 0))};
    owner_size_ = actor_;  // only the owner resizes
    resizes_.push_back({Cursor{event.value("cursor", std::uint64_t{0})}, actor_.cols, actor_.rows});
  }
}

Result<void> AttachClient::settle() {
  for (int round = 0; round < kSettleRounds; ++round) {
    if (!drain_events() && round > 0) break;
    if (auto r = reconcile(); !r) return r;
  }
  view_.resized(std::exchange(resizes_, {}));
  update_status();
  return {};
}

Result<void> AttachClient::reconcile() {
  // The owner keeps the actor at its terminal's size (handed back, taken, a window change
  // while displaced); it asks once per size, so a refusal (the program ended) is not repeated.
  const Size want = engine_size(terminal_);
  if (owns() && actor_ != want && asked_ != want) resize_actor(want);
  const ViewMode mode = wanted_mode();
  if (mode != mode_) return restart_view(mode);
  return {};
}

void AttachClient::resize_actor(Size size) {
  asked_ = size;
  // Refusals are not worth ending the attachment for: not_running (the session just ended;
  // the output side will say so) and stale_controller (another client took over: its event
  // follows).
  auto r = client_.call("resize", {{"actor", args_.actor},
                                   {"attachment", attachment_},
                                   {"cols", size.cols},
                                   {"rows", size.rows}});
  if (r) actor_ = size;
}

Result<void> AttachClient::restart_view(ViewMode mode) {
  auto r = client_.call("snapshot", snapshot_fields(mode));
  if (!r) {
    // Deleted meanwhile, or the engine gone: the output side ends the attachment.
    if (r.error().code == Errc::no_such_actor || r.error().code == Errc::engine_unavailable) {
      return {};
    }
    return tl::unexpected(r.error());
  }
  // Resizes announced before the answer belong with it (AttachView::start).
  drain_events();
  start_view(*r, mode);
  return {};
}

Result<void> AttachClient::take_control() {
  const Size size = engine_size(terminal_);
  auto r = client_.call("take_control",
                        {{"attachment", attachment_}, {"cols", size.cols}, {"rows", size.rows}});
  if (!r) {
    view_.show_hint(" cannot take control: " + r.error().message, kHintTime);
    return {};
  }
  asked_ = size;
  (void)displaced_input_.take_pending();
  return {};  // its events (controller, resized) came before the answer: settle() reads them
}

Result<void> AttachClient::deliver(const std::string& keys) {
  if (keys.empty()) return {};
  if (args_.read_only) {
    view_.show_hint(" read-only: keys are not sent | " + key_name(args_.detach_key) +
                        ": detach | " + args_.actor + " is " + actor_.text(),
                    kHintTime);
    return {};
  }
  if (!owns()) {
    // Displaced: the view may be cropped and another client is typing; keys are not sent.
    std::string_view rest = keys;
    while (auto unit = displaced_input_.next(rest)) {
      if (unit->bytes == "t") return take_control();  // the rest of this read is dropped
    }
    return {};
  }
  return send_input(client_, args_.actor, keys);
}

Result<bool> AttachClient::on_stdin(std::string_view bytes) {
  std::string keys = guard_.filter(bytes);
  // The detach key acts at once, even during a catch-up; keys before it are still delivered.
  const std::size_t key_at =
      args_.detach_key ? keys.find(static_cast<char>(*args_.detach_key)) : std::string::npos;
  if (key_at != std::string::npos) {
    held_ += keys.substr(0, key_at);
    if (auto d = deliver(std::exchange(held_, {})); !d) return tl::unexpected(d.error());
    return false;
  }
  held_ += keys;
  if (guard_.active()) return true;  // queued until the catch-up's answers are in
  if (auto d = deliver(std::exchange(held_, {})); !d) return tl::unexpected(d.error());
  return true;
}

void AttachClient::on_window_change() {
  terminal_ = terminal_now().value_or(terminal_);
  view_.set_terminal(terminal_.cols, terminal_.rows);
  // The owner resizes the actor, as a terminal does; a displaced or read-only client only
  // draws again (settle()).
  if (owns()) resize_actor(engine_size(terminal_));
}

Result<void> AttachClient::on_view_message(char message) {
  if (message == AttachView::kCatchUpDone) {
    guard_.sentinel_written(view_.take_answers_due(), Clock::now());
  } else if (message == AttachView::kResyncWanted && !resync_at_) {
    resync_at_ = std::max(Clock::now(), last_resync_ + kResyncInterval);
  }
  if (!guard_.active() && !held_.empty()) return deliver(std::exchange(held_, {}));
  return {};
}

Result<void> AttachClient::on_deadline(Clock::time_point now) {
  if (resync_at_ && *resync_at_ <= now) {
    resync_at_.reset();
    last_resync_ = now;
    if (auto r = restart_view(mode_); !r) return r;
  }
  // Passthrough again, if the policy wants it (settle() restarts the view).
  if (passthrough_retry_at_ && *passthrough_retry_at_ <= now) passthrough_retry_at_.reset();
  held_ += guard_.expire(now);  // the terminal did not answer the sentinel: stop waiting
  if (!guard_.active() && !held_.empty()) return deliver(std::exchange(held_, {}));
  return {};
}

void AttachClient::update_status() {
  // The keys first: on a narrow terminal the line is cut on the right.
  std::string line;
  if (!args_.read_only && !owns() && owner_) {
    line = " t: take control | " + key_name(args_.detach_key) + ": detach | " + args_.actor +
           " is " + owner_size_.text() + ", controlled by another client (attachment " +
           std::to_string(*owner_) + ")";
  }
  if (line == status_) return;
  status_ = line;
  view_.set_status(line);
}

// Asks the terminal a last `CSI 5 n` and reads stdin until it answered it after the `due` status
// answers it still owed (at most kLastAnswerWait): terminals answer in order, so every answer to
// a query written while attached (a sentinel, the program's own) is read and dropped here
// instead of landing in the shell as text. Keys typed meanwhile go too: they came after the
// detach.
void drain_answers(unsigned due) {
  constexpr std::chrono::milliseconds kLastAnswerWait{250};
  constexpr std::string_view kAnswer = "\x1b[0n";
  if (!write_all(STDOUT_FILENO, "\x1b[5n")) return;
  const auto deadline = Clock::now() + kLastAnswerWait;
  unsigned seen = 0;
  std::string tail;  // an answer split between two reads is found whole
  char buf[4096];
  while (seen <= due) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n <= 0) return;
    tail.append(buf, static_cast<std::size_t>(n));
    for (std::size_t at = tail.find(kAnswer); at != std::string::npos; at = tail.find(kAnswer)) {
      ++seen;
      tail.erase(0, at + kAnswer.size());
    }
    if (tail.size() > kAnswer.size()) tail.erase(0, tail.size() - kAnswer.size());
  }
}

// Waits for the output side's kEnded, reading past its other messages; false on timeout.
bool wait_for_end(const MessagePipe& messages, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (messages.take().find(AttachView::kEnded) != std::string::npos) return true;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{messages.read_fd(), POLLIN, 0};
    (void)::poll(&p, 1, static_cast<int>(left.count()));
  }
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
  MessagePipe messages;
  if (!signals.ok() || !messages.ok()) return report(fail_errno("pipe", errno).value());

  RawTerminal terminal(STDIN_FILENO);
  if (auto raw = terminal.enter(); !raw) return report(raw.error());
  const auto size = terminal_now().value_or(Size{80, 24});
  AttachView view(*reader, messages.write_fd(), size.cols, size.rows, /*canvas=*/!args.history);
  AttachClient session(*client, args, view);
  if (auto attached = session.attach(); !attached) {
    terminal.leave();
    return report(attached.error());
  }
  if (!args.quiet) {
    // On the user's screen, before the view takes the terminal: it is there again, above the
    // line that says how the attachment ended, once it is over.
    std::string banner = "attached to " + args.actor + " (" + session.actor_size() + ")";
    if (args.read_only) banner += ", read-only";
    banner += args.detach_key ? " \u2014 " + key_name(args.detach_key) + " detaches"
                              : " \u2014 no detach key";
    (void)write_all(STDOUT_FILENO, banner + "\r\n");
  }
  std::thread output([&view] {
    // Signals belong to the self-pipe: keep this thread's waits quiet.
    sigset_t block;
    ::sigemptyset(&block);
    for (const int sig : kHandledSignals) ::sigaddset(&block, sig);
    ::pthread_sigmask(SIG_BLOCK, &block, nullptr);
    view.run();
  });

  Outcome outcome{End::detached, {}, 0, std::nullopt};
  auto fail_with = [&](const Error& e) { outcome = {End::failed, e, 0, std::nullopt}; };
  std::string input(kInputReadBytes, '\0');
  bool running = true;
  bool view_ended = false;
  while (running) {
    pollfd fds[4] = {{STDIN_FILENO, POLLIN, 0},
                     {signals.read_fd(), POLLIN, 0},
                     {messages.read_fd(), POLLIN, 0},
                     {session.control_lost() ? -1 : client->fd(), POLLIN, 0}};
    int timeout_ms = -1;
    if (const auto deadline = session.deadline()) {
      timeout_ms = static_cast<int>(std::max<std::int64_t>(
          0, std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count()));
    }
    if (::poll(fds, 4, timeout_ms) < 0) {
      if (errno == EINTR) continue;
      fail_with(fail_errno("poll", errno).value());
      break;
    }
    Result<void> handled{};
    if (fds[2].revents != 0) {
      for (const char m : messages.take()) {
        if (m == AttachView::kEnded) view_ended = true;  // the output side ended: its outcome wins
        if (handled) handled = session.on_view_message(m);
      }
      if (view_ended) break;
    }
    if (handled && (fds[1].revents & POLLIN)) {
      unsigned char sigs[64];
      const ssize_t n = ::read(signals.read_fd(), sigs, sizeof sigs);
      for (ssize_t i = 0; i < n && running && handled; ++i) {
        const int sig = sigs[i];
        if (sig == SIGWINCH) {
          session.on_window_change();
        } else if (sig == SIGTSTP) {
          // Stopped from outside (the raw terminal sends ^Z to the program instead): give the
          // terminal back while stopped.
          terminal.leave();
          ::raise(SIGSTOP);
        } else if (sig == SIGCONT) {
          (void)terminal.enter();
          session.on_continued();
          session.on_window_change();
        } else {
          outcome = {End::signal, {}, sig, std::nullopt};
          running = false;
        }
      }
    }
    if (running && handled && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(STDIN_FILENO, input.data(), input.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) break;  // the terminal went away: detach
      auto go_on = session.on_stdin(std::string_view(input.data(), static_cast<std::size_t>(n)));
      if (!go_on) {
        handled = tl::unexpected(go_on.error());
      } else if (!*go_on) {
        running = false;  // the detach key
      }
    }
    if (running && handled) handled = session.on_deadline(Clock::now());
    if (running && handled) handled = session.settle();
    if (!handled) {
      fail_with(handled.error());
      break;
    }
  }

  // The output side stops at once, unless it is blocked writing to a terminal that does not
  // read (a stopped or frozen emulator). Then it is left behind: the process ends below
  // without touching the ring again.
  view.stop();
  if (!view_ended && !wait_for_end(messages, kStopTimeout)) {
    // Writing anything more would block as well: restore the mode without draining and go.
    output.detach();
    terminal.leave(/*now=*/true);
    std::_Exit(kExitOk);  // no destructors: the output thread still uses the ring
  }
  output.join();
  if (view.finished()) outcome = view.outcome();
  // Still raw (no output translation): undo the program's modes (or leave the screen the view
  // drew on), then start a fresh line unless that already put the cursor at one.
  std::string farewell;
  const bool to_terminal = ::isatty(STDOUT_FILENO) == 1;
  if (to_terminal) farewell = view.farewell();
  if (!view.farewell_starts_line()) farewell += "\r\n";
  (void)write_all(STDOUT_FILENO, farewell);
  if (to_terminal && outcome.end != End::signal) drain_answers(session.answers_outstanding());
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
    case End::failed: return report(outcome.error);
  }
  return kExitError;
}

}  // namespace backscroll::cli
