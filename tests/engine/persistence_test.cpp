// Durable transcripts through the real engine (docs/transcripts.md, issue 4):
// - A clean stop: every byte the child wrote is in the transcript, synced before `sealed`
//   (durable: true) is reported; folders 0700 and files 0600 whatever the umask, unreadable by
//   another user.
// - A restarted engine brings the actor back idle in the same epoch; its cursors continue after
//   the last durable byte and `history` answers from the transcript and the ring seamlessly.
// - SIGKILL during a flood: the next engine serves an exact prefix of what the child wrote
//   (the torn tail cut) and continues the cursors from there.
// - A transcript that fails (folder removed, disk full) detaches: archive_error in status and as
//   an event, the seal is reported not durable, the ring's history is intact.
// - A clear empties the transcript and the cursor never goes back, even across a restart.
// - Delete removes the folder. A memory-only engine is a new epoch: old cursors get wrong_epoch.
// - Turning persistence off stops writing and deletes nothing; turned on again, actors return.
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/actor_record.hpp"
#include "engine/request_fields.hpp"
#include "engine/store/transcript_store.hpp"
#include "shm/ring_reader.hpp"
#include "tests/engine/engine_process.hpp"
#include "tests/engine/pattern.hpp"

namespace backscroll::testing {
namespace {

namespace fs = std::filesystem;

const std::string kPersist = "terminal_transcript:\n  persist: true\n";
constexpr std::uint32_t kSeed = 7;

EngineConfig persisting(const fs::path& runtime_dir) {
  EngineConfig config;
  config.settings_yaml = kPersist;
  config.runtime_dir = runtime_dir;
  return config;
}

std::vector<std::string> pattern_argv(std::uint64_t bytes, std::string_view then = "") {
  std::vector<std::string> argv{child_binary(), "pattern", std::to_string(kSeed),
                                std::to_string(bytes), "raw"};
  if (!then.empty()) {
    argv.push_back("0");
    argv.emplace_back(then);
  }
  return argv;
}

std::string expected(std::uint64_t from, std::uint64_t to) {
  std::string out(to - from, '\0');
  Pattern(kSeed, /*crlf=*/false).fill(from, out);
  return out;
}

// Everything the folder holds from `from` to `end`, read as the engine's io thread reads it.
std::string transcript(const fs::path& folder, std::uint64_t from, std::uint64_t end) {
  std::string out;
  std::vector<char> buf(1 << 20);
  while (from < end) {
    auto n = store::TranscriptStore::read_folder(folder, Cursor{from}, Cursor{end}, buf);
    if (!n)
      raise_failure("transcript read at " + std::to_string(from) + ": " + n.error().describe());
    out.append(buf.data(), *n);
    from += *n;
  }
  return out;
}

fs::path folder_in(const fs::path& runtime_dir, const std::string& actor) {
  return Places::at(runtime_dir).transcripts_dir() / actor;
}

fs::perms mode_of(const fs::path& p) { return fs::status(p).permissions() & fs::perms::mask; }

// The actor's transcript folder, its files and their modes: folders 0700, files 0600.
void expect_private(const fs::path& folder) {
  EXPECT_EQ(mode_of(folder.parent_path()), fs::perms::owner_all);
  EXPECT_EQ(mode_of(folder), fs::perms::owner_all);
  int files = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    ++files;
    EXPECT_EQ(mode_of(entry.path()), fs::perms::owner_read | fs::perms::owner_write)
        << entry.path();
  }
  EXPECT_GE(files, 2) << "a segment and the actor record";
}

engine::ActorRecord record_of(const fs::path& folder) {
  std::ifstream in(folder / "actor.json");
  const auto json = Json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  auto record = engine::ActorRecord::from_json(json);
  if (!record) raise_failure(record.error().describe());
  return *record;
}

class Persistence : public ::testing::Test {
 protected:
  fs::path runtime_dir() const { return dir_.path() / "rt"; }
  fs::path folder(const std::string& actor) const { return folder_in(runtime_dir(), actor); }
  TempDir dir_;
};

TEST_F(Persistence, ACleanStopMakesEveryByteDurableBeforeSealedIsReported) {
  for (const mode_t mask : {mode_t{0}, mode_t{077}}) {
    SCOPED_TRACE("umask " + std::to_string(mask));
    fs::remove_all(dir_.path() / "state");
    EngineProcess engine;
    EngineConfig config = persisting(runtime_dir());
    config.umask = mask;
    ASSERT_TRUE(engine.start(config));
    EventStream events(engine.places());
    constexpr std::uint64_t kBytes = 3'000'000;  // three segments and a bit
    engine.spawn("log", pattern_argv(kBytes));
    const Json sealed = events.wait_for("sealed", "log");
    EXPECT_EQ(sealed.at("end"), kBytes);
    EXPECT_EQ(sealed.at("durable"), true);

    const Json status = engine.status("log");
    EXPECT_EQ(status.at("persist"), true);
    EXPECT_TRUE(status.at("archive_error").is_null());
    EXPECT_EQ(transcript(folder("log"), 0, kBytes), expected(0, kBytes));
    expect_private(folder("log"));
    const engine::ActorRecord record = record_of(folder("log"));
    EXPECT_EQ(engine::hex64(record.epoch), status.at("epoch"));
    EXPECT_EQ(record.cursor, Cursor{kBytes});
    ASSERT_EQ(record.sessions.size(), 1u);
    EXPECT_EQ(record.sessions[0].end, kBytes);
    EXPECT_NE(record.sessions[0].flags & shm::kSessionSealed, 0u);
    engine.stop();
  }
}

TEST_F(Persistence, AnotherUserCanNeitherReadTheTranscriptNorConnect) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  EngineProcess engine;
  ASSERT_TRUE(engine.start(persisting(runtime_dir())));
  engine.spawn("log", pattern_argv(10'000));
  engine.wait_sealed("log");
  wait_until([&] { return fs::exists(folder("log") / "actor.json"); }, "the actor record");
  std::vector<fs::path> targets{folder("log") / "actor.json"};
  for (const auto& entry : fs::directory_iterator(folder("log"))) targets.push_back(entry.path());

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // nobody: no capabilities, not the owner.
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
    for (const auto& t : targets) {
      std::ifstream in(t);
      if (in.is_open()) ::_exit(11);
    }
    auto client = control::ControlClient::connect(engine.places());
    ::_exit(client ? 12 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setuid failed, 11: a transcript file opened, "
                                       "12: the control socket accepted another user";
}

TEST_F(Persistence, ARestartedEngineContinuesTheCursorSpaceFromTheTranscript) {
  constexpr std::uint64_t kFirst = 300'000;
  std::string epoch;
  {
    EngineProcess engine;
    ASSERT_TRUE(engine.start(persisting(runtime_dir())));
    engine.spawn("log", pattern_argv(kFirst));
    engine.wait_sealed("log");
    epoch = engine.status("log").at("epoch");
    engine.stop();
  }
  EngineProcess engine;
  // A ring smaller than the history: most of it comes from the transcript.
  EngineConfig config = persisting(runtime_dir());
  config.args = {"--grace-ms", "500", "--drain-ms", "300", "--ring-bytes", "65536"};
  ASSERT_TRUE(engine.start(config));
  Json status = engine.status("log");
  EXPECT_EQ(status.at("state"), "idle");
  EXPECT_EQ(status.at("epoch"), epoch);
  EXPECT_EQ(status.at("committed"), kFirst);
  EXPECT_EQ(status.at("floor"), kFirst);
  ASSERT_EQ(status.at("sessions").size(), 1u);
  EXPECT_EQ(status.at("sessions")[0].at("end"), kFirst);
  EXPECT_EQ(engine.history("log"), expected(0, kFirst));
  EXPECT_EQ(engine.history("log", 123'456), expected(123'456, kFirst));

  // The same program again: its bytes follow the old ones in the same cursor space.
  const Frame restarted = engine.call("restart", {{"actor", "log"}});
  EXPECT_EQ(restarted.header.at("cursor"), kFirst);
  EXPECT_EQ(restarted.header.at("session"), 2);
  EXPECT_EQ(restarted.header.at("epoch"), epoch);
  engine.wait_sealed("log");
  std::string both = expected(0, kFirst) + expected(0, kFirst);
  EXPECT_EQ(engine.history("log"), both);
  status = engine.status("log");
  EXPECT_GT(status.at("floor").get<std::uint64_t>(), kFirst) << "the ring alone no longer has it";

  // Another epoch's cursor is refused, never read as this one's.
  const Error wrong = expect_error(
      engine.try_call("history", {{"actor", "log"}, {"from", 0}, {"epoch", "00000000000000aa"}}),
      "history with another epoch");
  EXPECT_EQ(wrong.code, Errc::wrong_epoch);
  const Frame same = engine.call("history", {{"actor", "log"}, {"from", 0}, {"epoch", epoch}});
  EXPECT_GT(same.payload.size(), 0u);
}

std::vector<fs::path> segments_of(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder)) {
    if (e.path().extension() == ".seg") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void xor_bytes(const fs::path& file, std::uint64_t offset, std::size_t n) {
  std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
  std::string bytes(n, '\0');
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(bytes.data(), static_cast<std::streamsize>(n));
  for (char& c : bytes) c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(n));
}

// The issue's own case: 4 bytes XORed in a middle segment, the newest one cut by 1,000 bytes.
// The restarted engine logs both gaps, lists them in status, and history serves every byte
// around them and data_lost (with the gap) inside them, never cursor_expired.
TEST_F(Persistence, DamageIsReportedAtRestoreAndByHistory) {
  constexpr std::uint64_t kSegment = store::kDefaultSegmentBytes;
  constexpr std::uint64_t kTotal = 3 * kSegment + kSegment / 2;  // four segments
  {
    EngineProcess engine;
    EngineConfig config = persisting(runtime_dir());
    config.settings_yaml = kPersist + "  per_actor_bytes: " + std::to_string(8 * kSegment) + "\n";
    ASSERT_TRUE(engine.start(config));
    engine.spawn("log", pattern_argv(kTotal));
    engine.wait_sealed("log");
    engine.stop();
  }
  const auto files = segments_of(folder("log"));
  ASSERT_EQ(files.size(), 4u);
  xor_bytes(files[1], 500'000, 4);
  fs::resize_file(files.back(), fs::file_size(files.back()) - 1000);

  EngineProcess engine;
  EngineConfig config = persisting(runtime_dir());
  config.args = {"--ring-bytes", "65536"};
  ASSERT_TRUE(engine.start(config));
  const Json damaged = engine.status("log").at("transcript").at("damaged");
  ASSERT_EQ(damaged.size(), 2u) << damaged;
  const std::uint64_t a = damaged[0].at("from"), b = damaged[0].at("to");
  const std::uint64_t c = damaged[1].at("from"), d = damaged[1].at("to");
  // The XORed bytes lie in one record (at most 1 MiB) of the second segment (cursor ~one
  // segment + 500,000).
  EXPECT_EQ(damaged[0].at("reason"), "damaged record");
  EXPECT_LT(a, kSegment + 500'000u);
  EXPECT_GT(b, kSegment + 500'000u - 1000u);
  EXPECT_LE(b - a, 1u << 20);
  EXPECT_EQ(damaged[1].at("reason"), "the newest segment ends before the stream's recorded end");
  EXPECT_EQ(d, kTotal);
  EXPECT_LE(kTotal - c, 1000u + (1u << 20));
  EXPECT_GE(kTotal - c, 1000u - 16u);
  for (const Json& gap : damaged) {
    const std::string line = "actor log: transcript lost cursors " +
                             std::to_string(gap.at("from").get<std::uint64_t>()) + ".." +
                             std::to_string(gap.at("to").get<std::uint64_t>());
    EXPECT_NE(engine.log().find(line), std::string::npos) << engine.log();
  }

  // history: exact up to each gap, data_lost with the gap inside it.
  auto read_to_gap = [&](std::uint64_t from) {
    std::string out;
    for (;;) {
      auto r = engine.try_call("history", {{"actor", "log"}, {"from", from}});
      if (!r) return std::pair{out, r.error()};
      out += r->payload;
      from = r->header.at("to");
      if (!r->header.at("more").get<bool>()) return std::pair{out, Error{}};
    }
  };
  auto [first, lost] = read_to_gap(0);
  EXPECT_EQ(first, expected(0, a));
  EXPECT_EQ(lost.code, Errc::data_lost) << lost.describe();
  EXPECT_EQ(lost.from, a);
  EXPECT_EQ(lost.cursor, b);
  auto [second, lost_tail] = read_to_gap(b);
  EXPECT_EQ(second, expected(b, c));
  EXPECT_EQ(lost_tail.code, Errc::data_lost) << lost_tail.describe();
  EXPECT_EQ(lost_tail.from, c);
  EXPECT_EQ(lost_tail.cursor, d);
  const Error inside = expect_error(
      engine.try_call("history", {{"actor", "log"}, {"from", (a + b) / 2}}), "history in a gap");
  EXPECT_EQ(inside.code, Errc::data_lost);
  // Cursors continue after the newest gap: the next session starts at the recorded end.
  const Frame restarted = engine.call("restart", {{"actor", "log"}});
  EXPECT_EQ(restarted.header.at("cursor"), kTotal);
}

// The highest cursor a reader in this process (the engine is another) consumed from the ring
// while it ran, every byte compared with what the child wrote.
class RingFollower {
 public:
  RingFollower(const Places& places, const std::string& actor)
      : thread_([this, places, actor] { run(places, actor); }) {}
  ~RingFollower() { stop(); }
  // Stops following; the highest cursor consumed.
  std::uint64_t stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    EXPECT_EQ(failure_, "");
    return consumed_;
  }

 private:
  void run(const Places& places, const std::string& actor) {
    auto reader = shm::RingReader::open(places, actor);
    if (!reader) {
      failure_ = "open: " + reader.error().describe();
      return;
    }
    std::vector<std::byte> buf(1 << 20);
    Cursor at{0};
    while (!stop_) {
      auto to = reader->copy(at, buf);
      if (!to && to.error().code == Errc::cursor_expired) {  // lapped: go on from the oldest byte
        at = Cursor{to.error().cursor.value_or(value(at))};
        continue;
      }
      if (!to) {
        failure_ = "copy at " + std::to_string(value(at)) + ": " + to.error().describe();
        return;
      }
      if (*to == at) {
        reader->wait(at, std::chrono::milliseconds(20));
        continue;
      }
      const auto bytes = std::span(buf).first(*to - at);
      if (auto bad = Pattern(kSeed, false).first_mismatch(value(at), bytes)) {
        failure_ = "byte " + std::to_string(*bad) + " differs from what the child wrote";
        return;
      }
      at = *to;
      consumed_ = value(at);
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> consumed_{0};
  std::string failure_;
  std::thread thread_;
};

// Issue 21's bug: a reader that consumed up to C before a SIGKILL must never be served other
// bytes under cursors it consumed. At four seeded moments of a flood: the restarted engine
// keeps an exact prefix up to its last durable byte D, continues past every cursor the dead
// engine can have published (its lease), reports [D, next) as lost, answers a history resume at
// any consumed cursor with exact bytes up to D and data_lost after, gives an attach with
// `since` a snapshot, and starts the next session's bytes past the gap.
TEST_F(Persistence, AResumeAfterAKillContinuesExactlyOrIsToldOfTheGap) {
  std::mt19937_64 gen(kSeed);
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const fs::path rt = dir_.path() / ("kill" + std::to_string(round)) / "rt";
    const std::uint64_t kill_after = (1u << 20) + gen() % (24u << 20);
    std::string epoch;
    std::uint64_t consumed = 0;
    std::uint64_t published = 0;
    {
      EngineProcess engine;
      ASSERT_TRUE(engine.start(persisting(rt)));
      engine.spawn("flood", pattern_argv(1ULL << 34));
      epoch = engine.status("flood").at("epoch");
      RingFollower follower(engine.places(), "flood");
      auto ring = shm::RingReader::open(engine.places(), "flood");  // outlives the engine
      ASSERT_TRUE(ring) << ring.error().describe();
      wait_until(
          [&] { return engine.status("flood").at("committed").get<std::uint64_t>() > kill_after; },
          "the flood to pass the kill point");
      engine.kill_hard();
      consumed = follower.stop();
      published = value(ring->committed());
    }
    EXPECT_GT(consumed, 0u);
    EngineProcess engine;
    ASSERT_TRUE(engine.start(persisting(rt)));
    const Json status = engine.status("flood");
    EXPECT_EQ(status.at("epoch"), epoch);
    const std::uint64_t next = status.at("committed");
    EXPECT_GT(next, published) << "the next cursor is past every byte the dead engine published";
    const Json damaged = status.at("transcript").at("damaged");
    ASSERT_EQ(damaged.size(), 1u) << damaged;
    const std::uint64_t durable = damaged[0].at("from");
    EXPECT_EQ(damaged[0].at("to"), next);
    EXPECT_NE(damaged[0].at("reason").get<std::string>().find("unclean stop"), std::string::npos);
    EXPECT_LE(durable, published);
    const auto sessions = status.at("sessions");
    ASSERT_EQ(sessions.size(), 1u);
    EXPECT_EQ(sessions[0].at("sealed"), true);

    // Resumes at the consumed cursor and at random ones below it: exact bytes up to D (after
    // cursor_expired below what retention kept), then data_lost naming [D, next).
    std::vector<std::uint64_t> resumes{consumed, 0};
    for (int i = 0; i < 3; ++i) resumes.push_back(gen() % (consumed + 1));
    for (const std::uint64_t from : resumes) {
      SCOPED_TRACE("resume at " + std::to_string(from));
      std::uint64_t at = from;
      Error stopped;
      for (;;) {
        auto r = engine.try_call("history", {{"actor", "flood"}, {"from", at}, {"epoch", epoch}});
        if (!r && r.error().code == Errc::cursor_expired && r.error().cursor > at) {
          at = *r.error().cursor;  // retention took these: told, and on to the oldest kept
          continue;
        }
        if (!r) {
          stopped = r.error();
          break;
        }
        EXPECT_TRUE(r->payload == expected(at, at + r->payload.size())) << "exact bytes at " << at;
        at = r->header.at("to");
        if (!r->header.at("more").get<bool>()) break;
      }
      EXPECT_EQ(at, std::max(from, durable)) << "served up to the last durable byte";
      EXPECT_EQ(stopped.code, Errc::data_lost) << stopped.describe();
      EXPECT_EQ(stopped.from, durable);
      EXPECT_EQ(stopped.cursor, next);
    }
    auto conn = engine.connect();
    const auto attached = conn.call(
        "attach", {{"actor", "flood"}, {"role", "viewer"}, {"since", consumed}, {"epoch", epoch}});
    ASSERT_TRUE(attached) << attached.error().describe();
    EXPECT_EQ(attached->header.at("mode"), "snapshot") << attached->header;

    // The next session's bytes come after the gap, never under a consumed cursor.
    engine.call("restart", {{"actor", "flood"}});
    const Json after = engine.status("flood");
    ASSERT_EQ(after.at("sessions").size(), 2u);
    EXPECT_EQ(after.at("sessions")[1].at("start"), next);
    engine.call("stop", {{"actor", "flood"}, {"grace_ms", 0}});
    engine.wait_sealed("flood");
  }
}

// Issue 21's kill matrix: 50 SIGKILLs at seeded moments of persisted output, four kinds in
// turn: a flood streaming (segments roll every MiB and retention, keeping 64 KiB, deletes one at
// each roll), a short program whose seal the kill may hit, a flood with retention at work for
// longer, a clear just before the kill. After each restart:
// - the next cursor is past every byte the dead engine published, equal to it only when no
//   gap is reported (the session had sealed: a clean end);
// - history from 0 is exact wherever it serves bytes, never below a clear's floor, and ends
//   with at most one gap, reaching the next cursor;
// - nothing is left half-made: no temporary file, the actor record parses.
TEST_F(Persistence, FiftySeededKillsLeaveExactHistoryAndCursorsPastEveryPublishedByte) {
  std::mt19937_64 gen(kSeed + 21);
  for (int round = 0; round < 50; ++round) {
    const int kind = round % 4;
    SCOPED_TRACE("kill " + std::to_string(round) + ", kind " + std::to_string(kind));
    const fs::path rt = dir_.path() / ("m" + std::to_string(round)) / "rt";
    EngineConfig config = persisting(rt);
    config.settings_yaml = kPersist + "  per_actor_bytes: 65536\n";
    config.args = {"--ring-bytes", "1048576"};
    std::uint64_t published = 0;
    std::uint64_t floor = 0;
    std::string epoch;
    {
      EngineProcess engine;
      ASSERT_TRUE(engine.start(config));
      const std::uint64_t bytes = kind == 1 ? 1 + gen() % (2u << 20) : 1ULL << 34;
      engine.spawn("a", pattern_argv(bytes));
      epoch = engine.status("a").at("epoch");
      auto ring = shm::RingReader::open(engine.places(), "a");  // outlives the engine
      ASSERT_TRUE(ring) << ring.error().describe();
      const auto committed = [&] { return value(ring->committed()); };
      if (kind == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(gen() % 40));
      } else {
        const std::uint64_t at = (64u << 10) + gen() % ((kind == 2 ? 8u : 3u) << 20);
        wait_until([&] { return committed() > at; }, "the flood to pass the kill point");
      }
      if (kind == 3) {
        floor = engine.call("clear", {{"actor", "a"}}).header.at("floor");
        std::this_thread::sleep_for(std::chrono::milliseconds(gen() % 10));
      }
      engine.kill_hard();
      published = committed();
    }
    EngineProcess engine;
    ASSERT_TRUE(engine.start(config));
    if (const auto found = engine.try_call("status", {{"actor", "a"}});
        !found && found.error().code == Errc::no_such_actor) {
      EXPECT_EQ(published, 0u) << "killed before its record was on disk, so before any byte";
      continue;
    }
    const Json status = engine.status("a");
    ASSERT_EQ(status.at("epoch"), epoch);
    const std::uint64_t next = status.at("committed");
    const Json damaged = status.at("transcript").at("damaged");
    ASSERT_LE(damaged.size(), 1u) << damaged;
    if (damaged.empty()) {
      EXPECT_EQ(next, published) << "an exact continuation, only after a clean end";
    } else {
      EXPECT_GT(next, published);
      EXPECT_EQ(damaged[0].at("to"), next);
      EXPECT_LE(damaged[0].at("from").get<std::uint64_t>(), published);
    }
    std::uint64_t at = 0;
    bool gap = false;
    while (at < next) {
      auto r = engine.try_call("history", {{"actor", "a"}, {"from", at}, {"epoch", epoch}});
      if (!r) {
        const Error& e = r.error();
        ASSERT_TRUE(e.code == Errc::cursor_expired || e.code == Errc::data_lost) << e.describe();
        ASSERT_TRUE(e.cursor && *e.cursor > at) << e.describe();
        if (e.code == Errc::data_lost) {
          EXPECT_FALSE(gap) << "a second gap at " << at;
          EXPECT_EQ(*e.cursor, next);
          gap = true;
        }
        at = *e.cursor;
        continue;
      }
      EXPECT_GE(at, floor) << "bytes below the clear's floor";
      ASSERT_TRUE(r->payload == expected(at, at + r->payload.size())) << "bytes at " << at;
      at = r->header.at("to");
      if (!r->header.at("more").get<bool>() && at < next) {
        ADD_FAILURE() << "history ends at " << at << " before the next cursor " << next;
        break;
      }
    }
    EXPECT_EQ(gap, !damaged.empty());
    if (round % 10 == 0) {
      engine.call("restart", {{"actor", "a"}});
      EXPECT_EQ(engine.status("a").at("sessions").back().at("start"), next);
    }
    // Once this engine stopped (its writer writes the record anew meanwhile), nothing is left
    // half-made: no temporary file, a record that parses.
    engine.stop();
    for (const auto& entry : fs::directory_iterator(folder_in(rt, "a"))) {
      EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();
    }
    EXPECT_EQ(record_of(folder_in(rt, "a")).name, "a");
  }
}

TEST_F(Persistence, AFailedTranscriptDetachesAndTheRingKeepsTheHistory) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start(persisting(runtime_dir())));
  EventStream events(engine.places());
  engine.spawn("log", {child_binary(), "pattern", std::to_string(kSeed), "20000", "raw", "10000"});
  engine.wait_output("log", expected(9936, 10000));
  // The next sync cannot reach the folder. (The writer may be creating a file in it meanwhile:
  // then the removal is tried again.)
  wait_until(
      [&] {
        std::error_code ec;
        fs::remove_all(folder("log"), ec);
        return !ec;
      },
      "the transcript folder to be removed");
  engine.call("input", {{"actor", "log"}}, "x");
  engine.wait_output("log", expected(19936, 20000));
  const Json error = events.wait_for("archive_error", "log");
  EXPECT_NE(error.at("message").get<std::string>().find("io_error"), std::string::npos) << error;
  EXPECT_EQ(events.wait_for("sealed", "log").at("durable"), false);
  const Json status = engine.status("log");
  EXPECT_FALSE(status.at("archive_error").is_null());
  // How much the transcript lacks: everything after the cursor it was given up at.
  const std::uint64_t archived_to = error.at("archived_to");
  EXPECT_LE(archived_to, 20000u);
  EXPECT_EQ(status.at("unarchived_bytes"), 20000u - archived_to);
  EXPECT_EQ(engine.history("log"), expected(0, 20000));
}

TEST_F(Persistence, AFullDiskDetachesTheTranscriptAndTheEngineKeepsDraining) {
  const fs::path transcripts = Places::at(runtime_dir()).transcripts_dir();
  fs::create_directories(transcripts);
  if (::mount("tmpfs", transcripts.c_str(), "tmpfs", 0, "size=256k,mode=0700") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno)
                 << "): the full-disk case is not exercised";
  }
  struct Unmount {
    fs::path at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{transcripts};
  EngineProcess engine;
  ASSERT_TRUE(engine.start(persisting(runtime_dir())));
  EventStream events(engine.places());
  constexpr std::uint64_t kBytes = 2'000'000;  // eight times the disk
  engine.spawn("log", pattern_argv(kBytes));
  const Json error = events.wait_for("archive_error", "log");
  EXPECT_NE(error.at("message").get<std::string>().find("No space left"), std::string::npos)
      << error;
  EXPECT_EQ(events.wait_for("sealed", "log").at("durable"), false);
  EXPECT_EQ(engine.history("log"), expected(0, kBytes)) << "the ring lost nothing";
  engine.stop();
  // Its cursors went on without the transcript: moved aside, never restored into that epoch.
  EXPECT_FALSE(fs::exists(transcripts / "log"));
  EngineProcess next;
  ASSERT_TRUE(next.start(persisting(runtime_dir())));
  EXPECT_EQ(next.call("list").header.at("actors").size(), 0u);
}

TEST_F(Persistence, AClearEmptiesTheTranscriptAndCursorsNeverGoBack) {
  std::uint64_t floor = 0;
  {
    EngineProcess engine;
    ASSERT_TRUE(engine.start(persisting(runtime_dir())));
    engine.spawn("log", pattern_argv(50'000));
    engine.wait_sealed("log");
    floor = engine.call("clear", {{"actor", "log"}}).header.at("floor");
    EXPECT_EQ(floor, 50'000u);
    const Error gone = expect_error(engine.try_call("history", {{"actor", "log"}, {"from", 0}}),
                                    "history before the clear");
    EXPECT_EQ(gone.code, Errc::cursor_expired);
    EXPECT_EQ(gone.cursor, floor);
    engine.stop();
  }
  for (const auto& entry : fs::directory_iterator(folder("log"))) {
    EXPECT_NE(entry.path().extension(), ".seg") << "a cleared segment is still there";
  }
  EngineProcess engine;
  ASSERT_TRUE(engine.start(persisting(runtime_dir())));
  EXPECT_EQ(engine.status("log").at("committed"), floor);
  const Error gone = expect_error(engine.try_call("history", {{"actor", "log"}, {"from", 0}}),
                                  "history before the clear, after a restart");
  EXPECT_EQ(gone.code, Errc::cursor_expired);
}

// The screen a clear kept is the recording's keyframe at the floor: after a restart the actor
// shows it (cold restore), still without the history.
TEST_F(Persistence, TheScreenAClearKeptComesBackAfterARestart) {
  {
    EngineProcess engine;
    ASSERT_TRUE(engine.start(persisting(runtime_dir())));
    engine.spawn("kept", {"sh", "-c",
                          "i=0; while [ $i -lt 60 ]; do echo kept-$i; i=$((i+1)); done; "
                          "exec sleep 1000"});
    engine.wait_output("kept", "kept-59\r\n");
    ASSERT_EQ(engine.call("clear", {{"actor", "kept"}}).header.at("screen_kept"), true);
    engine.stop();
  }
  EngineProcess engine;
  ASSERT_TRUE(engine.start(persisting(runtime_dir())));
  const Frame snap = engine.call("snapshot", {{"actor", "kept"}, {"scrollback", 100}});
  ASSERT_EQ(snap.header.at("format"), "snapshot_v1") << snap.header.dump();
  EXPECT_EQ(snap.header.at("scrollback_lines"), 0);
  EXPECT_NE(snap.payload.find("kept-59"), std::string::npos);
  EXPECT_NE(snap.payload.find("kept-37"), std::string::npos);  // the screen's top row
  EXPECT_EQ(snap.payload.find("kept-30"), std::string::npos);  // history, cleared
}

TEST_F(Persistence, AClearSurvivesACrashRightAfterItsAnswer) {
  std::uint64_t floor = 0;
  {
    EngineProcess engine;
    ASSERT_TRUE(engine.start(persisting(runtime_dir())));
    engine.spawn("log", pattern_argv(50'000, "wait"));
    engine.wait_output("log", expected(49'900, 50'000));
    floor = engine.call("clear", {{"actor", "log"}}).header.at("floor");
    engine.kill_hard();  // maybe before the writer deleted anything
  }
  EngineProcess engine;
  ASSERT_TRUE(engine.start(persisting(runtime_dir())));
  EXPECT_GE(engine.status("log").at("committed").get<std::uint64_t>(), floor);
  const Error gone = expect_error(engine.try_call("history", {{"actor", "log"}, {"from", 0}}),
                                  "history before the clear, after a crash");
  EXPECT_EQ(gone.code, Errc::cursor_expired);
  EXPECT_GE(gone.cursor.value_or(0), floor);
}

// `clear` leaves no trace of the cleared bytes anywhere the engine keeps output: the ring's
// shared memory (zeroed, including what lay under the pending PTY read's reservation, after the
// ring wrapped), the mirror (a snapshot), the history, the transcript's files, and the
// completed-session cache once the session ends.
TEST_F(Persistence, AClearLeavesNoTraceInTheRingTheMirrorTheCacheOrTheTranscript) {
  const std::string kMarker = "SECRET-MARKER-4711";
  EngineProcess engine;
  EngineConfig config = persisting(runtime_dir());
  config.args = {"--ring-bytes", "65536", "--grace-ms", "200"};
  ASSERT_TRUE(engine.start(config));
  // ~100 KB of marker lines: the 64 KiB ring wraps, so marker bytes also sit where the next read
  // will land. Then the program waits for input, with a PTY read pending. (The marker is built
  // by printf: the actor record keeps the command line, which is not output.)
  engine.spawn("a", {"sh", "-c",
                     "i=0; while [ $i -lt 3000 ]; do printf 'SECRET-%s-4711 line %s\\n' MARKER $i; "
                     "i=$((i+1)); done; echo ready; read x; echo \"then $x\"; read y"});
  engine.wait_output("a", "ready");
  // The ring's data memfd, as any process of the user can open it.
  const fs::path segment = "/proc/" + std::to_string(engine.pid()) + "/fd/" +
                           std::to_string(engine.ring_of("a").data_fd);
  const auto contains_marker = [&](const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes(std::istreambuf_iterator<char>(in), {});
    return bytes.find(kMarker) != std::string::npos;
  };
  ASSERT_TRUE(contains_marker(segment)) << "the marker is in the ring before the clear";
  wait_until(
      [&] {
        for (const auto& f : fs::directory_iterator(folder("a")))
          if (contains_marker(f.path())) return true;
        return false;
      },
      "the marker to reach the transcript");

  // The screen shows marker lines too: clear it as well.
  const std::uint64_t floor =
      engine.call("clear", {{"actor", "a"}, {"screen", true}}).header.at("floor");
  wait_until([&] { return !contains_marker(segment); }, "the ring's shared memory to be wiped");
  wait_until(
      [&] {
        for (const auto& f : fs::directory_iterator(folder("a")))
          if (contains_marker(f.path())) return false;
        return true;
      },
      "the transcript's files to lose the marker");
  EXPECT_EQ(engine.call("snapshot", {{"actor", "a"}}).payload.find(kMarker), std::string::npos);
  EXPECT_EQ(expect_error(engine.try_call("history", {{"actor", "a"}, {"from", 0}}), "history").code,
            Errc::cursor_expired);

  // New output after the clear is kept and served; the marker stays gone, also from the
  // completed-session cache once the session ends.
  engine.call("input", {{"actor", "a"}}, "fresh\n");
  engine.wait_output("a", "then fresh");
  EXPECT_FALSE(contains_marker(segment));
  engine.call("stop", {{"actor", "a"}, {"grace_ms", 0}});
  engine.wait_sealed("a");
  const std::string after = engine.history("a", floor);
  EXPECT_NE(after.find("then fresh"), std::string::npos);
  EXPECT_EQ(after.find(kMarker), std::string::npos);
  EXPECT_FALSE(contains_marker(segment));
}

TEST_F(Persistence, DeleteRemovesTheTranscript) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start(persisting(runtime_dir())));
  engine.spawn("log", pattern_argv(10'000));
  engine.wait_sealed("log");
  wait_until([&] { return fs::exists(folder("log") / "actor.json"); }, "the actor record");
  engine.call("delete", {{"actor", "log"}});
  EXPECT_FALSE(fs::exists(folder("log")));
  const fs::path trash = folder("log").parent_path() / ".trash";
  wait_until([&] { return fs::is_empty(trash); }, "the writer to delete the folder");
  // A new actor of the same name starts afresh, its transcript healthy.
  engine.spawn("log", pattern_argv(2000));
  engine.wait_sealed("log");
  EXPECT_TRUE(engine.status("log").at("archive_error").is_null());
  EXPECT_EQ(transcript(folder("log"), 0, 2000), expected(0, 2000));
  engine.call("delete", {{"actor", "log"}});
  engine.stop();
  EngineProcess next;
  ASSERT_TRUE(next.start(persisting(runtime_dir())));
  EXPECT_EQ(next.call("list").header.at("actors").size(), 0u);
}

TEST_F(Persistence, TurningPersistenceOffStopsWritingAndDeletesNothing) {
  {
    EngineProcess engine;
    ASSERT_TRUE(engine.start(persisting(runtime_dir())));
    engine.spawn("log", pattern_argv(20'000));
    engine.wait_sealed("log");
    engine.stop();
  }
  const auto files_of = [&] {
    std::map<std::string, std::uintmax_t> files;
    for (const auto& e : fs::recursive_directory_iterator(folder("log").parent_path()))
      if (e.is_regular_file()) files[e.path().string()] = e.file_size();
    return files;
  };
  const auto before = files_of();
  ASSERT_FALSE(before.empty());
  {
    EngineProcess engine;
    EngineConfig config;
    config.runtime_dir = runtime_dir();
    config.settings_yaml = "terminal_transcript:\n  persist: false\n";
    ASSERT_TRUE(engine.start(config));
    EXPECT_EQ(engine.call("list").header.at("actors").size(), 0u) << "nothing restored";
    engine.spawn("log", pattern_argv(5'000));  // the same name, in memory only
    engine.wait_sealed("log");
    engine.call("delete", {{"actor", "log"}});
    engine.stop();
  }
  EXPECT_EQ(files_of(), before) << "a memory-only engine touched the transcripts";
  // Turned on again: the actor comes back as it was.
  EngineProcess engine;
  ASSERT_TRUE(engine.start(persisting(runtime_dir())));
  EXPECT_EQ(engine.history("log"), expected(0, 20'000));
}

TEST_F(Persistence, AMemoryOnlyEngineIsANewEpochEachStart) {
  std::string epoch;
  {
    EngineProcess engine;
    EngineConfig config;
    config.runtime_dir = runtime_dir();
    ASSERT_TRUE(engine.start(config));
    engine.spawn("log", pattern_argv(1000));
    engine.wait_sealed("log");
    epoch = engine.status("log").at("epoch");
    engine.stop();
  }
  EXPECT_FALSE(fs::exists(Places::at(runtime_dir()).transcripts_dir()));
  EngineProcess engine;
  EngineConfig config;
  config.runtime_dir = runtime_dir();
  ASSERT_TRUE(engine.start(config));
  EXPECT_EQ(engine.call("list").header.at("actors").size(), 0u);
  engine.spawn("log", pattern_argv(1000));
  engine.wait_sealed("log");
  EXPECT_NE(engine.status("log").at("epoch"), epoch);
  const Error wrong =
      expect_error(engine.try_call("history", {{"actor", "log"}, {"from", 0}, {"epoch", epoch}}),
                   "an old epoch's cursor");
  EXPECT_EQ(wrong.code, Errc::wrong_epoch);
}

}  // namespace
}  // namespace backscroll::testing
