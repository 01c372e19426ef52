// TranscriptStore (engine/store/transcript_store.hpp): the durable transcript's files. Round trips,
// retention boundaries (rapidcheck), torn tails, sessions, permissions whatever the umask.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "engine/store/annex_file.hpp"
#include "engine/store/crc32c.hpp"
#include "engine/store/transcript_store.hpp"

namespace backscroll::testing {
namespace {

using store::TranscriptOptions;
using store::TranscriptStore;

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

// A transcript of one segment holding `text` from cursor `at`; the segment's path.
std::filesystem::path one_segment(const std::filesystem::path& folder, Cursor at,
                                  std::string_view text) {
  TranscriptStore t = opened(folder);
  if (!t.append(at, 1, 1, text)) throw std::runtime_error("append failed");
  return t.segments().back().path;
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
  EXPECT_EQ(std::string(buf, *n), "second");        // up to the end of its segment
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
  const auto sizes =
      *rc::gen::container<std::vector<std::size_t>>(rc::gen::inRange<std::size_t>(1, 40'000));
  TranscriptStore t = opened(dir.path(), {retain, segment});
  const std::string s =
      stream_bytes(std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}), 2);
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

// A disk that fills in the middle of a record (here the file size limit, which makes the
// record's writev short and the next one fail): the append reports the error, and the next
// open keeps every whole record and cuts the partial one.
TEST(TranscriptStore, ADiskFullInTheMiddleOfARecordFailsTheAppendAndKeepsTheWholeRecords) {
  TempFolder dir;
  const std::string s = stream_bytes(5000, 4);
  std::filesystem::path file;
  {
    TranscriptStore t = opened(dir.path());
    ASSERT_TRUE(t.append(Cursor{0}, 1, 1, std::span(s).first(3000)));
    file = t.segments().back().path;
    const auto full_at =
        std::filesystem::file_size(file) + TranscriptStore::kRecordHeaderBytes + 700;
    rlimit was{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &was), 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = was;
    limited.rlim_cur = full_at;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
    const auto appended = t.append(Cursor{3000}, 1, 1, std::span(s).subspan(3000));
    ::setrlimit(RLIMIT_FSIZE, &was);
    std::signal(SIGXFSZ, old_handler);
    ASSERT_FALSE(appended);
    EXPECT_NE(appended.error().describe().find(file.filename().string()), std::string::npos)
        << appended.error().describe();
    EXPECT_EQ(std::filesystem::file_size(file), full_at);  // the record's header and 700 bytes
  }
  TranscriptStore t = opened(dir.path());
  EXPECT_EQ(t.end(), Cursor{3000});
  EXPECT_EQ(read_all(t), s.substr(0, 3000));
  ASSERT_TRUE(t.append(Cursor{3000}, 1, 1, std::span(s).subspan(3000)));
  EXPECT_EQ(read_all(opened(dir.path())), s);
}

TEST(TranscriptStore, ASegmentLeftWithoutARecordIsReplaced) {
  TempFolder dir;
  const std::filesystem::path file = one_segment(dir.path(), Cursor{40}, "x");
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

TEST(TranscriptStore, AForeignFileNamedLikeASegmentIsALostSegment) {
  TempFolder dir;
  const std::string foreign = "not a transcript segment at all, no";
  std::ofstream(dir.path() / "0000000000000000.seg") << foreign;
  std::ofstream(dir.path() / "notes.txt") << "left alone";
  TranscriptStore t = opened(dir.path());
  ASSERT_EQ(t.damaged().size(), 1u);
  EXPECT_EQ(t.damaged()[0].from, Cursor{0});
  EXPECT_EQ(t.damaged()[0].to, Cursor{foreign.size() - 32});  // as many cursors as it could hold
  EXPECT_EQ(t.damaged()[0].reason, "damaged segment header");
  EXPECT_EQ(t.bytes(), 0u);
  char buf[8];
  EXPECT_EQ(t.read(Cursor{0}, buf).error().code, Errc::data_lost);
  // Appending goes on after it, in a segment of its own; the foreign file is never written.
  ASSERT_TRUE(t.append(t.end(), 1, 1, std::string_view("after")));
  EXPECT_EQ(std::filesystem::file_size(dir.path() / "0000000000000000.seg"), foreign.size());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "notes.txt"));
}

// A lost segment holds no bytes: retention must count it as none (it counted the cursors it
// covered, and with fewer bytes retained than that, the unsigned total wrapped and every
// segment was deleted).
TEST(TranscriptStore, RetentionCountsALostSegmentAsNoBytes) {
  TempFolder dir;
  one_segment(dir.path(), Cursor{0}, std::string(1000, 'a'));
  std::ofstream(dir.path() / "00000000000003e8.seg") << std::string(5000, 'x');  // lost, at 1000
  TranscriptStore t = opened(dir.path(), {4000, 1024});
  ASSERT_EQ(t.damaged().size(), 1u);
  const std::string s = stream_bytes(4000, 4);
  const Cursor from = t.end();
  for (std::size_t at = 0; at < s.size(); at += 500) {
    ASSERT_TRUE(t.append(from + at, 1, 1, std::span(s).subspan(at, 500)));
  }
  // The 1000 bytes before the lost segment went (the newest 4000 suffice); nothing after it.
  EXPECT_EQ(t.bytes(), 4000u) << "retention deleted bytes it had to keep";
  std::string back(s.size(), '\0');
  for (std::size_t at = 0; at < back.size();) {
    auto n = t.read(from + at, std::span(back).subspan(at));
    ASSERT_TRUE(n && *n > 0) << "at " << at;
    at += *n;
  }
  EXPECT_TRUE(back == s);
}

// --- damage (docs/transcripts.md, "Damage") ---------------------------------------------------
//
// A generated transcript (several sessions and segments, records of random sizes) is damaged in
// one way; after reopening, every byte outside the damaged records reads back exact, each gap
// is reported with its exact range, and a read inside one answers data_lost with that range.

// Where each record of a version 3 segment lies, read straight from the files (the test's own
// parser, independent of the store's).
struct RecordAt {
  std::filesystem::path file;
  std::uint64_t offset = 0;  // of its header
  std::uint64_t at = 0;      // cursor of its first byte
  std::uint64_t length = 0;
  std::uint64_t file_end() const { return offset + 16 + length; }
};

std::uint64_t le(const std::string& bytes, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  return v;
}

std::string file_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::filesystem::path> segment_files(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(folder)) {
    if (e.path().extension() == ".seg") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<RecordAt> records_in(const std::filesystem::path& file) {
  const std::string b = file_bytes(file);
  std::vector<RecordAt> out;
  for (std::uint64_t off = 48; off + 16 <= b.size();) {
    RecordAt r{file, off, le(b, off + 8, 8), le(b, off, 4)};
    out.push_back(r);
    off = r.file_end();
  }
  return out;
}

struct Damaged {
  std::string stream;  // every byte written, cursor 0 on
  std::filesystem::path folder;
  std::vector<std::filesystem::path> files;  // before the damage, oldest first
};

// ~400 KB in three sessions, segments of 64 KiB, appends of 100..5000 bytes.
Damaged generate(const std::filesystem::path& folder, std::uint32_t seed) {
  Damaged d{stream_bytes(400'000, seed), folder, {}};
  TranscriptStore t = opened(folder, {1u << 30, 64 * 1024});
  std::mt19937 gen(seed);
  std::size_t at = 0;
  while (at < d.stream.size()) {
    const std::size_t n = std::min<std::size_t>(100 + gen() % 4901, d.stream.size() - at);
    const std::uint64_t session = 1 + at * 3 / d.stream.size();
    EXPECT_TRUE(t.append(Cursor{at}, 9, session, std::span(d.stream).subspan(at, n)));
    at += n;
  }
  EXPECT_TRUE(t.sync());
  d.files = segment_files(folder);
  return d;
}

void overwrite(const std::filesystem::path& file, std::uint64_t offset, const std::string& bytes) {
  std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string flipped(const std::filesystem::path& file, std::uint64_t offset) {
  return std::string(1, static_cast<char>(file_bytes(file).at(offset) ^ 0x5a));
}

// Reopens and checks: the gaps are `expected` (ranges), every byte outside them reads back as
// written (through read() and read_folder()), a read inside one is data_lost with its range.
void expect_only(const Damaged& d, std::vector<std::pair<std::uint64_t, std::uint64_t>> expected,
                 std::uint64_t end) {
  for (int pass = 0; pass < 2; ++pass) {  // a second open finds the same
    SCOPED_TRACE(pass == 0 ? "first open" : "second open");
    const TranscriptStore t = opened(d.folder, {1u << 30, 64 * 1024});
    std::vector<std::pair<std::uint64_t, std::uint64_t>> found;
    for (const auto& g : t.damaged()) {
      found.emplace_back(value(g.from), value(g.to));
      EXPECT_FALSE(g.reason.empty());
    }
    EXPECT_EQ(found, expected);
    EXPECT_EQ(t.end(), Cursor{end});
    std::uint64_t at = 0;
    std::size_t gap = 0;
    char buf[4096];
    while (at < end) {
      if (gap < expected.size() && at == expected[gap].first) {
        for (const std::uint64_t inside : {expected[gap].first, expected[gap].second - 1}) {
          for (const bool folder_read : {false, true}) {
            auto n = folder_read
                         ? TranscriptStore::read_folder(d.folder, Cursor{inside}, t.end(), buf)
                         : t.read(Cursor{inside}, buf);
            ASSERT_FALSE(n) << "read at " << inside << " inside a gap served bytes";
            EXPECT_EQ(n.error().code, Errc::data_lost) << n.error().describe();
            EXPECT_EQ(n.error().from, expected[gap].first);
            EXPECT_EQ(n.error().cursor, expected[gap].second);
          }
        }
        at = expected[gap++].second;
        continue;
      }
      auto n = t.read(Cursor{at}, buf);
      ASSERT_TRUE(n) << "at " << at << ": " << n.error().describe();
      ASSERT_GT(*n, 0u) << "at " << at;
      ASSERT_EQ(std::string(buf, *n), d.stream.substr(at, *n)) << "at " << at;
      auto m = TranscriptStore::read_folder(d.folder, Cursor{at}, t.end(), buf);
      ASSERT_TRUE(m) << "at " << at << ": " << m.error().describe();
      ASSERT_EQ(*m, *n) << "at " << at;
      at += *n;
    }
    EXPECT_EQ(gap, expected.size());
  }
}

// The cursor range of the records whose file bytes [from, to) of `file` touch, merged.
std::pair<std::uint64_t, std::uint64_t> records_touching(const std::filesystem::path& file,
                                                         std::uint64_t from, std::uint64_t to) {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (const RecordAt& r : records_in(file)) {
    if (r.offset < to && from < r.file_end()) {
      lo = std::min(lo, r.at);
      hi = std::max(hi, r.at + r.length);
    }
  }
  return {lo, hi};
}

class TranscriptDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = generate(dir_.path() / "a", 11);
    ASSERT_GE(d_.files.size(), 6u);
    middle_ = d_.files[kMiddle];  // a full segment of the first session
    records_ = records_in(middle_);
    ASSERT_GE(records_.size(), 6u);
    for (const auto& file : d_.files) starts_.push_back(records_in(file).front().at);
  }
  static constexpr std::size_t kMiddle = 1;
  std::uint64_t end() const { return d_.stream.size(); }
  std::uint64_t start_of(std::size_t file) const { return starts_.at(file); }

  TempFolder dir_;
  Damaged d_;
  std::filesystem::path middle_;
  std::vector<RecordAt> records_;
  std::vector<std::uint64_t> starts_;  // each file's start cursor, before the damage
};

TEST_F(TranscriptDamage, ARecordHeaderCostsThatRecord) {
  const RecordAt& r = records_[3];
  for (const std::uint64_t field : {0u, 5u, 9u}) {  // length, check, cursor
    SCOPED_TRACE(field);
    const std::string before = file_bytes(middle_).substr(r.offset + field, 1);
    overwrite(middle_, r.offset + field, flipped(middle_, r.offset + field));
    expect_only(d_, {{r.at, r.at + r.length}}, end());
    overwrite(middle_, r.offset + field, before);
  }
}

TEST_F(TranscriptDamage, APayloadByteCostsThatRecord) {
  const RecordAt& r = records_[2];
  overwrite(middle_, r.offset + 16 + r.length / 2, flipped(middle_, r.offset + 16 + r.length / 2));
  expect_only(d_, {{r.at, r.at + r.length}}, end());
}

TEST_F(TranscriptDamage, ALengthOfTwoToThe31CostsThatRecord) {
  const RecordAt& r = records_[4];
  overwrite(middle_, r.offset, std::string("\0\0\0\x80", 4));
  expect_only(d_, {{r.at, r.at + r.length}}, end());
}

TEST_F(TranscriptDamage, AZeroFilledBlockCostsTheRecordsItTouches) {
  const std::uint64_t from = records_[1].offset + 100;
  overwrite(middle_, from, std::string(4096, '\0'));
  const auto lost = records_touching(middle_, from, from + 4096);
  expect_only(d_, {lost}, end());
}

TEST_F(TranscriptDamage, ASegmentHeaderCostsThatSegmentOnly) {
  overwrite(middle_, 10, flipped(middle_, 10));  // its epoch: the header's CRC catches it
  expect_only(d_, {{start_of(kMiddle), start_of(kMiddle + 1)}}, end());
}

TEST_F(TranscriptDamage, AMissingMiddleSegmentIsAGap) {
  std::filesystem::remove(middle_);
  expect_only(d_, {{start_of(kMiddle), start_of(kMiddle + 1)}}, end());
}

TEST_F(TranscriptDamage, AMiddleSegmentCutShortIsAGap) {
  const std::uint64_t size = std::filesystem::file_size(middle_);
  std::filesystem::resize_file(middle_, size - 1000);
  const auto lost = records_touching(middle_, size - 1000, size);
  expect_only(d_, {{lost.first, start_of(kMiddle + 1)}}, end());
}

TEST_F(TranscriptDamage, DamageInSeveralPlacesIsReportedOldestFirst) {
  const RecordAt& r = records_[1];
  overwrite(middle_, r.offset + 20, flipped(middle_, r.offset + 20));
  const std::filesystem::path later = d_.files[4];
  overwrite(later, 12, flipped(later, 12));
  const std::filesystem::path third = d_.files[d_.files.size() - 2];
  const RecordAt first = records_in(third).front();
  overwrite(third, first.offset + 30, flipped(third, first.offset + 30));
  expect_only(
      d_,
      {{r.at, r.at + r.length}, {start_of(4), start_of(5)}, {first.at, first.at + first.length}},
      end());
}

// The newest segment's tail cut short is what a crash leaves (a torn record): the store cuts it
// and reports nothing; the engine knows from the actor record whether bytes were lost
// (persistence_test: a truncated newest segment of a sealed session is reported).
TEST_F(TranscriptDamage, TheNewestSegmentsTornTailIsCutNotReported) {
  const std::filesystem::path newest = d_.files.back();
  const std::uint64_t size = std::filesystem::file_size(newest);
  const auto cut = records_touching(newest, size - 1000, size);
  std::filesystem::resize_file(newest, size - 1000);
  expect_only(d_, {}, cut.first);
}

// The transcript fuzzer's first finding: a segment ending in damage, then a newest segment whose
// header was never written whole. The stub is removed, and no gap may be reported for it (it
// was: from the damaged tail to the stub's name, past the transcript's end).
TEST(TranscriptStore, AStubAfterADamagedTailIsRemovedWithoutAGap) {
  TempFolder dir;
  const std::filesystem::path file = one_segment(dir.path(), Cursor{0}, "kept bytes");
  { std::ofstream(file, std::ios::app) << std::string("\x10\0\0\0torn record", 15); }
  std::ofstream(dir.path() / "0000000000000100.seg") << "BSTX";  // 4 bytes of a header
  const TranscriptStore t = opened(dir.path());
  EXPECT_TRUE(t.damaged().empty());
  EXPECT_EQ(t.end(), Cursor{10});
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "0000000000000100.seg"));
  EXPECT_EQ(read_all(t), "kept bytes");
}

// The fuzzer's second finding: garbage before a record that is intact and at its own cursor
// (a block written twice, a misplaced write) loses nothing, so no gap: one of [0, 0) was reported.
TEST(TranscriptStore, GarbageBeforeARecordAtItsOwnCursorIsNoGap) {
  TempFolder dir;
  const std::filesystem::path file = one_segment(dir.path(), Cursor{0}, "first record");
  std::string bytes = file_bytes(file);
  bytes.insert(TranscriptStore::kHeaderBytes, std::string(16, '\x7f'));
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  const TranscriptStore t = opened(dir.path());
  EXPECT_TRUE(t.damaged().empty());
  EXPECT_EQ(read_all(t), "first record");
}

TEST(TranscriptStore, ReadsVersion2SegmentsAndAppendsInVersion3) {
  TempFolder dir;
  // A version 2 segment as the previous release wrote it: a 32-byte header, records of
  // length and CRC-32C.
  auto le_bytes = [](std::uint64_t v, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += static_cast<char>(v >> (8 * i));
    return out;
  };
  const std::string a = "first record ", b = "second record";
  std::string file = std::string("BSTX0002") + le_bytes(5, 8) + le_bytes(1, 8) + le_bytes(0, 8);
  for (const std::string& r : {a, b}) {
    file += le_bytes(r.size(), 4) + le_bytes(store::crc32c(r.data(), r.size()), 4) + r;
  }
  std::ofstream(dir.path() / "0000000000000000.seg", std::ios::binary) << file;
  {
    TranscriptStore t = opened(dir.path());
    EXPECT_TRUE(t.damaged().empty());
    EXPECT_EQ(t.end(), Cursor{a.size() + b.size()});
    EXPECT_EQ(t.segments()[0].epoch, 5u);
    EXPECT_EQ(read_all(t), a + b);
    ASSERT_TRUE(t.append(t.end(), 5, 1, std::string_view(" third")));
    EXPECT_EQ(t.segments().size(), 2u);  // the old file is never appended to
  }
  EXPECT_EQ(file_bytes(dir.path() / "0000000000000000.seg"), file);
  const TranscriptStore t = opened(dir.path());
  EXPECT_TRUE(t.damaged().empty());
  EXPECT_EQ(read_all(t), a + b + " third");
  // A damaged version 2 record loses the rest of its segment: nothing after it can be placed.
  overwrite(dir.path() / "0000000000000000.seg", 32 + 8 + 2, "X");
  const TranscriptStore damaged = opened(dir.path());
  ASSERT_EQ(damaged.damaged().size(), 1u);
  EXPECT_EQ(damaged.damaged()[0].from, Cursor{0});
  EXPECT_EQ(damaged.damaged()[0].to, Cursor{a.size() + b.size()});
}

// Annexes (annex_file.hpp): records beside the segments, kept and dropped with them.

std::vector<std::filesystem::path> annex_files(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(folder)) {
    if (e.path().extension() == ".rec") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TranscriptAnnex, RecordsComeBackInOrderAcrossSegmentsSessionsAndReopens) {
  TempFolder dir;
  std::vector<std::string> written;
  {
    TranscriptStore t = opened(dir.path(), {.retain_bytes = 1u << 30, .segment_bytes = 100});
    // Before any byte: an annex named for the record's cursor, which the first segment shares.
    written.push_back("spawn");
    ASSERT_TRUE(t.append_annex(Cursor{0}, written.back()));
    std::uint64_t at = 0;
    for (int i = 0; i < 12; ++i) {
      const std::string bytes = stream_bytes(45, static_cast<std::uint32_t>(i));
      ASSERT_TRUE(t.append(Cursor{at}, 1, i < 6 ? 1 : 2, bytes));
      at += bytes.size();
      written.push_back("record " + std::to_string(i) +
                        std::string(static_cast<std::size_t>(i), 'x'));
      ASSERT_TRUE(t.append_annex(Cursor{at}, written.back()));
    }
    ASSERT_TRUE(t.sync());
  }
  TranscriptStore again = opened(dir.path(), {.retain_bytes = 1u << 30, .segment_bytes = 100});
  EXPECT_EQ(again.take_annex(), written);
  EXPECT_EQ(again.annex_damaged(), 0u);
  // One annex per segment that had a record while it was the newest.
  EXPECT_EQ(annex_files(dir.path()).front().filename(), "0000000000000000.rec");
  EXPECT_GT(annex_files(dir.path()).size(), 3u);
  EXPECT_LE(annex_files(dir.path()).size(), again.segments().size());
}

TEST(TranscriptAnnex, AnAnnexGoesOnceTheNextOneStartsBeforeTheOldestByte) {
  TempFolder dir;
  const TranscriptOptions o{.retain_bytes = 300, .segment_bytes = 100};
  TranscriptStore t = opened(dir.path(), o);
  std::uint64_t at = 0;
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(t.append(Cursor{at}, 1, 1, stream_bytes(50, static_cast<std::uint32_t>(i))));
    at += 50;
    ASSERT_TRUE(t.append_annex(Cursor{at}, "at " + std::to_string(at)));
    const auto files = annex_files(dir.path());
    ASSERT_FALSE(files.empty());
    // Every annex but the newest is followed by one that starts at or after the oldest byte,
    // and the oldest kept starts at or before it: nothing about a retained byte was dropped.
    std::vector<std::uint64_t> starts;
    for (const auto& f : files) starts.push_back(std::stoull(f.stem().string(), nullptr, 16));
    for (std::size_t k = 1; k < starts.size(); ++k) ASSERT_GE(starts[k], value(t.oldest()));
    ASSERT_LE(starts.front(), value(t.oldest()));
  }
  ASSERT_TRUE(t.sync());
  TranscriptStore again = opened(dir.path(), o);
  const auto records = again.take_annex();
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back(), "at " + std::to_string(at));
  EXPECT_LT(records.size(), 40u);
}

