#include "tests/engine/other_user.hpp"

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace backscroll::testing {
namespace {

// In a forked child: become kOtherUser, run `body`, write its report (then a NUL) to `fd`.
std::string become_other_user_and_run(const std::function<std::string()>& body) {
  if (::setgroups(0, nullptr) != 0 || ::setgid(kOtherUser) != 0 || ::setuid(kOtherUser) != 0) {
    return std::string("cannot become uid ") + std::to_string(kOtherUser) + ": " +
           std::strerror(errno);
  }
  return body();
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Reads up to a NUL or EOF.
std::string read_report(int fd) {
  std::string report;
  char c;
  for (;;) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\0') break;
    report += c;
  }
  return report;
}

}  // namespace

bool can_act_as_another_user() { return ::geteuid() == 0; }

std::string as_other_user(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string report = become_other_user_and_run(body);
    write_all(fds[1], report);
    ::_exit(report.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string report = read_report(fds[0]);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (report.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    report = "the child died: wait status " + std::to_string(status);
  }
  return report;
}

OtherUserProcess::OtherUserProcess(const std::function<std::string()>& body) {
  int report_pipe[2];
  int release_pipe[2];
  if (::pipe(report_pipe) != 0 || ::pipe(release_pipe) != 0) {
    report_ = "pipe failed";
    return;
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    report_ = "fork failed";
    return;
  }
  if (pid_ == 0) {
    ::close(report_pipe[0]);
    ::close(release_pipe[1]);
    write_all(report_pipe[1], become_other_user_and_run(body) + '\0');
    char c;
    while (::read(release_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  ::close(report_pipe[1]);
  ::close(release_pipe[0]);
  release_fd_ = release_pipe[1];
  report_ = read_report(report_pipe[0]);
  ::close(report_pipe[0]);
}

OtherUserProcess::~OtherUserProcess() {
  if (release_fd_ >= 0) ::close(release_fd_);  // EOF ends the child's wait
  if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
}

}  // namespace backscroll::testing
