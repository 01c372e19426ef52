// bench/flood: PTY flood throughput of the engine with one shm reader attached, as a ratio to a
// plain blocking read() loop draining the same flood on the same kind of PTY, in the same run
// (DESIGN section 9). Runs the two alternately, `--rounds` times each, and reports medians.
//
//   flood [--bytes N] [--rounds R] [--ring-bytes N] [--json FILE]
//
// The child (flood_writer) writes N bytes of text lines through a cooked PTY (a shell's default
// termios, so ONLCR turns each \n into \r\n and the drained byte count is larger than N). Both
// sides time from "spawn" to "every byte of the session drained".
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "shm/control_client.hpp"
#include "shm/places.hpp"
#include "shm/ring_reader.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace backscroll;

std::filesystem::path bin_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path();
}

struct Sample {
  double seconds = 0;
  std::uint64_t bytes = 0;
  double mb_per_s() const { return static_cast<double>(bytes) / seconds / 1e6; }
};

// The limit: the flood_writer on a fresh PTY, drained by blocking read() of 64 KiB.
Sample plain_loop(std::uint64_t flood_bytes) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ::grantpt(master);
  ::unlockpt(master);
  char slave_path[128];
  ::ptsname_r(master, slave_path, sizeof slave_path);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, slave_path, O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&actions, 0, 1);
  posix_spawn_file_actions_adddup2(&actions, 0, 2);
  const std::string writer = (bin_dir() / "flood_writer").string();
  const std::string count = std::to_string(flood_bytes);
  char* argv[] = {const_cast<char*>(writer.c_str()), const_cast<char*>(count.c_str()), nullptr};
  const auto start = Clock::now();
  pid_t pid = 0;
  if (::posix_spawn(&pid, writer.c_str(), &actions, &attr, argv, environ) != 0) {
    std::perror("posix_spawn flood_writer");
    std::exit(1);
  }
  std::vector<char> buffer(65536);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(master, buffer.data(), buffer.size());
    if (n > 0) {
      total += static_cast<std::uint64_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO: the slave side is closed and drained
    }
  }
  const auto end = Clock::now();
  ::waitpid(pid, nullptr, 0);
  ::close(master);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return {std::chrono::duration<double>(end - start).count(), total};
}

