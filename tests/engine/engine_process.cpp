#include "tests/engine/engine_process.hpp"

#include "shm/segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace backscroll::testing {

void raise_failure(const std::string& message) { throw std::runtime_error(message); }

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void set_timeouts(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Fields after the command name of /proc/PID/stat ("S 1234 ..."), empty if unreadable.
std::string stat_after_name(const std::string& stat_path) {
  std::ifstream in(stat_path);
  std::string line;
  if (!std::getline(in, line)) return {};
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 > line.size()) return {};
  return line.substr(close + 2);
}

}  // namespace

std::string engine_binary() { return std::string(BACKSCROLL_BIN_DIR) + "/backscrolld"; }
std::string child_binary() { return std::string(BACKSCROLL_BIN_DIR) + "/engine_test_child"; }

Frame expect_ok(Result<Frame> result, std::string_view what) {
  if (!result) raise_failure(std::string(what) + " failed: " + result.error().describe());
  return std::move(*result);
}

Error expect_error(Result<Frame> result, std::string_view what) {
  if (result) {
    raise_failure(std::string(what) + " succeeded, but it must fail; answer " +
                  result->header.dump());
  }
  return result.error();
}

void wait_until(const std::function<bool()>& done, std::string_view what,
                std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      raise_failure("timed out waiting for " + std::string(what));
    }
    std::this_thread::sleep_for(5ms);
  }
}

control::ControlClient connect_client(const Places& places) {
  auto client = control::ControlClient::connect(places);
  if (!client) raise_failure("connect to the engine: " + client.error().describe());
  set_timeouts(client->fd(), kHangGuard);
  return std::move(*client);
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/bs-eng-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) raise_failure(std::string("mkdtemp: ") + std::strerror(errno));
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Tests may leave folders of other owners or modes behind: make them removable first.
  for (auto it = std::filesystem::recursive_directory_iterator(
           path_, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
  }
  std::filesystem::remove_all(path_, ec);
}

// ---- EngineProcess ------------------------------------------------------------------------

::testing::AssertionResult EngineProcess::start(EngineConfig config) {
  // A start after stop() (a restart) is a new engine to stop.
  if (pid_ > 0) return ::testing::AssertionFailure() << "start() while an engine runs";
  stopped_ = false;
  served_ = false;
  char tmpl[] = "/tmp/bs-eng-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    return ::testing::AssertionFailure() << "mkdtemp: " << std::strerror(errno);
  }
  const std::filesystem::path dir = temp_dirs_.emplace_back(tmpl);
  log_path_ = dir / "engine.log";
  places_ = Places::at(config.runtime_dir.empty() ? dir / "rt" : config.runtime_dir);

  std::vector<std::string> args{engine_binary()};
  args.insert(args.end(), config.args.begin(), config.args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    if (v.rfind("BACKSCROLL_RUNTIME_DIR=", 0) != 0 && v.rfind("BACKSCROLL_HOME=", 0) != 0)
      env.emplace_back(v);
  }
  env.push_back("BACKSCROLL_RUNTIME_DIR=" + places_.runtime_dir.string());
  env.push_back("BACKSCROLL_HOME=" + places_.state_dir.string());
  if (config.settings_yaml) {
    std::filesystem::create_directories(places_.state_dir);
    std::ofstream(places_.settings_path()) << *config.settings_yaml;
  }
  std::vector<char*> argv = c_strings(args);
  std::vector<char*> envp = c_strings(env);

  const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0)
    return ::testing::AssertionFailure() << "open log: " << std::strerror(errno);
  const pid_t parent = ::getpid();
  const std::optional<mode_t> mask = config.umask;
  const std::optional<std::uint64_t> address_space = config.address_space_limit;
  const bool ignore_sigchld = config.ignore_sigchld;
  const pid_t pid = ::fork();
  if (pid < 0) return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
  if (pid == 0) {
    // Async-signal-safe calls only: the test may have threads.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed test leaves no engine behind
    if (::getppid() != parent) ::_exit(126);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    // A launcher hands the daemon fds 0-2 only (as the CLI's autostart and systemd do).
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    if (mask) ::umask(*mask);
    if (address_space) {
      const rlimit limit{*address_space, *address_space};
      if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(125);
    }
    if (ignore_sigchld) ::signal(SIGCHLD, SIG_IGN);  // inherited across exec
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  pid_ = pid;
  if (!config.wait_ready) return ::testing::AssertionSuccess();

  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return ::testing::AssertionFailure()
             << "backscrolld exited during start-up (status " << status << "); log:\n"
             << log();
    }
    if (auto c = control::ControlClient::connect(places_)) {
      set_timeouts(c->fd(), kHangGuard);
      if (auto pong = c->call("ping"); pong) {
        if (pong->header.value("pid", 0) != pid_) {
          return ::testing::AssertionFailure()
                 << "ping answered by pid " << pong->header.value("pid", 0) << ", not " << pid_;
        }
        client_.emplace(std::move(*c));
        served_ = true;
        return ::testing::AssertionSuccess();
      }
    }
    std::this_thread::sleep_for(10ms);
  }
  return ::testing::AssertionFailure() << "backscrolld did not answer ping; log:\n" << log();
}

