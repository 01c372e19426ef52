#include "tests/tools/cli_process.hpp"

#include "engine/term/utf8.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace backscroll::testing {
namespace {

// The test's environment with BACKSCROLL_RUNTIME_DIR and BACKSCROLL_HOME replaced.
std::vector<std::string> environment_for(const std::filesystem::path& runtime_dir) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    if (v.rfind("BACKSCROLL_RUNTIME_DIR=", 0) != 0 && v.rfind("BACKSCROLL_HOME=", 0) != 0)
      env.emplace_back(v);
  }
  env.push_back("BACKSCROLL_RUNTIME_DIR=" + runtime_dir.string());
  env.push_back("BACKSCROLL_HOME=" + Places::at(runtime_dir).state_dir.string());
  return env;
}

std::vector<std::string> command_line(const std::vector<std::string>& args) {
  std::vector<std::string> argv{cli_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::string join(const std::vector<std::string>& args) {
  std::string out = "backscroll";
  for (const auto& a : args) out += " " + a;
  return out;
}

// In the child after fork: async-signal-safe calls only, then exec.
[[noreturn]] void exec_cli(char* const* argv, char* const* envp, const char* cwd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed test leaves no CLI behind
  if (cwd != nullptr && ::chdir(cwd) != 0) ::_exit(126);
  ::syscall(SYS_close_range, 3U, ~0U, 0U);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  ::execve(argv[0], argv, envp);
  ::_exit(127);
}

void write_all_or_throw(int fd, std::string_view bytes, const char* what) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      raise_failure(std::string(what) + ": " + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

int ms_left(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

std::optional<int> wait_pid(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) raise_failure(std::string("waitpid: ") + std::strerror(errno));
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(5ms);
  }
}

std::string printable(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string cli_binary() { return std::string(BACKSCROLL_BIN_DIR) + "/backscroll"; }

int CliResult::exit_code() const { return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1; }

std::vector<std::string> CliResult::err_lines() const {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < err.size()) {
    const auto nl = err.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(err.substr(start));
      break;
    }
    lines.push_back(err.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

void PrintTo(const CliResult& result, std::ostream* os) {
  if (WIFEXITED(result.wait_status)) {
    *os << "exit " << WEXITSTATUS(result.wait_status);
  } else if (WIFSIGNALED(result.wait_status)) {
    *os << "killed by signal " << WTERMSIG(result.wait_status);
  } else {
    *os << "wait status " << result.wait_status;
  }
  *os << ", stdout '" << printable(result.out) << "', stderr '" << printable(result.err) << "'";
}

// ---- CliProcess ---------------------------------------------------------------------------

CliProcess::CliProcess(const std::vector<std::string>& args, const CliOptions& options) {
  std::vector<std::string> argv_strings = command_line(args);
  std::vector<std::string> env_strings = environment_for(options.runtime_dir);
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<char*> envp = c_strings(env_strings);
  const std::string cwd = options.cwd.string();

  int in[2] = {-1, -1}, out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) raise_failure("pipe2 failed");
  if (options.stdin_data) {
    if (::pipe2(in, O_CLOEXEC) != 0) raise_failure("pipe2 failed");
  } else {
    in[0] = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  pid_ = ::fork();
  if (pid_ < 0) raise_failure("fork failed");
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    exec_cli(argv.data(), envp.data(), cwd.empty() ? nullptr : cwd.c_str());
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (options.stdin_data) {
    // A command that exits without reading its stdin makes the write fail: ignore SIGPIPE
    // around it (the command's result says what happened).
    struct sigaction ignore {
    }, previous{};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &previous);
    std::string_view data = *options.stdin_data;
    while (!data.empty()) {
      const ssize_t n = ::write(in[1], data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;  // the command closed its stdin: it will say why
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    ::sigaction(SIGPIPE, &previous, nullptr);
    ::close(in[1]);
  }
}

CliProcess::~CliProcess() {
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool CliProcess::pump(int timeout_ms) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (out_fd_ < 0 && err_fd_ < 0) return false;
  const int n = ::poll(fds, 2, timeout_ms);
  if (n < 0 && errno != EINTR) raise_failure(std::string("poll: ") + std::strerror(errno));
  if (n <= 0) return true;
  int* fd_of[2] = {&out_fd_, &err_fd_};
  std::string* sink[2] = {&result_.out, &result_.err};
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd < 0 || fds[i].revents == 0) continue;
    char buf[65536];
    const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
    if (got > 0) {
      sink[i]->append(buf, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      ::close(*fd_of[i]);
      *fd_of[i] = -1;
    }
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

void CliProcess::wait_stdout(std::string_view needle) {
  const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
  while (result_.out.find(needle) == std::string::npos) {
    if (out_fd_ < 0) {
      raise_failure("the command ended before printing '" + std::string(needle) + "'; stdout '" +
                    printable(result_.out) + "', stderr '" + printable(result_.err) + "'");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      raise_failure("timed out waiting for '" + std::string(needle) + "' on stdout; so far '" +
                    printable(result_.out) + "'");
    }
    pump(ms_left(deadline));
  }
}

CliResult CliProcess::finish() {
  const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
  while (pump(ms_left(deadline))) {
    if (std::chrono::steady_clock::now() > deadline) {
      raise_failure("the command did not finish; stdout so far '" + printable(result_.out) +
                    "', stderr '" + printable(result_.err) + "'");
    }
  }
  const auto status = wait_pid(pid_, kHangGuard);
  if (!status) raise_failure("the command closed its output but did not exit");
  result_.wait_status = *status;
  pid_ = -1;
  return result_;
}

CliResult run_cli(const std::vector<std::string>& args, const CliOptions& options) {
  CliProcess process(args, options);
  try {
    return process.finish();
  } catch (const std::runtime_error& e) {
    raise_failure(join(args) + ": " + e.what());
  }
}

// ---- PtyCli -------------------------------------------------------------------------------

PtyCli::PtyCli(const std::vector<std::string>& args, const std::filesystem::path& runtime_dir,
               unsigned short cols, unsigned short rows) {
  std::vector<std::string> argv_strings = command_line(args);
  std::vector<std::string> env_strings = environment_for(runtime_dir);
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<char*> envp = c_strings(env_strings);

  winsize size{};
  size.ws_col = cols;
  size.ws_row = rows;
  emulator_ = std::make_unique<term::MirrorScreen>(cols, rows);
  if (::openpty(&master_, &slave_, nullptr, nullptr, &size) != 0) {
    raise_failure(std::string("openpty: ") + std::strerror(errno));
  }
  ::fcntl(master_, F_SETFD, FD_CLOEXEC);
  ::fcntl(slave_, F_SETFD, FD_CLOEXEC);
  ::fcntl(master_, F_SETFL, ::fcntl(master_, F_GETFL) | O_NONBLOCK);
  if (::tcgetattr(slave_, &original_) != 0) raise_failure("tcgetattr of the new terminal");
  pid_ = ::fork();
  if (pid_ < 0) raise_failure("fork failed");
  if (pid_ == 0) {
    // A session of its own with the terminal as its controlling terminal, as a login shell has.
    ::setsid();
    ::ioctl(slave_, TIOCSCTTY, 0);
    ::dup2(slave_, 0);
    ::dup2(slave_, 1);
    ::dup2(slave_, 2);
    exec_cli(argv.data(), envp.data(), nullptr);
  }
}

PtyCli::~PtyCli() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (master_ >= 0) ::close(master_);
  if (slave_ >= 0) ::close(slave_);
}

void PtyCli::type(std::string_view bytes) {
  write_all_or_throw(master_, bytes, "write to the pty");
}

void PtyCli::resize(unsigned short cols, unsigned short rows) {
  // As an emulator: what the CLI wrote so far is laid out at the old size, then the grid
  // changes, then the program hears of it.
  for (pollfd pending{master_, POLLIN, 0}; ::poll(&pending, 1, 0) > 0 && read_some(0);) {
  }
  emulator_->resize(cols, rows);
  winsize size{};
  size.ws_col = cols;
  size.ws_row = rows;
  if (::ioctl(master_, TIOCSWINSZ, &size) != 0) {
    raise_failure(std::string("TIOCSWINSZ: ") + std::strerror(errno));
  }
}

bool PtyCli::read_some(int timeout_ms) {
  pollfd p{master_, POLLIN, 0};
  const int n = ::poll(&p, 1, timeout_ms);
  if (n <= 0) return true;
  char buf[65536];
  const ssize_t got = ::read(master_, buf, sizeof buf);
  if (got > 0) {
    transcript_.append(buf, static_cast<std::size_t>(got));
    emulator_->feed(std::string_view(buf, static_cast<std::size_t>(got)));
    answer_queries();
    return true;
  }
  // The test holds the slave open, so EIO (every slave closed) does not happen; EAGAIN may.
  return got < 0 && (errno == EAGAIN || errno == EINTR);
}

void PtyCli::answer_queries() {
  static constexpr std::string_view kQueries[] = {"\x1b[5n", "\x1b[6n", "\x1b[c", "\x1b[0c"};
  for (;;) {
    std::size_t at = std::string::npos;
    std::string_view query;
    for (const std::string_view q : kQueries) {
      const std::size_t found = transcript_.find(q, query_scan_);
      if (found < at) {
        at = found;
        query = q;
      }
    }
    if (at == std::string::npos) break;
    std::string answer;
    if (query == "\x1b[5n") {
      answer = "\x1b[0n";
    } else if (query == "\x1b[6n") {
      const term::CursorState cursor = emulator_->cursor();
      answer =
          "\x1b[" + std::to_string(cursor.row + 1) + ";" + std::to_string(cursor.col + 1) + "R";
    } else {
      answer = "\x1b[?62;22c";
    }
    write_all_or_throw(master_, answer, "answer a query");
    answers_.push_back(answer);
    query_scan_ = at + query.size();
  }
  // A query cut by the end of this read is found whole after the next one.
  if (transcript_.size() > 3) query_scan_ = std::max(query_scan_, transcript_.size() - 3);
}

void PtyCli::read_for(std::chrono::milliseconds how_long) {
  const auto deadline = std::chrono::steady_clock::now() + how_long;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!read_some(ms_left(deadline))) return;
  }
}

void PtyCli::wait_for(std::string_view needle, std::size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
  while (count_of(transcript_, needle) < count) {
    if (std::chrono::steady_clock::now() > deadline) {
      raise_failure("timed out waiting for " + std::to_string(count) + " x '" + printable(needle) +
                    "' on the terminal; it shows '" + printable(transcript_) + "'");
    }
    if (!read_some(ms_left(deadline))) {
      raise_failure("the terminal closed; it showed '" + printable(transcript_) + "'");
    }
  }
}

namespace {

void append_cell(std::string& text, const term::Cell& cell) {
  if (cell.kind == term::Cell::Kind::continuation) return;
  if (cell.kind == term::Cell::Kind::erased) {
    text += ' ';
    return;
  }
  for (int i = 0; i < cell.nchars; ++i)
    term::append_utf8(text, cell.chars[static_cast<std::size_t>(i)]);
}

}  // namespace

std::string screen_rows_text(const term::MirrorScreen& screen) {
  std::string text;
  for (int r = 0; r < screen.rows(); ++r) {
    if (r > 0) text += '\n';
    for (int c = 0; c < screen.cols(); ++c) append_cell(text, screen.cell(r, c));
  }
  return text;
}

std::string terminal_text(const term::MirrorScreen& screen) {
  std::string text;
  std::vector<term::Cell> row;
  for (std::size_t line = 0; line < screen.scrollback_lines(); ++line) {
    row.resize(static_cast<std::size_t>(screen.scrollback_cols(line)));
    screen.scrollback_row(line, row);
    for (const term::Cell& cell : row) append_cell(text, cell);
    text += '\n';
  }
  return text + screen_rows_text(screen);
}

std::string PtyCli::screen_text() const { return screen_rows_text(*emulator_); }

void PtyCli::wait_for_screen(std::string_view needle, std::size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
  while (count_of(screen_text(), needle) < count) {
    if (std::chrono::steady_clock::now() > deadline) {
      raise_failure("timed out waiting for " + std::to_string(count) + " x '" + printable(needle) +
                    "' on the screen; it shows\n" + screen_text());
    }
    if (!read_some(ms_left(deadline))) {
      raise_failure("the terminal closed; its screen shows\n" + screen_text());
    }
  }
}

int PtyCli::wait_exit() {
  const auto status = wait_pid(pid_, kHangGuard);
  if (!status) {
    raise_failure("the attached CLI did not exit; the terminal shows '" + printable(transcript_) +
                  "'");
  }
  pid_ = -1;
  return *status;
}

termios PtyCli::mode() const {
  termios now{};
  if (::tcgetattr(slave_, &now) != 0) raise_failure("tcgetattr of the terminal");
  return now;
}

// ---- helpers ------------------------------------------------------------------------------

std::size_t count_of(std::string_view haystack, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string_view::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

::testing::AssertionResult FailsWithOneLine(const CliResult& result, int code,
                                            std::string_view prefix) {
  std::ostringstream what;
  PrintTo(result, &what);
  if (result.exit_code() != code) {
    return ::testing::AssertionFailure() << "expected exit " << code << "; got " << what.str();
  }
  if (!result.out.empty()) {
    return ::testing::AssertionFailure() << "expected nothing on stdout; got " << what.str();
  }
  if (result.err.empty() || result.err.back() != '\n' ||
      result.err.find('\n') != result.err.size() - 1) {
    return ::testing::AssertionFailure() << "expected one line on stderr; got " << what.str();
  }
  if (result.err.rfind(prefix, 0) != 0) {
    return ::testing::AssertionFailure()
           << "expected stderr to start with '" << prefix << "'; got " << what.str();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Succeeds(const CliResult& result) {
  if (result.exit_code() == 0 && result.err.empty()) return ::testing::AssertionSuccess();
  std::ostringstream what;
  PrintTo(result, &what);
  return ::testing::AssertionFailure() << "expected exit 0 and no stderr; got " << what.str();
}

// ---- CliTest ------------------------------------------------------------------------------

void CliTest::SetUp() { ASSERT_TRUE(engine_.start(engine_config())); }

CliResult CliTest::cli(std::vector<std::string> args, std::optional<std::string> stdin_data) {
  args.insert(args.begin(), "--no-autostart");
  return run_cli(args, CliOptions{runtime_dir(), std::move(stdin_data), {}});
}

}  // namespace backscroll::testing