class EngineUnderTest {
 public:
  EngineUnderTest(std::uint64_t ring_bytes) {
    char tmpl[] = "/tmp/backscroll-flood-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    places_ = Places::at(root_ / "rt");
    const std::string engine = (bin_dir() / "backscrolld").string();
    const std::string ring = std::to_string(ring_bytes);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setenv("BACKSCROLL_RUNTIME_DIR", places_.runtime_dir.c_str(), 1);
      const std::string log = (root_ / "engine.log").string();
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 2);
      ::execl(engine.c_str(), engine.c_str(), "--ring-bytes", ring.c_str(), nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      if (auto c = control::ControlClient::connect(places_)) {
        client_.emplace(std::move(*c));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::fprintf(stderr, "flood: the engine did not start (log in %s)\n", root_.c_str());
    std::exit(1);
  }
  ~EngineUnderTest() {
    if (client_) (void)client_->call("shutdown");
    ::waitpid(pid_, nullptr, 0);
    std::filesystem::remove_all(root_);
  }

  // Spawns the flood in a new actor and drains it through one shm reader in this process.
  Sample flood(const std::string& actor, std::uint64_t flood_bytes) {
    const auto start = Clock::now();
    auto spawned = client_->call(
        "spawn", {{"actor", actor},
                  {"argv", {(bin_dir() / "flood_writer").string(), std::to_string(flood_bytes)}}});
    if (!spawned) fail(spawned.error());
    auto reader = shm::RingReader::open(places_, actor);
    if (!reader) fail(reader.error());
    const std::uint64_t session = spawned->header["session"].get<std::uint64_t>();
    Cursor cursor{spawned->header["cursor"].get<std::uint64_t>()};
    const Cursor start_cursor = cursor;
    std::uint64_t checksum = 0;
    for (;;) {
      auto view = reader->read(cursor, 1 << 20);
      if (!view) fail(view.error());
      if (!view->empty()) {
        // Touch every cache line, as a consumer that uses the bytes would.
        for (const auto span : {view->first, view->second}) {
          for (std::size_t i = 0; i < span.size(); i += 64) {
            checksum += static_cast<unsigned char>(span[i]);
          }
        }
        if (!reader->intact(cursor)) fail(Error{Errc::cursor_expired, "reader lapped", {}});
        cursor = view->to;
        continue;
      }
      const auto record = reader->session(session);
      if (record && (record->flags & shm::kSessionSealed) && Cursor{record->end} <= cursor) {
        if (record->exit_code != 0) {
          fail(Error{Errc::internal, "flood_writer ended with status " +
                                         std::to_string(record->exit_code) + ", signal " +
                                         std::to_string(record->term_signal), {}});
        }
        break;
      }
      reader->wait(cursor, std::chrono::milliseconds(100));
    }
    const auto end = Clock::now();
    checksum_ += checksum;
    (void)client_->call("delete", {{"actor", actor}});
    return {std::chrono::duration<double>(end - start).count(), cursor - start_cursor};
  }

 private:
  [[noreturn]] void fail(const Error& e) {
    std::fprintf(stderr, "flood: %s\n", e.describe().c_str());
    std::exit(1);
  }

  std::filesystem::path root_;
  Places places_;
  pid_t pid_ = 0;
  std::optional<control::ControlClient> client_;
  std::uint64_t checksum_ = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t flood_bytes = 1ull << 30;
  int rounds = 3;
  std::uint64_t ring_bytes = 10'485'760;
  std::string json_path;
  CLI::App app{"PTY flood: engine + one shm reader vs a plain read() loop, same run"};
  app.add_option("--bytes", flood_bytes, "bytes the child writes per flood")->capture_default_str();
  app.add_option("--rounds", rounds, "floods per side (alternating)")->capture_default_str();
  app.add_option("--ring-bytes", ring_bytes, "engine ring size")->capture_default_str();
  app.add_option("--json", json_path, "also write the results as JSON here");
  CLI11_PARSE(app, argc, argv);

  EngineUnderTest engine(ring_bytes);
  std::vector<double> plain, through_engine;
  std::uint64_t plain_bytes = 0, engine_bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    const Sample p = plain_loop(flood_bytes);
    const Sample e = engine.flood("flood" + std::to_string(r), flood_bytes);
    plain.push_back(p.mb_per_s());
    through_engine.push_back(e.mb_per_s());
    plain_bytes = p.bytes;
    engine_bytes = e.bytes;
    if (p.bytes != e.bytes) {
      std::fprintf(stderr, "flood: the engine drained %llu bytes, the plain loop %llu\n",
                   static_cast<unsigned long long>(e.bytes),
                   static_cast<unsigned long long>(p.bytes));
      return 1;
    }
    std::fprintf(stderr, "round %d: plain %.1f MB/s (%llu B), engine %.1f MB/s (%llu B)\n", r,
                 p.mb_per_s(), static_cast<unsigned long long>(p.bytes), e.mb_per_s(),
                 static_cast<unsigned long long>(e.bytes));
  }
  const double p50 = median(plain), e50 = median(through_engine);
  std::printf("| drain | MB/s (median of %d) | bytes per flood |\n|---|---|---|\n", rounds);
  std::printf("| plain blocking read() loop | %.1f | %llu |\n", p50,
              static_cast<unsigned long long>(plain_bytes));
  std::printf("| backscrolld + 1 shm reader | %.1f | %llu |\n", e50,
              static_cast<unsigned long long>(engine_bytes));
  std::printf("\nratio engine / plain: %.3f\n", e50 / p50);
  if (!json_path.empty()) {
    nlohmann::json out = {{"flood_bytes", flood_bytes}, {"rounds", rounds},
                          {"plain_mb_s", plain},       {"engine_mb_s", through_engine},
                          {"plain_median", p50},       {"engine_median", e50},
                          {"ratio", e50 / p50}};
    std::ofstream(json_path) << out.dump(2) << "\n";
  }
  return 0;
}