std::optional<int> EngineProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      client_.reset();
      return status;
    }
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(5ms);
  }
}

void EngineProcess::kill_hard() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  client_.reset();
}

void EngineProcess::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (pid_ > 0 && !served_) {
    // Never answered: nothing to shut down cleanly.
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  if (pid_ > 0) {
    client_.reset();
    auto c = control::ControlClient::connect(places_);
    if (!c) {
      ADD_FAILURE() << "teardown: cannot connect to the engine: " << c.error().describe();
    } else {
      set_timeouts(c->fd(), kHangGuard);
      if (auto r = c->call("shutdown"); !r) {
        ADD_FAILURE() << "teardown: shutdown failed: " << r.error().describe();
      }
    }
    const auto status = wait_exit(kHangGuard);
    if (!status) {
      ADD_FAILURE() << "teardown: backscrolld did not exit after shutdown; killing it";
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    } else {
      EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
          << "teardown: backscrolld wait status " << *status;
      EXPECT_FALSE(std::filesystem::exists(places_.socket_path()))
          << "teardown: the socket outlived the engine";
    }
  }
  if (::testing::Test::HasFailure() && !log_path_.empty()) {
    std::fprintf(stderr, "----- backscrolld log (%s) -----\n%s----- end of log -----\n",
                 log_path_.c_str(), log().c_str());
  }
  for (const std::filesystem::path& dir : temp_dirs_) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

EngineProcess::~EngineProcess() { stop(); }

std::string EngineProcess::log() const { return read_file(log_path_); }

control::ControlClient& EngineProcess::client() {
  if (!client_) client_.emplace(connect());
  return *client_;
}

Result<Frame> EngineProcess::try_call(std::string_view op, Json fields, std::string_view payload) {
  return client().call(op, std::move(fields), payload);
}

Frame EngineProcess::call(std::string_view op, Json fields, std::string_view payload) {
  const std::string what = std::string(op) + " " + fields.dump();
  return expect_ok(try_call(op, std::move(fields), payload), what);
}

Json EngineProcess::spawn(const std::string& actor, const std::vector<std::string>& argv,
                          Json extra) {
  extra["actor"] = actor;
  extra["argv"] = argv;
  return call("spawn", std::move(extra)).header;
}

Json EngineProcess::status(const std::string& actor) {
  const Json answer = call("status", {{"actor", actor}}).header;
  return answer.at("actors").at(0);
}

shm::RingAnnouncement EngineProcess::ring_of(const std::string& actor) {
  const Json a = status(actor);
  return {actor, pid_, a.at("header_fd"), a.at("data_fd"), a.at("nonce"), a.at("capacity")};
}

std::string EngineProcess::history(const std::string& actor, std::uint64_t from) {
  std::string out;
  for (;;) {
    Frame f = call("history", {{"actor", actor}, {"from", from}});
    out += f.payload;
    from = f.header.at("to").get<std::uint64_t>();
    if (!f.header.value("more", false)) return out;
  }
}

Json EngineProcess::wait_sealed(const std::string& actor, std::chrono::milliseconds timeout) {
  Json session;
  wait_until(
      [&] {
        const Json s = status(actor);
        if (s.at("state") != "idle" || s.at("sessions").empty()) return false;
        session = s.at("sessions").back();
        return session.at("sealed").get<bool>();
      },
      "actor " + actor + " to seal", timeout);
  return session;
}

void EngineProcess::wait_output(const std::string& actor, std::string_view needle,
                                std::chrono::milliseconds timeout) {
  std::string seen;
  try {
    wait_until(
        [&] {
          seen = history(actor, status(actor).at("floor").get<std::uint64_t>());
          return seen.find(needle) != std::string::npos;
        },
        "output '" + std::string(needle) + "' of " + actor, timeout);
  } catch (const std::runtime_error& e) {
    raise_failure(std::string(e.what()) + "; the output so far: '" + seen + "'");
  }
}

std::vector<std::string> EngineProcess::rings() const {
  std::vector<std::string> actors;
  if (pid_ <= 0) return actors;
  const std::string label = "/memfd:" + std::string(shm::RingSegments::kHeaderLabel);
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/fd", ec)) {
    std::error_code link_ec;
    std::string target = std::filesystem::read_symlink(entry.path(), link_ec).string();
    if (target.rfind(label, 0) != 0) continue;
    target.erase(0, label.size());
    if (const auto deleted = target.find(" (deleted)"); deleted != std::string::npos) {
      target.erase(deleted);
    }
    actors.push_back(std::move(target));
  }
  std::sort(actors.begin(), actors.end());
  return actors;
}

