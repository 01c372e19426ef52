// TranscriptWriter: the writer thread keeps each actor's ring in its TranscriptStore.
// - Every byte reaches the transcript; a seal is answered once they are appended and synced.
// - Session starts and clears apply in stream order: after the bytes committed before them; a
//   clear whose floor the writer meets before its mark is waited for, not taken for a loss.
// - The writer is an internal consumer: its gate position follows what it has appended.
// - An I/O error gives the transcript up: archive_error, the consumer lets go, seals still
//   answered (not durable). Seals for unknown actors are answered, never left hanging.
// - The actor record is written in stream order, 0600; a removal with erase deletes the folder.
// - Stopping the thread first appends, applies and syncs everything sent before (shutdown).
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/store/lease_file.hpp"
#include "engine/transcript_writer.hpp"
#include "shm/control_frame.hpp"
#include "tests/engine/crash_image.hpp"
#include "tests/engine/test_ring.hpp"

namespace backscroll::testing {
namespace {

using engine::TranscriptWriter;
using engine::WriterEvent;
using store::TranscriptStore;

std::string read_all(const TranscriptStore& t) {
  std::string out;
  std::vector<char> buf(64 * 1024);
  for (Cursor at = t.oldest(); at < t.end();) {
    auto n = t.read(at, buf);
    if (!n || *n == 0) break;
    out.append(buf.data(), *n);
    at = at + *n;
  }
  return out;
}

// The actors' folders, removed once the writer that writes them has been joined (declared
// before it).
struct ScratchDir {
  ScratchDir() {
    char tmpl[] = "/tmp/bs-writer-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path path;
};

class TranscriptWriterTest : public ::testing::Test {
 protected:
  TranscriptWriterTest() : writer_(notify_.fd) {}

  std::filesystem::path folder(engine::WriterActorId id) const {
    return root_.path / ("actor" + std::to_string(id));
  }

  TestRing& add(engine::WriterActorId id, store::TranscriptOptions options = {}) {
    rings_.push_back(std::make_unique<TestRing>("actor" + std::to_string(id), notify_.fd));
    TestRing& ring = *rings_.back();
    consumers_.push_back(ring.gate.attach(ring.writer.committed()));
    auto store = TranscriptStore::open(folder(id), options);
    EXPECT_TRUE(store) << store.error().describe();
    writer_.add_actor(id, ring.reader(), consumers_.back(), std::move(*store), 0xe0, 1);
    return ring;
  }

  // The next event of any kind (poll on the notify eventfd, generous timeout).
  WriterEvent next_any() {
    WriterEvent e;
    for (int i = 0; i < 3000; ++i) {
      if (writer_.next_event(e)) return e;
      pollfd p{notify_.fd, POLLIN, 0};
      ::poll(&p, 1, 10);
      std::uint64_t drained;
      [[maybe_unused]] auto n = ::read(notify_.fd, &drained, sizeof drained);
    }
    ADD_FAILURE() << "no event from the writer thread";
    return e;
  }

  // The next event other than a lease grant; grants passed over are kept in leases_.
  WriterEvent next() {
    for (;;) {
      WriterEvent e = next_any();
      if (e.kind != WriterEvent::Kind::lease) return e;
      leases_.push_back(e);
    }
  }

  // The next lease grant.
  WriterEvent next_lease() {
    if (leases_.empty()) {
      const WriterEvent e = next_any();
      EXPECT_EQ(e.kind, WriterEvent::Kind::lease) << "another event first";
      return e;
    }
    const WriterEvent e = leases_.front();
    leases_.erase(leases_.begin());
    return e;
  }

  std::optional<store::CursorLease> lease_on_disk(engine::WriterActorId id) const {
    auto lease = store::LeaseFile::read(folder(id));
    EXPECT_TRUE(lease) << lease.error().describe();
    return lease ? *lease : std::nullopt;
  }

  WriterEvent seal(engine::WriterActorId id, TestRing& ring, std::uint64_t token) {
    writer_.seal(id, ring.writer.committed(), token);
    const WriterEvent e = next();
    EXPECT_EQ(e.kind, WriterEvent::Kind::sealed);
    EXPECT_EQ(e.token, token);
    return e;
  }

