// A second local user for the tests of what another user can and cannot do (docs/security.md):
// uid/gid 65534 ("nobody"). Switching user needs root; tests that need it skip otherwise (CI
// runs as root).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace backscroll::testing {

inline constexpr uid_t kOtherUser = 65534;

// True when this process may act as another user.
bool can_act_as_another_user();

// Runs `body` in a child process as kOtherUser; returns what it reports (empty means it saw
// everything it expected), or why the child could not run it.
std::string as_other_user(const std::function<std::string()>& body);

// A child process running as kOtherUser that stays alive (so what it made belongs to a live
// process) until this object goes away.
class OtherUserProcess {
 public:
  // `body` runs as kOtherUser and returns its report; then the child waits for the end.
  explicit OtherUserProcess(const std::function<std::string()>& body);
  OtherUserProcess(const OtherUserProcess&) = delete;
  OtherUserProcess& operator=(const OtherUserProcess&) = delete;
  ~OtherUserProcess();
  // What `body` reported (empty: it did everything it meant to).
  const std::string& report() const noexcept { return report_; }
  pid_t pid() const noexcept { return pid_; }

 private:
  pid_t pid_ = -1;
  int release_fd_ = -1;
  std::string report_;
};

}  // namespace backscroll::testing
