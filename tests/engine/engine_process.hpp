// EngineProcess: the real backscrolld as a child of the test, in a runtime directory of its own.
// start() launches BACKSCROLL_BIN_DIR/backscrolld with BACKSCROLL_RUNTIME_DIR set in the child
// only (a fresh <mkdtemp>/rt unless a directory is given), stdin from /dev/null, stdout and
// stderr into <mkdtemp>/engine.log, no other fd, and waits until `ping` answers. Teardown
// (stop() or the destructor) sends `shutdown`, waits for the exit (SIGKILL after a timeout),
// expects exit status 0 and no socket left, and prints the engine's log when the test failed. An
// engine that never answered (one expected to refuse) is only reaped: the socket under its runtime
// directory may belong to another engine.
//
// Helpers throw std::runtime_error on anything unexpected (GoogleTest reports it as a failure of
// the test): tests stay short, and every wait has a generous bound so a broken engine fails a
// test instead of hanging it. Those bounds are hang guards, never timing assertions.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sanitizer_build.hpp"
#include "shm/control_client.hpp"
#include "shm/control_frame.hpp"
#include "shm/error.hpp"
#include "shm/places.hpp"
#include "shm/ring_announcement.hpp"

namespace backscroll::testing {

using control::Frame;
using control::Json;
using namespace std::chrono_literals;

inline constexpr std::chrono::milliseconds kHangGuard = 30s;

// A sanitizer build (tools/sanitize.sh): the engine's memory is then the sanitizer's (shadow
// memory, quarantine, terabytes of reserved address space), so tests that measure the engine's
// RSS or cap its address space skip.
inline constexpr bool kSanitizerBuild = kThreadSanitizerBuild || kAddressSanitizerBuild;
// ThreadSanitizer alone: its runtime cannot follow the vfork-like clone that starts a program
// in its cgroup, so the engine runs without cgroups under it (engine/cgroup_tree.cpp).
using ::backscroll::kThreadSanitizerBuild;
#define SKIP_MEMORY_MEASURE_UNDER_SANITIZER()                                      \
  do {                                                                             \
    if (::backscroll::testing::kSanitizerBuild)                                    \
      GTEST_SKIP() << "a sanitizer build: the engine's memory is the sanitizer's"; \
  } while (0)

// A test's failure outside a TEST body (fixtures, helpers): thrown, so gtest reports it.
[[noreturn]] void raise_failure(const std::string& message);
// argv/envp for execve: pointers into `strings`, then nullptr.
std::vector<char*> c_strings(std::vector<std::string>& strings);

// The engine, and the helper program the tests run as actors.
std::string engine_binary();
std::string child_binary();  // engine_test_child (see engine_test_child.cpp)

// The frame of a call that must succeed; throws with `what` and the error otherwise.
Frame expect_ok(Result<Frame> result, std::string_view what);
// The error of a call that must fail; throws when it succeeded.
Error expect_error(Result<Frame> result, std::string_view what);

// Polls `done` every few milliseconds; throws "timed out waiting for <what>" after `timeout`.
void wait_until(const std::function<bool()>& done, std::string_view what,
                std::chrono::milliseconds timeout = kHangGuard);

// A client whose receives time out (so a silent engine fails the call instead of hanging it).
control::ControlClient connect_client(const Places& places);

struct EngineConfig {
  std::vector<std::string> args{"--grace-ms", "500", "--drain-ms", "300"};
  std::optional<mode_t> umask;                       // set in the child before exec
  std::optional<std::uint64_t> address_space_limit;  // RLIMIT_AS, set in the child before exec
  std::filesystem::path runtime_dir;                 // empty: <the engine's temp dir>/rt
  bool wait_ready = true;       // false: launch only (engines expected to refuse)
  bool ignore_sigchld = false;  // launch with SIGCHLD ignored, as some launchers do
  // Written to <state dir>/settings.yaml before the start (nullopt: no file). The engine's
  // BACKSCROLL_HOME is always its own state dir, never the user's.
  std::optional<std::string> settings_yaml;

  // The defaults with these backscrolld arguments instead of the default ones.
  static EngineConfig with(std::vector<std::string> engine_args) {
    EngineConfig config;
    config.args = std::move(engine_args);
    return config;
  }
};

class EngineProcess {
 public:
  EngineProcess() = default;
  EngineProcess(const EngineProcess&) = delete;
  EngineProcess& operator=(const EngineProcess&) = delete;
  ~EngineProcess();

