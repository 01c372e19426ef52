// Deleting an actor (docs/transcripts.md): <actor>.scrollback (the mirror's plain text: history,
// then the screen) and <actor>.snapshot.json (name, session, cwd, argv, size, cursors, times;
// no environment) under $BACKSCROLL_HOME/deleted, 0600 in a 0700 folder, written before the
// delete is answered; a failed write is reported in the answer and the deletion goes on; files
// older than retention_days are purged at start.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <utime.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::perms mode_of(const fs::path& p) { return fs::status(p).permissions() & fs::perms::mask; }

TEST(Deletion, LeavesTheScrollbackAndTheActorsFactsBehind) {
  EngineProcess engine;
  EngineConfig config;
  config.umask = 0;  // the files are private whatever the umask
  ASSERT_TRUE(engine.start(config));
  TempDir cwd;
  engine.spawn("work", {"sh", "-c", "printf 'line 1\\nline 2\\n\\033[1;31mred\\033[m line 3\\n'"},
               {{"cwd", cwd.path().string()},
                {"cols", 100},
                {"rows", 30},
                {"env", {{"SECRET_TOKEN", "hunter2"}}}});
  const Json sealed = engine.wait_sealed("work");
  const Frame deleted = engine.call("delete", {{"actor", "work"}});
  const fs::path dir = engine.places().deleted_dir();
  EXPECT_EQ(deleted.header.at("snapshot"), (dir / "work.snapshot.json").string());
  EXPECT_FALSE(deleted.header.contains("snapshot_error"));
  EXPECT_EQ(engine.call("list").header.at("actors").size(), 0u);

  EXPECT_EQ(mode_of(dir), fs::perms::owner_all);
  for (const char* file : {"work.scrollback", "work.snapshot.json"}) {
    EXPECT_EQ(mode_of(dir / file), fs::perms::owner_read | fs::perms::owner_write) << file;
  }
  EXPECT_EQ(read_text(dir / "work.scrollback"), "line 1\nline 2\nred line 3\n");
  const Json json = Json::parse(read_text(dir / "work.snapshot.json"));
  EXPECT_EQ(json.at("name"), "work");
  EXPECT_EQ(json.at("cwd"), cwd.path().string());
  EXPECT_EQ(json.at("argv").at(0), "sh");
  EXPECT_EQ(json.at("cols"), 100);
  EXPECT_EQ(json.at("rows"), 30);
  EXPECT_EQ(json.at("committed"), sealed.at("end"));
  EXPECT_EQ(json.at("floor"), 0);
  EXPECT_EQ(json.at("scrollback"), "work.scrollback");
  ASSERT_EQ(json.at("sessions").size(), 1u);
  EXPECT_EQ(json.at("sessions")[0].at("exit_code"), 0);
  EXPECT_GE(json.at("deleted_ms").get<std::int64_t>(), json.at("created_ms").get<std::int64_t>());
  EXPECT_FALSE(json.contains("env"));
  EXPECT_EQ(read_text(dir / "work.snapshot.json").find("hunter2"), std::string::npos);
}

TEST(Deletion, AFailedWriteIsReportedAndTheDeletionGoesOn) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start());
  fs::create_directories(engine.places().state_dir);
  std::ofstream(engine.places().deleted_dir()) << "a file where the folder should be";
  engine.spawn("work", {"sh", "-c", "echo hi"});
  engine.wait_sealed("work");
  const Frame deleted = engine.call("delete", {{"actor", "work"}});
  EXPECT_TRUE(deleted.header.at("snapshot_error").is_string()) << deleted.header;
  EXPECT_EQ(engine.call("list").header.at("actors").size(), 0u);
}

TEST(Deletion, FilesOlderThanTheRetentionArePurged) {
  TempDir dir;
  const Places places = Places::at(dir.path() / "rt");
  fs::create_directories(places.deleted_dir());
  const auto age = [&](const std::string& file, std::chrono::hours hours) {
    std::ofstream(places.deleted_dir() / file) << "x";
    const auto when = std::chrono::system_clock::now() - hours;
    const time_t t = std::chrono::system_clock::to_time_t(when);
    const utimbuf times{t, t};
    ASSERT_EQ(::utime((places.deleted_dir() / file).c_str(), &times), 0);
  };
  age("old.scrollback", std::chrono::hours(49));
  age("old.snapshot.json", std::chrono::hours(49));
  age("young.snapshot.json", std::chrono::hours(47));
  // Enough old files that a purge still running when the engine first answers is seen.
  for (int i = 0; i < 2000; ++i) age("older-" + std::to_string(i) + ".scrollback", 72h);
  EngineProcess engine;
  EngineConfig config;
  config.runtime_dir = places.runtime_dir;
  config.settings_yaml = "retention_days: 2\n";
  ASSERT_TRUE(engine.start(config));
  EXPECT_FALSE(fs::exists(places.deleted_dir() / "old.scrollback"));
  EXPECT_FALSE(fs::exists(places.deleted_dir() / "old.snapshot.json"));
  EXPECT_TRUE(fs::exists(places.deleted_dir() / "young.snapshot.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(places.deleted_dir()), {}), 1);
}

}  // namespace
}  // namespace backscroll::testing
