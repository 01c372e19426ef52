// LeaseFile and resume_after: the durable cursor lease that bounds what a dead engine can have
// published (docs/transcripts.md, "Cursors after a crash").
// - The newest written lease reads back; a write torn anywhere in its slot leaves the one before.
// - No file, or an empty one, is no lease; a file whose slots are all damaged is data_lost, and
//   a writer overwrites it slot by slot. The file is created 0600 and never through a symlink.
// - resume_after: an open lease continues at its limit, an unreadable one far past any lease,
//   a closed one (or none) at the stream's recorded end; everything from the transcript's end
//   to there is lost, with the reason.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/settings.hpp"
#include "engine/store/lease_file.hpp"
#include "engine/transcript_writer.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

namespace fs = std::filesystem;
using store::CursorLease;
using store::LeaseFile;

class LeaseFileTest : public ::testing::Test {
 protected:
  fs::path file() const { return dir_.path() / std::string(LeaseFile::kFileName); }
  std::optional<CursorLease> read_ok() const {
    auto lease = LeaseFile::read(dir_.path());
    EXPECT_TRUE(lease) << lease.error().describe();
    return lease ? *lease : std::nullopt;
  }
  // Overwrites `n` bytes at `offset` of the file with `byte`.
  void scribble(off_t offset, std::size_t n, char byte) const {
    const int fd = ::open(file().c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const std::string bytes(n, byte);
    ASSERT_EQ(::pwrite(fd, bytes.data(), n, offset), static_cast<ssize_t>(n));
    ::close(fd);
  }
  TempDir dir_;
};

TEST_F(LeaseFileTest, TheNewestLeaseReadsBackAndAWriteTornAnywhereLeavesTheOneBefore) {
  EXPECT_EQ(read_ok(), std::nullopt) << "no file: no lease";
  auto file = LeaseFile::open(dir_.path());
  ASSERT_TRUE(file) << file.error().describe();
  EXPECT_EQ(read_ok(), std::nullopt) << "created, never written: no lease";
  EXPECT_EQ(fs::status(this->file()).permissions() & fs::perms::mask,
            fs::perms::owner_read | fs::perms::owner_write);
  const CursorLease first{Cursor{1000}, true};
  const CursorLease second{Cursor{1u << 30}, true};
  ASSERT_TRUE(file->write(first));
  EXPECT_EQ(read_ok(), first);
  ASSERT_TRUE(file->write(second));
  EXPECT_EQ(read_ok(), second);
  // In a new file the second lease sits in slot 0 (sequence 2); tearing any byte of it leaves
  // the first.
  for (off_t at = 0; at < static_cast<off_t>(LeaseFile::kSlotBytes); ++at) {
    SCOPED_TRACE(at);
    fs::remove(this->file());
    auto fresh = LeaseFile::open(dir_.path());
    ASSERT_TRUE(fresh);
    ASSERT_TRUE(fresh->write(first));   // sequence 1 -> slot 1
    ASSERT_TRUE(fresh->write(second));  // sequence 2 -> slot 0
    EXPECT_EQ(read_ok(), second);
    scribble(at, 1, '\x5a');
    EXPECT_EQ(read_ok(), first);
  }
}

TEST_F(LeaseFileTest, ALeaseWithNoValidSlotIsDataLostAndAWriterRepairsIt) {
  {
    std::ofstream out(file());
    out << std::string(5000, '\x11');
  }
  const auto damaged = LeaseFile::read(dir_.path());
  ASSERT_FALSE(damaged);
  EXPECT_EQ(damaged.error().code, Errc::data_lost);
  auto file = LeaseFile::open(dir_.path());
  ASSERT_TRUE(file) << file.error().describe();
  const CursorLease closed{Cursor{77}, false};
  ASSERT_TRUE(file->write(closed));
  EXPECT_EQ(read_ok(), closed);
}

TEST_F(LeaseFileTest, NeverThroughASymlinkNorFromSomethingElseThanAFile) {
  const fs::path elsewhere = dir_.path() / "elsewhere";
  fs::create_symlink(elsewhere, file());
  EXPECT_FALSE(LeaseFile::read(dir_.path()));
  EXPECT_FALSE(LeaseFile::open(dir_.path()));
  EXPECT_FALSE(fs::exists(elsewhere)) << "nothing created at the link's target";
  fs::remove(file());
  ASSERT_EQ(::mkfifo(file().c_str(), 0600), 0);
  EXPECT_FALSE(LeaseFile::read(dir_.path())) << "a FIFO is refused (and never blocks)";
}

TEST_F(LeaseFileTest, AFailingWriteOrSyncKeepsTheLeaseBefore) {
  for (const bool sync : {false, true}) {
    auto plan =
        std::make_shared<store::IoFaultPlan>(sync ? store::IoOp::sync : store::IoOp::write, 2);
    fs::remove(file());
    auto file = LeaseFile::open(dir_.path(), plan);
    ASSERT_TRUE(file);
    const CursorLease first{Cursor{10}, true};
    ASSERT_TRUE(file->write(first));
    const auto failed = file->write({Cursor{20}, true});
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code, Errc::io_error);
    if (!sync) {
      EXPECT_EQ(read_ok(), first);  // a failed sync may or may not have reached the disk
    }
    const CursorLease third{Cursor{30}, false};
    ASSERT_TRUE(file->write(third));
    EXPECT_EQ(read_ok(), third);
  }
}