  TranscriptStore reopened(engine::WriterActorId id) {
    auto t = TranscriptStore::open(folder(id), {});
    EXPECT_TRUE(t);
    return std::move(*t);
  }

  NotifyFd notify_;  // first: closed after the worker is joined
  ScratchDir root_;
  std::vector<std::unique_ptr<TestRing>> rings_;
  std::vector<std::shared_ptr<engine::InternalConsumer>> consumers_;
  std::vector<WriterEvent> leases_;  // grants next() passed over, oldest first
  TranscriptWriter writer_;          // last: stopped before the rings it reads go away
};

TEST_F(TranscriptWriterTest, KeepsEveryByteAndASealMakesThemDurable) {
  TestRing& ring = add(1);
  std::mt19937 gen(5);
  std::string all;
  for (int i = 0; i < 300; ++i) {
    std::string chunk(1 + gen() % 9000, '\0');
    for (char& c : chunk) c = static_cast<char>(gen());
    ring.write(chunk);
    all += chunk;
    if (i % 50 == 0) writer_.wake();
  }
  writer_.wake();
  EXPECT_TRUE(seal(1, ring, 7).durable);
  EXPECT_EQ(consumers_[0]->position(), ring.writer.committed());
  const TranscriptStore t = reopened(1);
  EXPECT_EQ(t.end(), ring.writer.committed());
  EXPECT_EQ(read_all(t), all);
  EXPECT_EQ(t.segments().front().epoch, 0xe0u);
}

TEST_F(TranscriptWriterTest, SessionsAndClearsApplyAfterTheBytesBeforeThem) {
  TestRing& ring = add(1);
  ring.write("first session ");
  writer_.new_session(1, ring.writer.committed(), 2);
  ring.write("second session ");
  writer_.wake();
  EXPECT_TRUE(seal(1, ring, 1).durable);
  {
    const TranscriptStore t = reopened(1);
    ASSERT_EQ(t.segments().size(), 2u);
    EXPECT_EQ(t.segments()[0].session, 1u);
    EXPECT_EQ(t.segments()[1].session, 2u);
    EXPECT_EQ(read_all(t), "first session second session ");
  }
  ring.write("cleared ");
  ring.writer.clear();
  writer_.clear(1, ring.writer.committed());
  ring.write("after the clear");
  writer_.wake();
  EXPECT_TRUE(seal(1, ring, 2).durable);
  const TranscriptStore t = reopened(1);
  EXPECT_EQ(read_all(t), "after the clear");
  EXPECT_EQ(t.oldest(), ring.writer.committed() - 15);
}

// Cursor leases: a session's open lease is durable before it is granted, and tagged with the
// session; it is renewed before the stream reaches it (never after); a seal replaces it with a
// closed lease at the session's end, after the bytes are synced.
TEST_F(TranscriptWriterTest, ASessionIsGrantedADurableLeaseRenewedAheadAndClosedByItsSeal) {
  TestRing& ring = add(1);
  EXPECT_EQ(lease_on_disk(1), std::nullopt) << "no lease before a session";
  const Cursor start = ring.writer.committed();
  writer_.new_session(1, start, 2);
  const WriterEvent first = next_lease();
  EXPECT_EQ(first.id, 1u);
  EXPECT_EQ(first.session, 2u);
  const std::uint64_t span = TranscriptWriter::lease_bytes(TestRing::kCapacity);
  EXPECT_EQ(first.lease, start + span);
  EXPECT_EQ(lease_on_disk(1), (store::CursorLease{first.lease, true}));

  // Bytes up to just before half the lease: no renewal; one more byte: renewed, past it.
  std::string chunk(64 * 1024, 'x');
  while (ring.writer.committed() + chunk.size() + span / 2 < first.lease) {
    ring.write(chunk);
    writer_.wake();
  }
  EXPECT_TRUE(seal(1, ring, 9).durable);  // everything so far appended and synced
  EXPECT_TRUE(leases_.empty()) << "renewed with more than half the lease left";
  EXPECT_EQ(lease_on_disk(1), (store::CursorLease{ring.writer.committed(), false}))
      << "the seal closes the lease at the session's end";

  // The next session: a new open lease, then renewals while its bytes come.
  writer_.new_session(1, ring.writer.committed(), 3);
  const WriterEvent second = next_lease();
  EXPECT_EQ(second.session, 3u);
  EXPECT_EQ(second.lease, ring.writer.committed() + span);
  Cursor granted = second.lease;
  int renewals = 0;
  for (int i = 0; i < 600; ++i) {  // 37.5 MiB: more than twice the span
    ASSERT_LT(ring.writer.committed() + chunk.size(), granted) << "a commit would pass the lease";
    ring.write(chunk);
    writer_.wake();
    // Keep the ring's producer no further ahead than the engine's gate would let it be.
    while (consumers_[0]->position() + TestRing::kCapacity / 2 < ring.writer.committed()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      writer_.wake();
    }
    // A producer that had to wait would get its grant here; it must come before the limit.
    while (ring.writer.committed() + chunk.size() >= granted) {
      const WriterEvent e = next_lease();
      ASSERT_EQ(e.session, 3u);
      ASSERT_GT(e.lease, granted);
      granted = e.lease;
      ++renewals;
    }
    WriterEvent e;
    while (writer_.next_event(e)) {
      ASSERT_EQ(e.kind, WriterEvent::Kind::lease);
      EXPECT_GT(e.lease, granted);
      granted = e.lease;
      ++renewals;
    }
  }
  EXPECT_GE(renewals, 2);
  const auto open = lease_on_disk(1);
  ASSERT_TRUE(open);
  EXPECT_TRUE(open->open);
  EXPECT_GE(open->limit, granted) << "a grant is never ahead of the file";
  EXPECT_TRUE(seal(1, ring, 10).durable);
  EXPECT_EQ(lease_on_disk(1), (store::CursorLease{ring.writer.committed(), false}));
}

// A grant issued before a seal carries the old session: it can never let the next session read
// before that session's own lease is on disk.
TEST_F(TranscriptWriterTest, GrantsNameTheSessionTheyAreFor) {
  TestRing& ring = add(1);
  writer_.new_session(1, ring.writer.committed(), 4);
  ring.write("four");
  writer_.seal(1, ring.writer.committed(), 1);
  writer_.new_session(1, ring.writer.committed(), 5);
  writer_.wake();
  const WriterEvent a = next_any();
  const WriterEvent sealed = next_any();
  const WriterEvent b = next_any();
  ASSERT_EQ(a.kind, WriterEvent::Kind::lease);
  EXPECT_EQ(a.session, 4u);
  ASSERT_EQ(sealed.kind, WriterEvent::Kind::sealed);
  EXPECT_TRUE(sealed.durable);
  ASSERT_EQ(b.kind, WriterEvent::Kind::lease);
  EXPECT_EQ(b.session, 5u);
  EXPECT_EQ(b.lease, ring.writer.committed() + TranscriptWriter::lease_bytes(TestRing::kCapacity));
  EXPECT_EQ(lease_on_disk(1), (store::CursorLease{b.lease, true}));
}

TEST_F(TranscriptWriterTest, AClearAheadOfTheWriterIsWaitedForNotAFailure) {
  TestRing& ring = add(1);
  ring.write(std::string(100'000, 'c'));  // not yet appended: the writer was not woken
  ring.writer.clear();                    // the floor jumps over them
  writer_.wake();                         // the writer finds them below the floor
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  writer_.clear(1, ring.writer.committed());  // the mark arrives after
  ring.write("after");
  writer_.wake();
  EXPECT_TRUE(seal(1, ring, 1).durable) << "the transcript was given up";
  EXPECT_EQ(read_all(reopened(1)), "after");
}

TEST_F(TranscriptWriterTest, AnIoErrorGivesTheTranscriptUpAndLetsTheActorGo) {
  TestRing& ring = add(1);
  TestRing& other = add(2);
  ring.write("kept ");
  other.write("other actor");
  writer_.wake();
  EXPECT_TRUE(seal(1, ring, 1).durable);
  // The folder disappears (a full disk does the same at the next write): the next segment
  // cannot be created.
  std::filesystem::remove_all(folder(1));
  writer_.new_session(1, ring.writer.committed(), 2);
  ring.write("lost to the disk");
  writer_.wake();
  const WriterEvent error = next();
  EXPECT_EQ(error.kind, WriterEvent::Kind::archive_error);
  EXPECT_EQ(error.id, 1u);
  EXPECT_NE(error.error.find("io_error"), std::string::npos) << error.error;
  EXPECT_TRUE(consumers_[0]->detached());
  // Seals are still answered, not durable; the other actor is not affected.
  EXPECT_FALSE(seal(1, ring, 2).durable);
  EXPECT_TRUE(seal(2, other, 3).durable);
  EXPECT_EQ(read_all(reopened(2)), "other actor");
}

// A failing disk below the store, injected at the Nth operation of each kind in turn (writes,
// syncs, creating, removing and renaming files, folder syncs; across segments, the actor record
// and the lease): the transcript is given up with archive_error saying where (archived_to), the
// actor is let go (its consumer detaches), and after a reopen every retained byte before
// archived_to reads back exact, with nothing reported damaged.
TEST_F(TranscriptWriterTest, AFailingOperationOfAnyKindAtAnyPointKeepsAnExactPrefix) {
  using store::IoOp;
  engine::WriterActorId id = 100;
  std::uint64_t token = 1000;
  std::mt19937 gen(9);
  const std::pair<IoOp, std::uint64_t> kinds[] = {{IoOp::write, 12}, {IoOp::sync, 12},
                                                  {IoOp::create, 6}, {IoOp::remove, 3},
                                                  {IoOp::rename, 6}, {IoOp::folder_sync, 6}};
  for (const auto& [op, most] : kinds) {
    for (std::uint64_t n = 1; n <= most; ++n) {
      SCOPED_TRACE("operation " + std::to_string(static_cast<int>(op)) + ", number " +
                   std::to_string(n));
      auto plan = std::make_shared<store::IoFaultPlan>(op, n);
      ++id;
      // Small segments and retention: segment headers are written and old segments removed (and
      // either can fail) along the way.
      TestRing& ring = add(id, {8192, 4096, plan});
      const std::size_t consumer = consumers_.size() - 1;
      std::string all;
      std::optional<WriterEvent> error;
      for (int round = 0; round < 16 && !error; ++round) {
        // A session per round: its open lease and its seal's closed one can fail too. As the io
        // thread does, the session's bytes come only once its lease is granted.
        writer_.new_session(id, ring.writer.committed(), 2 + static_cast<std::uint64_t>(round));
        if (const WriterEvent granted = next_any(); granted.kind != WriterEvent::Kind::lease) {
          EXPECT_EQ(granted.kind, WriterEvent::Kind::archive_error);
          error = granted;
          break;
        }
        std::string chunk(1500, '\0');
        for (char& c : chunk) c = static_cast<char>(gen());
        ring.write(chunk);
        all += chunk;
        writer_.save_record(id, ring.writer.committed(),
                            "{\"round\":" + std::to_string(round) + "}");
        writer_.wake();
        writer_.seal(id, ring.writer.committed(), ++token);
        for (;;) {  // up to this seal's answer, noting an archive_error on the way
          const WriterEvent e = next();
          if (e.kind == WriterEvent::Kind::archive_error) {
            EXPECT_EQ(e.id, id);
            error = e;
            continue;
          }
          EXPECT_EQ(e.token, token);
          EXPECT_EQ(e.durable, !error.has_value());
          break;
        }
      }
      ASSERT_TRUE(error) << "the injected fault never fired";
      EXPECT_NE(error->error.find(std::strerror(EIO)), std::string::npos) << error->error;
      EXPECT_TRUE(consumers_[consumer]->detached());
      const std::uint64_t kept = value(error->archived_to);
      EXPECT_LE(kept, all.size());
      if (op == IoOp::sync) {
        EXPECT_EQ(kept, all.size()) << "a failed sync loses no write";
      }
      const TranscriptStore reopened_store = reopened(id);
      EXPECT_TRUE(reopened_store.damaged().empty());
      EXPECT_EQ(reopened_store.end(), error->archived_to);
      const std::uint64_t oldest = value(reopened_store.oldest());
      EXPECT_TRUE(read_all(reopened_store) == all.substr(oldest, kept - oldest))
          << "the retained prefix before the fault";
      writer_.remove_actor(id);
    }
  }
}

// A power loss at every file operation of a stream of small sessions (each: its lease, 1500
// bytes committed only once it is granted, an actor record, a seal), with small segments and
// retention at work. For each crash point, several crash images (crash_image.hpp: synced bytes
// kept, the rest kept, lost, reordered or zero-filled sector by sector, names either way):
// - the store opens, and every byte it serves is the byte that was written;
// - every byte a durable seal covered is still served (nothing synced is lost or reported lost);
// - the restart point resume_after derives from the image is past every committed byte, so
//   no cursor a reader may have consumed is ever reused.
TEST_F(TranscriptWriterTest, APowerLossAtAnyOperationKeepsEverySyncedByteAndNoCursorIsReused) {
  engine::WriterActorId id = 500;
  std::uint64_t token = 5000;
  std::mt19937_64 gen(21);
  int images = 0;
  for (std::uint64_t crash_at = 1;; ++crash_at) {
    SCOPED_TRACE("power lost at operation " + std::to_string(crash_at));
    auto recorder = std::make_shared<CrashRecorder>(crash_at);
    ++id;
    TestRing& ring = add(id, {8192, 4096, recorder});
    // The next writer event for this actor (earlier crash points leave answers behind), or
    // nothing once the writer froze at the crash point.
    const auto await = [&]() -> std::optional<WriterEvent> {
      for (int i = 0; i < 3000; ++i) {
        WriterEvent e;
        if (writer_.next_event(e)) {
          if (e.id == id) return e;
          continue;
        }
        if (recorder->frozen()) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ADD_FAILURE() << "no event and no crash";
      return std::nullopt;
    };
    std::string all;
    Cursor sealed{0};  // every byte before it was synced by a durable seal
    bool crashed = false;
    for (int round = 0; round < 8 && !crashed; ++round) {
      writer_.new_session(id, ring.writer.committed(), 2 + static_cast<std::uint64_t>(round));
      const auto granted = await();
      if (!granted) {
        crashed = true;
        break;
      }
      ASSERT_EQ(granted->kind, WriterEvent::Kind::lease);
      std::string chunk(1500, '\0');
      for (char& c : chunk) c = static_cast<char>(gen());
      ASSERT_LT(ring.writer.committed() + chunk.size(), granted->lease);
      ring.write(chunk);
      all += chunk;
      writer_.save_record(id, ring.writer.committed(),
                          "{\"cursor\":" + std::to_string(value(ring.writer.committed())) + "}");
      writer_.wake();
      writer_.seal(id, ring.writer.committed(), ++token);
      const auto answer = await();
      if (!answer) {
        crashed = true;
        break;
      }
      ASSERT_EQ(answer->kind, WriterEvent::Kind::sealed);
      ASSERT_TRUE(answer->durable);
      sealed = ring.writer.committed();
    }
    if (!crashed) {
      recorder->release();
      writer_.remove_actor(id);
      EXPECT_GT(crash_at, 40u) << "a stream of 8 sessions takes more operations than that";
      break;  // every operation of the stream was a crash point
    }
    const Cursor published = ring.writer.committed();
    for (int i = 0; i < 4; ++i, ++images) {
      SCOPED_TRACE("image " + std::to_string(i));
      const auto image = root_.path / ("image" + std::to_string(id) + "-" + std::to_string(i));
      recorder->write_image(folder(id), image, gen);
      auto store = TranscriptStore::open(image, {});
      ASSERT_TRUE(store) << store.error().describe();
      for (const auto& gap : store->damaged()) {
        EXPECT_GE(gap.from, sealed) << "synced bytes reported lost: " << value(gap.from) << ".."
                                    << value(gap.to) << " (" << gap.reason << ")";
      }
      EXPECT_GE(store->end(), sealed) << "synced bytes lost";
      for (Cursor at = store->oldest(); at < store->end();) {
        std::vector<char> buf(4096);
        auto n = store->read(at, buf);
        if (!n && n.error().code == Errc::data_lost) {
          at = Cursor{*n.error().cursor};
          continue;
        }
        ASSERT_TRUE(n) << n.error().describe();
        ASSERT_GT(*n, 0u);
        ASSERT_TRUE(std::string_view(buf.data(), *n) == std::string_view(all).substr(value(at), *n))
            << "bytes at " << value(at) << " differ from what was written";
        at = at + *n;
      }
      std::ifstream record_file(image / "actor.json");
      const std::string text(std::istreambuf_iterator<char>(record_file), {});
      const auto record = control::Json::parse(text, nullptr, false);
      const Cursor recorded{record.is_object() ? record.value("cursor", std::uint64_t{0}) : 0};
      const auto resumed =
          store::resume_after(store->end(), recorded, store::LeaseFile::read(image));
      EXPECT_GE(resumed.next, published)
          << "a restart would reuse cursors readers may have consumed";
    }
    recorder->release();  // the operation fails: the transcript is given up
    bool given_up = false;
    for (int i = 0; i < 4 && !given_up; ++i)
      given_up = next().kind == WriterEvent::Kind::archive_error;
    EXPECT_TRUE(given_up);
    writer_.remove_actor(id);
  }
  EXPECT_GT(images, 100);
}

TEST_F(TranscriptWriterTest, SealsOfUnknownAndRemovedActorsAreAnsweredNotDurable) {
  TestRing& ring = add(1);
  writer_.seal(99, Cursor{0}, 5);
  const WriterEvent unknown = next();
  EXPECT_EQ(unknown.token, 5u);
  EXPECT_FALSE(unknown.durable);
  writer_.remove_actor(1);
  EXPECT_FALSE(seal(1, ring, 6).durable);
}

TEST_F(TranscriptWriterTest, TheRecordIsWrittenInStreamOrderAndRemovalCanErase) {
  TestRing& ring = add(1);
  const auto record = folder(1) / "actor.json";
  auto read_record = [&] {
    std::ifstream in(record);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  ring.write("before the first record ");
  writer_.save_record(1, ring.writer.committed(), "{\"first\":1}");
  writer_.wake();
  EXPECT_TRUE(seal(1, ring, 1).durable);
  EXPECT_EQ(read_record(), "{\"first\":1}");
  EXPECT_EQ(std::filesystem::status(record).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ring.write("more");
  writer_.save_record(1, ring.writer.committed(), "{\"second\":2}");
  writer_.wake();
  EXPECT_TRUE(seal(1, ring, 2).durable);
  EXPECT_EQ(read_record(), "{\"second\":2}");
  EXPECT_FALSE(std::filesystem::exists(folder(1) / "actor.json.tmp"));

  TestRing& kept = add(2);
  kept.write("kept after removal");
  writer_.wake();
  EXPECT_TRUE(seal(2, kept, 3).durable);
  writer_.remove_actor(2);
  writer_.remove_actor(1, folder(1));
  EXPECT_FALSE(seal(1, ring, 4).durable);  // the removals were applied before this seal
  EXPECT_FALSE(std::filesystem::exists(folder(1)));
  EXPECT_EQ(read_all(reopened(2)), "kept after removal");
}

TEST_F(TranscriptWriterTest, StoppingFirstAppliesAndSyncsEverythingSentBefore) {
  rings_.push_back(std::make_unique<TestRing>("late", notify_.fd));
  TestRing& ring = *rings_.back();
  auto consumer = ring.gate.attach(ring.writer.committed());
  {
    TranscriptWriter local(notify_.fd);
    auto store = TranscriptStore::open(folder(9), {});
    ASSERT_TRUE(store);
    local.add_actor(9, ring.reader(), consumer, std::move(*store), 0xe0, 1);
    ring.write("cleared before the stop ");
    ring.writer.clear();
    local.clear(9, ring.writer.committed());
    ring.write("kept");
    local.save_record(9, ring.writer.committed(), "{}");
  }  // no wake, no seal: the destructor's stop
  const TranscriptStore t = reopened(9);
  EXPECT_EQ(read_all(t), "kept");
  EXPECT_TRUE(std::filesystem::exists(folder(9) / "actor.json"));
  EXPECT_EQ(consumer->position(), ring.writer.committed());
}

}  // namespace
}  // namespace backscroll::testing