TEST(TranscriptAnnex, ClearDeletesEveryAnnex) {
  TempFolder dir;
  TranscriptStore t = opened(dir.path());
  ASSERT_TRUE(t.append(Cursor{0}, 1, 1, "hello"));
  ASSERT_TRUE(t.append_annex(Cursor{5}, "before the clear"));
  ASSERT_TRUE(t.clear());
  EXPECT_TRUE(annex_files(dir.path()).empty());
  ASSERT_TRUE(t.append_annex(Cursor{5}, "after the clear"));
  ASSERT_TRUE(t.append(Cursor{5}, 1, 1, "again"));
  ASSERT_TRUE(t.sync());
  TranscriptStore again = opened(dir.path());
  EXPECT_EQ(again.take_annex(), std::vector<std::string>{"after the clear"});
}

// Three annex records; the file and each record's offset.
struct ThreeRecords {
  std::filesystem::path file;
  std::vector<std::uint64_t> offsets;
};
ThreeRecords three_records(const std::filesystem::path& folder) {
  TranscriptStore t = opened(folder);
  if (!t.append(Cursor{0}, 1, 1, "bytes")) throw std::runtime_error("append failed");
  ThreeRecords out;
  for (const char* r : {"first record", "second record", "third record"}) {
    out.file = folder / "0000000000000000.rec";
    out.offsets.push_back(std::filesystem::exists(out.file) ? std::filesystem::file_size(out.file)
                                                            : 8);
    if (!t.append_annex(Cursor{5}, r)) throw std::runtime_error("annex failed");
  }
  if (!t.sync()) throw std::runtime_error("sync failed");
  return out;
}

