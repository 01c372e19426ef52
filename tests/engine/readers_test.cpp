// Readers seen (docs/protocol.md, `reader`): a shm reader that announces itself over the control
// socket shows in its actor's status with the cursor it reported, its lag in bytes and
// milliseconds and its pid, until its connection ends; the mirror's and the transcript
// writer's lags show beside. Announcing never touches the ring, and bad reports are refused.
#include <unistd.h>

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

Result<Frame> announce(control::ControlClient& client, const std::string& actor,
                       const std::string& name, std::uint64_t cursor) {
  return client.call("reader", {{"actor", actor}, {"name", name}, {"cursor", cursor}});
}

TEST(ReadersSeen, AnAnnouncedReaderShowsItsLagUntilItsConnectionEnds) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start());
  engine.spawn("w", {"sh", "-c", "printf abcdefghij; exec cat"});
  engine.wait_output("w", "abcdefghij");
  const std::uint64_t committed = engine.status("w").at("committed");
  ASSERT_EQ(committed, 10u);
  EXPECT_TRUE(engine.status("w").at("readers").empty());

  std::optional<control::ControlClient> connection(connect_client(engine.places()));
  control::ControlClient& reader = *connection;
  auto r = announce(reader, "w", "phone", 4);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->header.at("lag_bytes"), 6);
  EXPECT_EQ(r->header.at("committed"), 10);
  Json status = engine.status("w");
  ASSERT_EQ(status.at("readers").size(), 1u) << status.dump();
  const Json& phone = status.at("readers")[0];
  EXPECT_EQ(phone.at("name"), "phone");
  EXPECT_EQ(phone.at("pid"), ::getpid());  // the connection's process
  EXPECT_EQ(phone.at("cursor"), 4);
  EXPECT_EQ(phone.at("lag_bytes"), 6);
  EXPECT_GE(phone.at("lag_ms").get<std::int64_t>(), 0) << status.dump();
  // The mirror has parsed everything; no transcript is kept.
  wait_until([&] { return engine.status("w").at("mirror_lag") == 0; }, "the mirror caught up");
  EXPECT_TRUE(status.at("transcript_lag").is_null());

  // A later report updates it; a second name is a second reader, after the first.
  ASSERT_TRUE(announce(reader, "w", "phone", 10));
  ASSERT_TRUE(announce(reader, "w", "status-detector", 7));
  status = engine.status("w");
  ASSERT_EQ(status.at("readers").size(), 2u) << status.dump();
  EXPECT_EQ(status.at("readers")[0].at("lag_bytes"), 0);
  EXPECT_EQ(status.at("readers")[0].at("lag_ms"), 0);
  EXPECT_EQ(status.at("readers")[1].at("name"), "status-detector");
  EXPECT_EQ(status.at("readers")[1].at("lag_bytes"), 3);

  // Bad reports change nothing and say why.
  const auto code = [&](const Json& fields) {
    auto bad = reader.call("reader", fields);
    return bad ? std::optional<Errc>() : std::optional(bad.error().code);
  };
  EXPECT_EQ(code({{"actor", "w"}, {"name", "x"}, {"cursor", 11}}), Errc::cursor_in_future);
  EXPECT_EQ(code({{"actor", "w"}, {"name", ""}, {"cursor", 1}}), Errc::bad_request);
  EXPECT_EQ(code({{"actor", "w"}, {"name", "a\nb"}, {"cursor", 1}}), Errc::bad_request);
  EXPECT_EQ(code({{"actor", "w"}, {"name", std::string(65, 'n')}, {"cursor", 1}}),
            Errc::bad_request);
  EXPECT_EQ(code({{"actor", "w"}, {"name", "x"}}), Errc::bad_request);
  EXPECT_EQ(code({{"actor", "nobody"}, {"name", "x"}, {"cursor", 0}}), Errc::no_such_actor);
  EXPECT_EQ(engine.status("w").at("readers").size(), 2u);

  // Bounded per connection.
  for (int i = 2; i < 64; ++i) ASSERT_TRUE(announce(reader, "w", "r" + std::to_string(i), 0));
  EXPECT_EQ(code({{"actor", "w"}, {"name", "one too many"}, {"cursor", 0}}), Errc::too_large);

  // The connection ends: its readers go.
  connection.reset();
  wait_until([&] { return engine.status("w").at("readers").empty(); }, "the readers to go");
}

TEST(ReadersSeen, TheTranscriptWritersLagShowsWhenTranscriptsAreKept) {
  EngineProcess engine;
  ASSERT_TRUE(engine.start(EngineConfig::with({"--persist", "--grace-ms", "500"})));
  engine.spawn("p", {"sh", "-c", "echo kept; exec cat"});
  engine.wait_output("p", "kept");
  wait_until([&] { return engine.status("p").at("transcript_lag") == 0; },
             "the writer to take every byte");
}

}  // namespace
}  // namespace backscroll::testing