// ---- RawConnection ------------------------------------------------------------------------

RawConnection::RawConnection(const Places& places) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = places.socket_path().string();
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd_);
    raise_failure(std::string("connect: ") + std::strerror(err));
  }
  set_timeouts(fd_, kHangGuard);
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawConnection::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void RawConnection::finish_sending() { ::shutdown(fd_, SHUT_WR); }

std::optional<Frame> RawConnection::next_frame() {
  for (;;) {
    auto frame = decoder_.next();
    if (!frame) raise_failure("undecodable answer: " + frame.error().describe());
    if (*frame) return std::move(**frame);
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return std::nullopt;
    if (n < 0) {
      if (errno == EINTR) continue;
      raise_failure(std::string("recv: ") + std::strerror(errno));
    }
    decoder_.feed({buf, static_cast<std::size_t>(n)});
  }
}

void RawConnection::expect_error_then_close(Errc code) {
  auto frame = next_frame();
  ASSERT_TRUE(frame) << "the engine closed the connection without an error frame";
  auto error = control::error_from_response(frame->header);
  ASSERT_TRUE(error) << frame->header.dump();
  EXPECT_EQ(error->code, code) << error->describe();
  auto after = next_frame();
  EXPECT_FALSE(after) << "a frame after the error: " << after->header.dump();
}

std::string raw_frame(std::string_view header) {
  const auto n = static_cast<std::uint32_t>(header.size());
  std::string out{static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                  static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
  out += header;
  return out;
}

// ---- EventStream --------------------------------------------------------------------------

EventStream::EventStream(const Places& places) : client_(connect_client(places)) {
  expect_ok(client_.call("subscribe"), "subscribe");
}

Json EventStream::wait_for(std::string_view event, std::string_view actor,
                           std::chrono::milliseconds timeout) {
  auto matches = [&](const Json& e) {
    return e.value("event", "") == event && (actor.empty() || e.value("actor", "") == actor);
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (std::size_t i = 0;; ++i) {
    if (i < seen_.size()) {
      if (!taken_[i] && matches(seen_[i])) {
        taken_[i] = true;
        return seen_[i];
      }
      continue;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      raise_failure("timed out waiting for event '" + std::string(event) + "' of '" +
                    std::string(actor) + "'");
    }
    auto next = client_.next_event(left);
    if (!next) raise_failure("event stream: " + next.error().describe());
    if (*next) {
      seen_.push_back((*next)->header);
      taken_.push_back(false);
    }
    --i;  // look at the new one (or re-check the timeout)
  }
}

// ---- /proc --------------------------------------------------------------------------------

int count_fds(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

std::string describe_fds(pid_t pid) {
  std::string out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code lec;
    out += it->path().filename().string() + " -> " +
           std::filesystem::read_symlink(it->path(), lec).string() + "\n";
  }
  return out;
}

int count_threads(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::string comm = read_file(it->path() / "comm");
    if (comm.rfind("iou-", 0) == 0) continue;
    ++n;
  }
  return n;
}

long vm_rss_kb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

std::vector<pid_t> zombie_children(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream fields(stat_after_name(it->path() / "stat"));
    std::string state;
    long ppid = 0;
    if (!(fields >> state >> ppid)) continue;
    if (ppid == pid && state == "Z") out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

int run_program(const std::vector<std::string>& argv_in, std::string* output,
                std::chrono::milliseconds timeout) {
  std::vector<std::string> args = argv_in;
  std::vector<char*> argv = c_strings(args);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) raise_failure("pipe2 failed");
  const pid_t pid = ::fork();
  if (pid < 0) raise_failure("fork failed");
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    if (output) output->append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace backscroll::testing
