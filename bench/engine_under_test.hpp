// EngineUnderTest: a backscrolld of the benchmark's own (temporary runtime dir), started with
// the given flags and shut down on destruction, with a control client. Shared by bench/ programs.
#pragma once

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "shm/control_client.hpp"
#include "shm/places.hpp"

namespace backscroll::bench {

inline std::filesystem::path bin_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path();
}

[[noreturn]] inline void fail(const Error& e) {
  std::fprintf(stderr, "bench: %s\n", e.describe().c_str());
  std::exit(1);
}

class EngineUnderTest {
 public:
  // A fresh folder of its own (removed at the end), or `root` (kept: a later engine may reuse
  // its state dir, root/state).
  explicit EngineUnderTest(std::vector<std::string> flags, std::filesystem::path root = {})
      : owns_root_(root.empty()) {
    if (owns_root_) {
      char tmpl[] = "/tmp/backscroll-bench-XXXXXX";
      root = ::mkdtemp(tmpl);
    }
    root_ = root;
    places_ = Places::at(root_ / "rt");
    const std::string engine = (bin_dir() / "backscrolld").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setenv("BACKSCROLL_RUNTIME_DIR", places_.runtime_dir.c_str(), 1);
      ::setenv("BACKSCROLL_HOME", places_.state_dir.c_str(), 1);  // the defaults, not the user's
      const std::string log = (root_ / "engine.log").string();
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      // Nothing of the benchmark's output (a pipe ctest waits on), and no engine left behind
      // when the benchmark exits on a failure without shutting it down.
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      std::vector<char*> argv{const_cast<char*>(engine.c_str())};
      for (auto& f : flags) argv.push_back(f.data());
      argv.push_back(nullptr);
      ::execv(engine.c_str(), argv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 10'000; ++i) {
      if (auto c = control::ControlClient::connect(places_)) {
        client_.emplace(std::move(*c));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::fprintf(stderr, "bench: the engine did not start (log in %s)\n", root_.c_str());
    std::exit(1);
  }
  EngineUnderTest(const EngineUnderTest&) = delete;
  EngineUnderTest& operator=(const EngineUnderTest&) = delete;
  ~EngineUnderTest() {
    if (client_) (void)client_->call("shutdown");
    ::waitpid(pid_, nullptr, 0);
    if (owns_root_) std::filesystem::remove_all(root_);
  }

  // Ends the engine with SIGKILL, as a crash would: nothing is synced or sealed; the state dir
  // stays for the next engine.
  void crash() {
    client_.reset();
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    // The kernel tears a dead process's io_uring down after the process is reaped, and the
    // accept it had queued keeps the listening socket open until then: a client connecting in
    // that window is accepted and then reset. Wait until the socket refuses, as a restarting
    // engine's first client would find it.
    for (int i = 0; i < 5'000 && control::ControlClient::connect(places_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  const Places& places() const { return places_; }
  pid_t pid() const { return pid_; }
  control::ControlClient& client() { return *client_; }
  // One request; exits the benchmark on an error.
  control::Frame call(std::string_view op, control::Json fields = control::Json::object()) {
    auto r = client_->call(op, std::move(fields));
    if (!r) fail(r.error());
    return std::move(*r);
  }

 private:
  bool owns_root_;
  std::filesystem::path root_;
  Places places_;
  pid_t pid_ = 0;
  std::optional<control::ControlClient> client_;
};

}  // namespace backscroll::bench