TEST(TranscriptAnnex, ADamagedRecordCostsThatRecordOnly) {
  for (const std::uint64_t into : {0u, 5u, 14u}) {  // its magic, its length, its payload
    TempFolder dir;
    const ThreeRecords r = three_records(dir.path());
    overwrite(r.file, r.offsets[1] + into, flipped(r.file, r.offsets[1] + into));
    TranscriptStore t = opened(dir.path());
    EXPECT_EQ(t.take_annex(), (std::vector<std::string>{"first record", "third record"}))
        << "byte " << into;
    EXPECT_EQ(t.annex_damaged(), 1u);
  }
}

TEST(TranscriptAnnex, ADamagedHeaderKeepsTheRecords) {
  TempFolder dir;
  const ThreeRecords r = three_records(dir.path());
  overwrite(r.file, 0, "XXXX");
  TranscriptStore t = opened(dir.path());
  EXPECT_EQ(t.take_annex().size(), 3u);
  EXPECT_EQ(t.annex_damaged(), 1u);
}

TEST(TranscriptAnnex, TheNewestAnnexsTornTailIsCutNotReported) {
  TempFolder dir;
  const ThreeRecords r = three_records(dir.path());
  std::filesystem::resize_file(r.file, r.offsets[2] + 7);  // the third cut short
  {
    TranscriptStore t = opened(dir.path());
    EXPECT_EQ(t.take_annex(), (std::vector<std::string>{"first record", "second record"}));
    EXPECT_EQ(t.annex_damaged(), 0u);
    EXPECT_EQ(std::filesystem::file_size(r.file), r.offsets[2]);
    ASSERT_TRUE(t.append_annex(Cursor{5}, "after the crash"));
    ASSERT_TRUE(t.sync());
  }
  TranscriptStore t = opened(dir.path());
  EXPECT_EQ(t.take_annex(),
            (std::vector<std::string>{"first record", "second record", "after the crash"}));
  EXPECT_EQ(t.annex_damaged(), 0u);
}

