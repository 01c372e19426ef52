// write_file_durably: the small files that must never be seen half written (actor record, a
// clear's floor, deletion snapshots) are written to a new temporary file and renamed into place.
// - Whatever lies under the temporary name (a crash's leftover, a symlink, a FIFO) is replaced,
//   never written through: a symlink's target is untouched, a FIFO never blocks the write.
// - The file is 0600 whatever the umask; no temporary file is left behind.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "engine/store/durable_file.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class DurableFile : public ::testing::Test {
 protected:
  fs::path target() const { return dir_.path() / "actor.json"; }
  fs::path temporary() const { return dir_.path() / "actor.json.tmp"; }
  void write_and_check(const std::string& text) {
    ASSERT_TRUE(store::write_file_durably(target(), text));
    EXPECT_EQ(contents(target()), text);
    EXPECT_FALSE(fs::exists(fs::symlink_status(temporary())));
    EXPECT_EQ(fs::status(target()).permissions() & fs::perms::mask,
              fs::perms::owner_read | fs::perms::owner_write);
  }
  TempDir dir_;
};

TEST_F(DurableFile, ALeftoverTemporaryFileIsReplacedNotAppendedTo) {
  std::ofstream(temporary()) << "a much longer leftover of a write a crash interrupted";
  write_and_check("{\"new\":1}");
}

TEST_F(DurableFile, ASymlinkUnderTheTemporaryNameIsNeverWrittenThrough) {
  const fs::path victim = dir_.path() / "victim";
  std::ofstream(victim) << "untouched";
  fs::create_symlink(victim, temporary());
  write_and_check("{\"new\":2}");
  EXPECT_EQ(contents(victim), "untouched");
  fs::create_symlink(dir_.path() / "nowhere", temporary());  // dangling: nothing created there
  write_and_check("{\"new\":3}");
  EXPECT_FALSE(fs::exists(dir_.path() / "nowhere"));
}

TEST_F(DurableFile, AFifoUnderTheTemporaryNameNeverBlocksTheWrite) {
  ASSERT_EQ(::mkfifo(temporary().c_str(), 0600), 0);
  write_and_check("{\"new\":4}");
}

TEST_F(DurableFile, TheFileIsOwnerOnlyWhateverTheUmask) {
  const mode_t old = ::umask(0);
  write_and_check("{\"new\":5}");
  ::umask(old);
}

}  // namespace
}  // namespace backscroll::testing