TEST(ResumeAfter, AnOpenLeaseContinuesAtItsLimitAndTheStretchBeforeIsLost) {
  const auto r = store::resume_after(Cursor{500}, Cursor{400},
                                     std::optional<CursorLease>{CursorLease{Cursor{9000}, true}});
  EXPECT_EQ(r.next, Cursor{9000});
  ASSERT_TRUE(r.lost);
  EXPECT_EQ(r.lost->first, Cursor{500});
  EXPECT_EQ(r.lost->second, Cursor{9000});
  EXPECT_NE(r.reason.find("unclean stop"), std::string::npos) << r.reason;
}

TEST(ResumeAfter, AClosedLeaseOrNoneContinuesExactlyWhenTheTranscriptHoldsEverything) {
  for (const auto& lease : {std::optional<CursorLease>{},
                            std::optional<CursorLease>{CursorLease{Cursor{500}, false}}}) {
    const auto r = store::resume_after(Cursor{500}, Cursor{500}, lease);
    EXPECT_EQ(r.next, Cursor{500});
    EXPECT_FALSE(r.lost);
  }
  // A transcript shorter than the sealed end it recorded lost its tail (a disk that lied).
  const auto short_tail = store::resume_after(
      Cursor{300}, Cursor{450}, std::optional<CursorLease>{CursorLease{Cursor{500}, false}});
  EXPECT_EQ(short_tail.next, Cursor{500});
  ASSERT_TRUE(short_tail.lost);
  EXPECT_EQ(short_tail.lost->first, Cursor{300});
}

TEST(ResumeAfter, AnUnreadableLeaseContinuesPastAnyLeaseAnEngineGrants) {
  const Result<std::optional<CursorLease>> unreadable = fail(Errc::data_lost, "no slot checks out");
  const auto r = store::resume_after(Cursor{500}, Cursor{600}, unreadable);
  EXPECT_EQ(r.next, Cursor{600} + LeaseFile::kUnreadableLeaseJump);
  // Rings are at most Settings::kMaxNumber bytes (per_actor_bytes is capped there).
  EXPECT_GT(LeaseFile::kUnreadableLeaseJump,
            1000 * engine::TranscriptWriter::lease_bytes(engine::Settings::kMaxNumber));
  ASSERT_TRUE(r.lost);
  EXPECT_EQ(r.lost->first, Cursor{500});
  EXPECT_NE(r.reason.find("no slot checks out"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace backscroll::testing