TEST(TranscriptAnnex, AnAnnexCreatedButNeverWrittenIsNoDamage) {
  TempFolder dir;
  { TranscriptStore t = opened(dir.path()); }
  std::ofstream(dir.path() / "0000000000000000.rec") << "BSA";
  TranscriptStore t = opened(dir.path());
  EXPECT_TRUE(t.take_annex().empty());
  EXPECT_EQ(t.annex_damaged(), 0u);
  ASSERT_TRUE(t.append_annex(Cursor{0}, "first"));
  ASSERT_TRUE(t.sync());
  EXPECT_EQ(opened(dir.path()).take_annex(), std::vector<std::string>{"first"});
}

TEST(TranscriptAnnex, RecordsOfEveryLengthFrameAndScanBack) {
  rc::check([](const std::vector<std::string>& records, std::uint8_t cut) {
    std::string file(store::annex_header());
    std::vector<std::string> kept;
    for (const std::string& r : records) {
      if (r.empty()) continue;
      file += store::frame_annex_record(r);
      kept.push_back(r);
    }
    const store::AnnexScan whole = store::scan_annex(file);
    RC_ASSERT(whole.records == kept);
    RC_ASSERT(whole.damaged == 0u);
    RC_ASSERT(!whole.torn_tail);
    // Cut anywhere inside the last record: the others stay, the cut is a torn tail.
    if (!kept.empty()) {
      const std::size_t last = store::frame_annex_record(kept.back()).size();
      const std::size_t keep = file.size() - 1 - cut % last;
      const store::AnnexScan torn = store::scan_annex(std::string_view(file).substr(0, keep));
      RC_ASSERT(torn.records == std::vector<std::string>(kept.begin(), kept.end() - 1));
      RC_ASSERT(torn.torn_tail);
      RC_ASSERT(torn.intact_bytes == file.size() - last);
    }
  });
}

}  // namespace
}  // namespace backscroll::testing
