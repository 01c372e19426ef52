// TranscriptStore (engine/transcript_store.hpp): the durable transcript's files. Round trips,
// retention boundaries (rapidcheck), torn tails, sessions, permissions whatever the umask.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "engine/transcript_store.hpp"

namespace backscroll::testing {
namespace {

using engine::TranscriptOptions;
using engine::TranscriptStore;

class TempFolder {
 public:
  TempFolder() {
    char tmpl[] = "/tmp/bs-transcript-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempFolder() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string stream_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

// Everything from oldest() to end(), read in small pieces.
std::string read_all(const TranscriptStore& t) {
  std::string out;
  char buf[777];
  for (Cursor at = t.oldest(); at < t.end();) {
    auto n = t.read(at, buf);
    EXPECT_TRUE(n) << n.error().describe();
    if (!n || *n == 0) break;
    out.append(buf, *n);
    at = at + *n;
  }
  return out;
}

TranscriptStore opened(const std::filesystem::path& folder, TranscriptOptions o = {}) {
  auto t = TranscriptStore::open(folder, o);
  if (!t) throw std::runtime_error(t.error().describe());
  return std::move(*t);
}

TEST(TranscriptStore, KeepsEveryByteAcrossSegmentsAndReopens) {
  TempFolder dir;
  const std::string s = stream_bytes(300'000, 1);
  {
    TranscriptStore t = opened(dir.path() / "a", {1u << 30, 64 * 1024});
    for (std::size_t at = 0; at < s.size(); at += 10'000)
      ASSERT_TRUE(t.append(Cursor{at}, 7, 1, std::span(s).subspan(at, 10'000)));
    ASSERT_TRUE(t.sync());
    EXPECT_EQ(t.segments().size(), 5u);  // 64 KiB each, the last one partly
    EXPECT_EQ(read_all(t), s);
  }
  const TranscriptStore again = opened(dir.path() / "a", {1u << 30, 64 * 1024});
  EXPECT_EQ(again.oldest(), Cursor{0});
  EXPECT_EQ(again.end(), Cursor{s.size()});
  EXPECT_EQ(again.segments().front().epoch, 7u);
  EXPECT_EQ(read_all(again), s);
}

TEST(TranscriptStore, ASessionOrACursorJumpStartsANewSegment) {
  TempFolder dir;
  TranscriptStore t = opened(dir.path());
  ASSERT_TRUE(t.append(Cursor{100}, 1, 1, std::string_view("first")));
  ASSERT_TRUE(t.append(Cursor{105}, 1, 2, std::string_view("second")));
  ASSERT_TRUE(t.append(Cursor{200}, 1, 2, std::string_view("after a clear")));
  ASSERT_EQ(t.segments().size(), 3u);
  EXPECT_EQ(t.segments()[1].session, 2u);
  EXPECT_EQ(t.segments()[2].start, Cursor{200});
  char buf[64];
  auto gap = t.read(Cursor{150}, buf);  // cleared bytes are not in the transcript
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().code, Errc::cursor_expired);
  auto n = t.read(Cursor{105}, buf);
  ASSERT_TRUE(n);
  EXPECT_EQ(std::string(buf, *n), "second");  // up to the end of its segment
  EXPECT_EQ(t.read(Cursor{213}, buf).value(), 0u);  // the end
  EXPECT_EQ(t.read(Cursor{214}, buf).error().code, Errc::cursor_in_future);
  EXPECT_EQ(t.append(Cursor{150}, 1, 2, std::string_view("x")).error().code, Errc::bad_request);
}

// Retention with random write sizes and limits: what is retained is always the newest bytes,
// at least the limit (or everything written), never more than the limit plus one segment; a
// cursor before it is expired, with the oldest retained cursor.
RC_GTEST_PROP(TranscriptStore, RetentionKeepsTheNewestBytesWithinOneSegment, ()) {
  TempFolder dir;
  const auto retain = *rc::gen::inRange<std::uint64_t>(1, 200'000);
  // At least 1 KiB: a byte-sized segment turns each append into thousands of files, and one
  // generated case (seed 12521633787728486111) created millions and ran past ctest's 300 s.
  // Appends still range from far below to far above a segment.
  const auto segment = *rc::gen::inRange<std::uint64_t>(1024, 50'000);
  const auto sizes = *rc::gen::container<std::vector<std::size_t>>(rc::gen::inRange<std::size_t>(1, 40'000));
  TranscriptStore t = opened(dir.path(), {retain, segment});
  const std::string s = stream_bytes(std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}), 2);
  std::size_t at = 0;
  for (std::size_t n : sizes) {
    RC_ASSERT(t.append(Cursor{at}, 1, 1, std::span(s).subspan(at, n)).has_value());
    at += n;
    const std::uint64_t kept = t.end() - t.oldest();
    RC_ASSERT(t.end() == Cursor{at});
    RC_ASSERT(kept >= std::min<std::uint64_t>(retain, at));
    RC_ASSERT(kept <= retain + segment);
    RC_ASSERT(t.bytes() == kept);
  }
  if (at == 0) return;
  RC_ASSERT(read_all(t) == s.substr(static_cast<std::size_t>(value(t.oldest()))));
  if (t.oldest() > Cursor{0}) {
    char c;
    const auto expired = t.read(t.oldest() - 1, std::span(&c, 1));
    RC_ASSERT(!expired && expired.error().code == Errc::cursor_expired);
    RC_ASSERT(expired.error().cursor == value(t.oldest()));
  }
}

TEST(TranscriptStore, ATornTailIsCutAtTheLastWholeRecord) {
  TempFolder dir;
  const std::string s = stream_bytes(5000, 3);
  std::filesystem::path file;
  {
    TranscriptStore t = opened(dir.path());
    ASSERT_TRUE(t.append(Cursor{0}, 1, 1, std::span(s).first(3000)));
    ASSERT_TRUE(t.append(Cursor{3000}, 1, 1, std::span(s).subspan(3000)));
    file = t.segments().back().path;
  }
  // The engine died writing the second record: its last 100 bytes never reached the file.
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 100);
  {
    TranscriptStore t = opened(dir.path());
    EXPECT_EQ(t.end(), Cursor{3000});
    EXPECT_EQ(read_all(t), s.substr(0, 3000));
    // Appending goes on right after it, and the next open sees both.
    ASSERT_TRUE(t.append(Cursor{3000}, 1, 1, std::span(s).subspan(3000)));
  }
  // Garbage after the last record (a record header with a bad CRC) is cut too.
  { std::ofstream(file, std::ios::app) << std::string("\x10\0\0\0garbagegarbagegarbage", 26); }
  const TranscriptStore t = opened(dir.path());
  EXPECT_EQ(t.end(), Cursor{5000});
  EXPECT_EQ(read_all(t), s);
  EXPECT_EQ(std::filesystem::file_size(file),
            TranscriptStore::kHeaderBytes + 2 * TranscriptStore::kRecordHeaderBytes + 5000);
}

TEST(TranscriptStore, ASegmentLeftWithoutARecordIsReplaced) {
  TempFolder dir;
  std::filesystem::path file;
  {
    TranscriptStore t = opened(dir.path());
    ASSERT_TRUE(t.append(Cursor{40}, 1, 1, std::string_view("x")));
    file = t.segments().back().path;
  }
  // The engine died after writing the header of a segment at cursor 40, before its record.
  std::filesystem::resize_file(file, TranscriptStore::kHeaderBytes);
  TranscriptStore t = opened(dir.path());
  EXPECT_EQ(t.end(), Cursor{40});
  ASSERT_TRUE(t.append(Cursor{40}, 1, 2, std::string_view("new session")));
  ASSERT_EQ(t.segments().size(), 1u);
  EXPECT_EQ(t.segments()[0].session, 2u);
  EXPECT_EQ(read_all(opened(dir.path())), "new session");
}

TEST(TranscriptStore, FilesAre0600AndFolders0700WhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{022}, mode_t{077}, mode_t{0277}}) {
    TempFolder dir;
    const mode_t old = ::umask(mask);
    {
      TranscriptStore t = opened(dir.path() / "actors" / "sh");
      ASSERT_TRUE(t.append(Cursor{0}, 1, 1, std::string_view("secret")));
    }
    ::umask(old);
    struct stat st {};
    ASSERT_EQ(::stat((dir.path() / "actors" / "sh").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u) << "umask " << mask;
    for (const auto& e : std::filesystem::directory_iterator(dir.path() / "actors" / "sh")) {
      ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & 07777, 0600u) << "umask " << mask;
    }
  }
}

TEST(TranscriptStore, ClearDeletesEverySegmentAndAppendingStartsAgain) {
  TempFolder dir;
  TranscriptStore t = opened(dir.path());
  ASSERT_TRUE(t.append(Cursor{0}, 1, 1, std::string_view("before")));
  ASSERT_TRUE(t.clear());
  EXPECT_TRUE(t.empty());
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  ASSERT_TRUE(t.append(Cursor{6}, 1, 1, std::string_view("after")));
  EXPECT_EQ(read_all(opened(dir.path())), "after");
}

TEST(TranscriptStore, AForeignFileNamedLikeASegmentIsAnError) {
  TempFolder dir;
  std::ofstream(dir.path() / "0000000000000000.seg") << "not a transcript segment at all, no";
  std::ofstream(dir.path() / "notes.txt") << "left alone";
  auto t = TranscriptStore::open(dir.path(), {});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, Errc::io_error);
}

}  // namespace
}  // namespace backscroll::testing
