// Places: the engine and every tool derive the same socket, lock and state folders from the
// environment, so they meet without configuration.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "shm/places.hpp"

namespace backscroll {
namespace {

// Sets an environment variable for one scope, restoring the previous value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Places, SocketAndLockLiveInTheRuntimeDirectory) {
  const Places places = Places::at("/tmp/bs");
  EXPECT_EQ(places.socket_path(), std::filesystem::path("/tmp/bs/engine.sock"));
  EXPECT_EQ(places.lock_path(), std::filesystem::path("/tmp/bs/engine.lock"));
}

TEST(Places, PrefersBackscrollRuntimeDirThenXdgRuntimeDirThenTmp) {
  {
    ScopedEnv own("BACKSCROLL_RUNTIME_DIR", "/tmp/own");
    ScopedEnv xdg("XDG_RUNTIME_DIR", "/run/user/42");
    EXPECT_EQ(Places::from_environment().runtime_dir, std::filesystem::path("/tmp/own"));
  }
  {
    ScopedEnv own("BACKSCROLL_RUNTIME_DIR", "");
    ScopedEnv xdg("XDG_RUNTIME_DIR", "/run/user/42");
    EXPECT_EQ(Places::from_environment().runtime_dir,
              std::filesystem::path("/run/user/42/backscroll"));
  }
  {
    ScopedEnv own("BACKSCROLL_RUNTIME_DIR", nullptr);
    ScopedEnv xdg("XDG_RUNTIME_DIR", nullptr);
    EXPECT_EQ(Places::from_environment().runtime_dir,
              std::filesystem::path("/tmp/backscroll-" + std::to_string(::getuid())));
  }
}

TEST(Places, StateDirPrefersBackscrollHomeThenXdgStateHomeThenHome) {
  {
    ScopedEnv own("BACKSCROLL_HOME", "/srv/bs");
    ScopedEnv xdg("XDG_STATE_HOME", "/home/u/.state");
    EXPECT_EQ(Places::from_environment().state_dir, std::filesystem::path("/srv/bs"));
    EXPECT_EQ(Places::from_environment().settings_path(),
              std::filesystem::path("/srv/bs/settings.yaml"));
  }
  {
    ScopedEnv own("BACKSCROLL_HOME", "");
    ScopedEnv xdg("XDG_STATE_HOME", "/home/u/.state");
    EXPECT_EQ(Places::from_environment().state_dir,
              std::filesystem::path("/home/u/.state/backscroll"));
  }
  {
    ScopedEnv own("BACKSCROLL_HOME", nullptr);
    ScopedEnv xdg("XDG_STATE_HOME", nullptr);
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(Places::from_environment().state_dir,
              std::filesystem::path("/home/u/.local/state/backscroll"));
  }
}

TEST(Places, AtPutsTheStateDirBesideTheRuntimeDir) {
  EXPECT_EQ(Places::at("/tmp/t/rt").state_dir, std::filesystem::path("/tmp/t/state"));
}

}  // namespace
}  // namespace backscroll