  // Starts the engine; again after stop() or kill_hard() for a restart (the same checks apply
  // to the new one).
  ::testing::AssertionResult start(EngineConfig config = {});
  // The clean shutdown with its checks (see above). Idempotent.
  void stop();
  // SIGKILL and reap, as a crash would; teardown then checks nothing.
  void kill_hard();
  // Waits for the process to exit by itself; its wait status, nullopt on timeout.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout = kHangGuard);
  bool running() const noexcept { return pid_ > 0; }

  pid_t pid() const noexcept { return pid_; }
  const Places& places() const noexcept { return places_; }
  std::filesystem::path log_path() const { return log_path_; }
  std::string log() const;

  // The engine's shared client (one request at a time) and fresh connections.
  control::ControlClient& client();
  control::ControlClient connect() const { return connect_client(places_); }

  Frame call(std::string_view op, Json fields = Json::object(), std::string_view payload = {});
  Result<Frame> try_call(std::string_view op, Json fields = Json::object(),
                         std::string_view payload = {});
  // spawn {actor, argv, ...extra}; the response header.
  Json spawn(const std::string& actor, const std::vector<std::string>& argv,
             Json extra = Json::object());
  // The status object of one actor.
  Json status(const std::string& actor);
  // What the engine announces about the actor's ring (status: header_fd, data_fd, nonce, capacity;
  // the pid is the engine's).
  shm::RingAnnouncement ring_of(const std::string& actor);
  // Every byte of the actor's history from `from` to its committed cursor (several calls).
  std::string history(const std::string& actor, std::uint64_t from = 0);
  // Waits until the actor's newest session is sealed; returns that session's status entry.
  Json wait_sealed(const std::string& actor, std::chrono::milliseconds timeout = kHangGuard);
  // Waits until the actor's history contains `needle`.
  void wait_output(const std::string& actor, std::string_view needle,
                   std::chrono::milliseconds timeout = kHangGuard);

  // The actors whose rings the live engine holds (its ring memfds, from /proc/<pid>/fd), sorted.
  std::vector<std::string> rings() const;

 private:
  pid_t pid_ = -1;
  // The folders each start() made (the log, and the runtime dir unless one was given): all
  // removed when the engine stops. A restart may put its runtime dir inside an earlier one.
  std::vector<std::filesystem::path> temp_dirs_;
  std::filesystem::path log_path_;
  Places places_;
  std::optional<control::ControlClient> client_;
  bool stopped_ = false;
  bool served_ = false;  // answered a ping: its socket is its own to check
};

// A control connection that writes bytes by hand (pipelining, malformed frames) and decodes
// whatever comes back. Receives time out after kHangGuard (the calls then throw).
class RawConnection {
 public:
  explicit RawConnection(const Places& places);
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  ~RawConnection();

  // False when the engine hung up first.
  bool send(std::string_view bytes);
  void finish_sending();  // shutdown(SHUT_WR)
  // The next frame; nullopt once the engine closed the connection.
  std::optional<Frame> next_frame();
  // One error frame with `code`, then the engine closes the connection.
  void expect_error_then_close(Errc code);
  int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
  control::FrameDecoder decoder_;
};

// A frame whose header is exactly `header` (no validation, no payload).
std::string raw_frame(std::string_view header);

// A mkdtemp folder under /tmp, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// A second connection subscribed to events.
class EventStream {
 public:
  explicit EventStream(const Places& places);
  // The next event named `event` (for `actor`, when given), skipping others; throws on timeout.
  Json wait_for(std::string_view event, std::string_view actor = {},
                std::chrono::milliseconds timeout = kHangGuard);
  // Every event received so far, in order.
  const std::vector<Json>& seen() const noexcept { return seen_; }
  control::ControlClient& client() noexcept { return client_; }

 private:
  control::ControlClient client_;
  std::vector<Json> seen_;
  std::vector<bool> taken_;  // seen_[i] was returned by wait_for
};

// Facts about a live process, from /proc.
int count_fds(pid_t pid);
int count_threads(
    pid_t pid);  // io_uring workers (iou-*) excluded: the kernel spawns and reaps them
long vm_rss_kb(pid_t pid);
std::vector<pid_t> zombie_children(pid_t pid);
// Every fd of `pid` and what it points to, for failure messages.
std::string describe_fds(pid_t pid);

// Runs `program` directly (not on the engine), stdout+stderr captured; returns the wait status.
int run_program(const std::vector<std::string>& argv, std::string* output,
                std::chrono::milliseconds timeout = kHangGuard);

}  // namespace backscroll::testing
