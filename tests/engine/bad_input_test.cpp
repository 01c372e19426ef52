// A malformed, hostile or merely unlucky request gets its documented error code, closes at most
// its own connection, and never disturbs the engine or other clients: after every case a fresh
// client's ping succeeds and a witness actor still echoes its input (docs/protocol.md, "Error
// codes"). Framing errors are written by hand on a raw socket.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "shm/control_frame.hpp"
#include "tests/engine/engine_process.hpp"
#include "tests/engine/pattern.hpp"

namespace backscroll::testing {
namespace {

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(engine_.start());
    // The witness echoes what it is sent (the cooked terminal echoes, cat repeats the line).
    witness_pid_ = engine_.spawn("witness", {"cat"}).at("pid").get<std::int64_t>();
  }

  // The engine still serves a fresh client, and the witness still runs and echoes.
  void expect_healthy() {
    auto fresh = engine_.connect();
    auto pong = fresh.call("ping");
    ASSERT_TRUE(pong) << pong.error().describe();
    EXPECT_EQ(pong->header.value("pid", 0), engine_.pid());
    const Json witness = engine_.status("witness");
    EXPECT_EQ(witness.at("state"), "running");
    EXPECT_EQ(witness.at("pid"), witness_pid_);
    const std::string token = "alive-" + std::to_string(++probes_);
    expect_ok(fresh.call("input", {{"actor", "witness"}}, token + "\r"), "input to the witness");
    engine_.wait_output("witness", token);
  }

  Error error_of(std::string_view op, Json fields, std::string_view payload = {}) {
    return expect_error(engine_.try_call(op, fields, payload),
                        std::string(op) + " " + fields.dump());
  }

  EngineProcess engine_;
  std::int64_t witness_pid_ = 0;
  int probes_ = 0;
};

TEST_F(BadInput, RandomBytesGetAtMostOneErrorThenAHangUp) {
  std::mt19937 random(20240601);
  for (int round = 0; round < 24; ++round) {
    std::string junk(1 + random() % 3000, '\0');
    for (char& c : junk) c = static_cast<char>(random());
    if (round % 3 == 1) junk[3] = 0;  // small claimed lengths too, not only huge ones
    if (round % 3 == 2) junk[2] = junk[3] = 0;
    RawConnection raw(engine_.places());
    raw.send(junk);
    raw.finish_sending();
    int frames = 0;
    while (auto frame = raw.next_frame()) {
      ++frames;
      auto error = control::error_from_response(frame->header);
      ASSERT_TRUE(error) << "round " << round << ": " << frame->header.dump();
      EXPECT_TRUE(error->code == Errc::bad_request || error->code == Errc::too_large)
          << "round " << round << ": " << error->describe();
    }
    EXPECT_LE(frames, 1) << "round " << round;
  }
  expect_healthy();
}

TEST_F(BadInput, HeaderClaimingFourGibibytesIsTooLargeAndClosesTheConnection) {
  RawConnection raw(engine_.places());
  raw.send(std::string(4, '\xff'));
  raw.expect_error_then_close(Errc::too_large);
  expect_healthy();
}

TEST_F(BadInput, PayloadOverSixteenMebibytesIsTooLargeAndNothingAfterItIsServed) {
  RawConnection raw(engine_.places());
  const std::string claim =
      control::Json{{"op", "input"}, {"id", 1}, {"actor", "witness"}, {"payload", (16u << 20) + 1}}
          .dump();
  raw.send(raw_frame(claim) + raw_frame(R"({"op":"ping","id":2})"));
  raw.expect_error_then_close(Errc::too_large);
  expect_healthy();
}

TEST_F(BadInput, FramesThatAreNotJsonObjectsAreBadRequestsAndCloseTheConnection) {
  const std::vector<std::string> headers{R"({"op": "ping", "id": )",
                                         "[1, 2, 3]",
                                         "\"ping\"",
                                         R"({"op":"ping","payload":"12"})",
                                         R"({"op":"ping","payload":-1})",
                                         "{\"op\":\"\xff\xfe\"}"};
  for (const std::string& header : headers) {
    SCOPED_TRACE(header);
    RawConnection raw(engine_.places());
    raw.send(raw_frame(header) + raw_frame(R"({"op":"ping","id":2})"));
    raw.expect_error_then_close(Errc::bad_request);
  }
  RawConnection empty(engine_.places());
  empty.send(std::string(4, '\0'));
  empty.expect_error_then_close(Errc::bad_request);
  expect_healthy();
}

TEST_F(BadInput, HeaderAtTheOneMebibyteBoundIsServedAndOneByteMoreIsTooLarge) {
  // A frame larger than one receive buffer, cut into pieces by the socket.
  auto header_of = [](std::size_t bytes) {
    std::string h = R"({"op":"ping","id":1,"pad":")";
    h += std::string(bytes - h.size() - 2, 'p');
    h += "\"}";
    return h;
  };
  RawConnection fits(engine_.places());
  ASSERT_TRUE(fits.send(raw_frame(header_of(control::kMaxHeaderBytes))));
  auto pong = fits.next_frame();
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->header.value("ok", false), true) << pong->header.dump();

  RawConnection over(engine_.places());
  over.send(raw_frame(header_of(control::kMaxHeaderBytes + 1)));
  over.expect_error_then_close(Errc::too_large);
  expect_healthy();
}

TEST_F(BadInput, FrameTricklingInOneByteAtATimeIsServed) {
  RawConnection slow(engine_.places());
  const std::string frame =
      control::encode_frame({{"op", "status"}, {"id", 9}, {"actor", "witness"}});
  for (const char c : frame) ASSERT_TRUE(slow.send(std::string_view(&c, 1)));
  auto answer = slow.next_frame();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->header.at("id"), 9);
  EXPECT_EQ(answer->header.at("actors").at(0).at("name"), "witness");
}

TEST_F(BadInput, UnknownOpIsAnsweredWithItsIdAndTheConnectionStaysOpen) {
  auto client = engine_.connect();
  const Error unknown = expect_error(client.call("fly"), "fly");
  EXPECT_EQ(unknown.code, Errc::unknown_op);
  EXPECT_TRUE(client.call("ping")) << "the connection closed after unknown_op";

  RawConnection raw(engine_.places());
  raw.send(raw_frame(R"({"op":"fly","id":{"mine":[1,2]}})") + raw_frame(R"({"id":3})") +
           raw_frame(R"({"op":7,"id":4})") + raw_frame(R"({"op":"ping","id":5})"));
  // An id must be a scalar (it is echoed and may be kept while a stop waits): an object id is
  // refused before the op is even looked at, and cannot be echoed.
  auto first = raw.next_frame();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->header.value("/error/code"_json_pointer, ""), "bad_request");
  EXPECT_FALSE(first->header.contains("id"));
  for (int id : {3, 4}) {
    auto frame = raw.next_frame();
    ASSERT_TRUE(frame);
    EXPECT_EQ(frame->header.at("id"), id);
    EXPECT_EQ(frame->header.value("/error/code"_json_pointer, ""), "bad_request");
  }
  auto pong = raw.next_frame();
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->header.at("id"), 5);
  EXPECT_EQ(pong->header.at("ok"), true);
  expect_healthy();
}

TEST_F(BadInput, EveryOpOnAnUnknownActorIsNoSuchActor) {
  const Json ghost{{"actor", "ghost"}};
  for (const char* op : {"status", "input", "clear", "stop", "restart", "delete"}) {
    EXPECT_EQ(error_of(op, ghost).code, Errc::no_such_actor) << op;
  }
  EXPECT_EQ(error_of("resize", {{"actor", "ghost"}, {"cols", 80}, {"rows", 24}}).code,
            Errc::no_such_actor);
  EXPECT_EQ(error_of("history", {{"actor", "ghost"}, {"from", 0}}).code, Errc::no_such_actor);
  expect_healthy();
}

TEST_F(BadInput, SpawnWithAnInvalidNameIsBadActorNameAndCreatesNothing) {
  const auto before = engine_.rings();
  const std::vector<std::string> names{"",    "../x",    std::string(65, 'a'), "-x", "a b",
                                       "x/y", ".hidden", "caf\xc3\xa9"};
  for (const std::string& name : names) {
    EXPECT_EQ(error_of("spawn", {{"actor", name}, {"argv", {"true"}}}).code, Errc::bad_actor_name)
        << "'" << name << "'";
  }
  EXPECT_EQ(engine_.rings(), before);
  EXPECT_EQ(engine_.call("list").header.at("actors").size(), 1u);
  engine_.spawn(std::string(64, 'a'), {"true"});  // the longest valid name
  expect_healthy();
}

TEST_F(BadInput, SpawnOfAnExistingNameIsActorExistsAndLeavesItAlone) {
  const Error exists = error_of("spawn", {{"actor", "witness"}, {"argv", {"true"}}});
  EXPECT_EQ(exists.code, Errc::actor_exists);
  expect_healthy();  // same pid, still echoing
}

TEST_F(BadInput, ResizeOutsideOneToOneThousandIsRefused) {
  auto resize = [&](Json cols, Json rows) {
    return error_of("resize", {{"actor", "witness"}, {"cols", cols}, {"rows", rows}}).code;
  };
  EXPECT_EQ(resize(100000, 24), Errc::too_large);
  EXPECT_EQ(resize(80, 1001), Errc::too_large);
  EXPECT_EQ(resize(0, 24), Errc::bad_request);
  EXPECT_EQ(resize(80, 0), Errc::bad_request);
  EXPECT_EQ(resize(-1, 24), Errc::bad_request);
  EXPECT_EQ(resize("80", 24), Errc::bad_request);
  EXPECT_EQ(resize(nullptr, 24), Errc::bad_request);
  const Json ok =
      engine_.call("resize", {{"actor", "witness"}, {"cols", 1000}, {"rows", 1}}).header;
  EXPECT_EQ(ok.at("cols"), 1000);
  EXPECT_EQ(engine_.status("witness").at("cols"), 1000);
  expect_healthy();
}

TEST_F(BadInput, MistypedFieldsAreBadRequestsNotInternalErrors) {
  // Every documented field with the wrong JSON type must be bad_request.
  const std::vector<std::pair<std::string, Json>> cases{
      {"spawn", {{"actor", "x"}, {"argv", "true"}}},
      {"spawn", {{"actor", "x"}, {"argv", Json::array()}}},
      {"spawn", {{"actor", "x"}, {"argv", Json::array({1})}}},
      {"spawn", {{"actor", "x"}, {"argv", {"true"}}, {"cwd", 5}}},
      {"spawn", {{"actor", "x"}, {"argv", {"true"}}, {"env", {{"A", 1}}}}},
      {"spawn", {{"actor", "x"}, {"argv", {"true"}}, {"env", {{"A=B", "c"}}}}},
      // execve would cut these short at the NUL without a word.
      {"spawn", {{"actor", "x"}, {"argv", {"echo", std::string("a\0b", 3)}}}},
      {"spawn", {{"actor", "x"}, {"argv", {"true"}}, {"cwd", std::string("/tmp\0/etc", 9)}}},
      {"spawn", {{"actor", "x"}, {"argv", {"true"}}, {"env", {{"A", std::string("1\0", 2)}}}}},
      {"spawn", {{"actor", 5}, {"argv", {"true"}}}},
      {"input", {{"actor", "witness"}, {"paste", "yes"}}},
      {"history", {{"actor", "witness"}, {"from", -1}}},
      {"history", {{"actor", "witness"}, {"from", "0"}}},
      {"history", {{"actor", "witness"}, {"from", 0}, {"max_bytes", 1.5}}},
      {"stop", {{"actor", "witness"}, {"grace_ms", "soon"}}},
  };
  for (const auto& [op, fields] : cases) {
    const Error e = error_of(op, fields);
    EXPECT_EQ(e.code, Errc::bad_request) << op << " " << fields.dump() << ": " << e.describe();
  }
  EXPECT_EQ(engine_.rings().size(), 1u);
  expect_healthy();
}

TEST_F(BadInput, InputAndResizeToAnIdleActorAreNotRunning) {
  engine_.spawn("done", {"true"});
  engine_.wait_sealed("done");
  EXPECT_EQ(error_of("input", {{"actor", "done"}}, "x").code, Errc::not_running);
  EXPECT_EQ(error_of("resize", {{"actor", "done"}, {"cols", 80}, {"rows", 24}}).code,
            Errc::not_running);
  expect_healthy();
}

TEST_F(BadInput, HistoryPastCommittedOrBelowTheFloorCarriesTheBoundaryCursor) {
  engine_.spawn("said", {"printf", "hello"});
  const Json session = engine_.wait_sealed("said");
  const std::uint64_t end = session.at("end");
  ASSERT_EQ(end, 5u);
  const Error future = error_of("history", {{"actor", "said"}, {"from", end + 1}});
  EXPECT_EQ(future.code, Errc::cursor_in_future);
  EXPECT_EQ(future.cursor, end);
  EXPECT_EQ(error_of("history", {{"actor", "said"}, {"from", 3}, {"to", 2}}).code,
            Errc::bad_request);
  const Frame at_end = engine_.call("history", {{"actor", "said"}, {"from", end}});
  EXPECT_EQ(at_end.payload, "");
  EXPECT_EQ(at_end.header.at("to"), end);

  EXPECT_EQ(engine_.call("clear", {{"actor", "said"}}).header.at("floor"), end);
  const Error expired = error_of("history", {{"actor", "said"}, {"from", 0}});
  EXPECT_EQ(expired.code, Errc::cursor_expired);
  EXPECT_EQ(expired.cursor, end);
  expect_healthy();
}

TEST_F(BadInput, InputFloodToAProgramThatDoesNotReadIsBoundedKeptInOrderAndBlocksNoOne) {
  TempDir dir;
  const auto go = dir.path() / "go";
  const auto out = dir.path() / "out";
  // Raw and silent (a cooked line discipline would drop input past 4 KiB per line and echo the
  // rest); it reads nothing until `go` exists, then copies what it receives to `out`.
  engine_.spawn("deaf", {"sh", "-c",
                         "stty raw -echo; echo ready; while [ ! -e " + go.string() +
                             " ]; do sleep 0.02; done; exec cat > " + out.string()});
  engine_.wait_output("deaf", "ready");

  const Pattern stream(5, /*crlf=*/false);
  constexpr std::size_t kChunk = 1 << 20;
  std::string accepted;
  int ok = 0;
  int refused = 0;
  auto flooder = engine_.connect();
  for (int i = 0; i < 100; ++i) {
    std::string chunk(kChunk, '\0');
    stream.fill(std::uint64_t{kChunk} * static_cast<std::uint64_t>(i), chunk);
    auto r = flooder.call("input", {{"actor", "deaf"}}, chunk);
    if (r) {
      ++ok;
      EXPECT_LE(r->header.at("queued").get<std::uint64_t>(), kChunk);
      accepted += chunk;
    } else {
      ++refused;
      EXPECT_EQ(r.error().code, Errc::too_large) << r.error().describe();
    }
    if (i == 50) expect_healthy();  // the engine is not blocked by the stuck queue
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(refused, 1);
  EXPECT_LE(engine_.status("deaf").at("input_queued").get<std::uint64_t>(), kChunk);
  expect_healthy();

  // Once the program reads, it receives exactly the accepted chunks, in order.
  std::ofstream(go).put('1');
  wait_until(
      [&] {
        std::error_code ec;
        return std::filesystem::file_size(out, ec) >= accepted.size() && !ec;
      },
      "the program to receive the queued input");
  wait_until([&] { return engine_.status("deaf").at("input_queued") == 0; }, "an empty queue");
  std::ifstream in(out, std::ios::binary);
  std::stringstream received;
  received << in.rdbuf();
  EXPECT_EQ(received.str().size(), accepted.size());
  EXPECT_TRUE(received.str() == accepted) << "the received input differs from what was accepted";
}

TEST_F(BadInput, ThreeHundredIdleConnectionsDoNotStarveAnotherClient) {
  const int fds_before = count_fds(engine_.pid());
  {
    std::vector<std::unique_ptr<RawConnection>> idle;
    for (int i = 0; i < 300; ++i) {
      idle.push_back(std::make_unique<RawConnection>(engine_.places()));
      if (i % 3 == 1) idle.back()->send(std::string("\x10\x00", 2));  // half a length
      if (i % 3 == 2) idle.back()->send(raw_frame(R"({"op":"ping","id":1})").substr(0, 12));
    }
    expect_healthy();
    // Each idle one is still served once it completes its frame.
    idle[2]->send(raw_frame(R"({"op":"ping","id":1})").substr(12));
    auto pong = idle[2]->next_frame();
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->header.value("ok", false), true);
  }
  expect_healthy();
  wait_until([&] { return count_fds(engine_.pid()) <= fds_before + 1; },
             "the engine to close the 300 connections");
}

// 2,000 connections, each having sent a request and read its answer, then closed: the engine's
// memory goes back to about where it was (regression: every connection kept a 64 KiB receive
// buffer, and the freed buffers stayed in the heap: ~110 MB after they had all closed).
TEST_F(BadInput, TwoThousandClosedConnectionsLeaveNoMemoryBehind) {
  SKIP_MEMORY_MEASURE_UNDER_SANITIZER();
  expect_healthy();
  const long rss_before = vm_rss_kb(engine_.pid());
  long rss_open = 0;
  {
    std::vector<std::unique_ptr<RawConnection>> clients;
    for (int i = 0; i < 2000; ++i) {
      clients.push_back(std::make_unique<RawConnection>(engine_.places()));
      ASSERT_TRUE(clients.back()->send(raw_frame(R"({"op":"ping","id":1})")));
    }
    for (auto& c : clients) ASSERT_TRUE(c->next_frame());
    rss_open = vm_rss_kb(engine_.pid());
  }
  wait_until(
      [&] {
        return engine_.call("status").header.contains("actors") &&
               vm_rss_kb(engine_.pid()) - rss_before < 16 * 1024;
      },
      "the engine to give back the closed connections' memory");
  std::printf("engine RSS: %ld KiB before, %ld KiB with 2000 connections open, %ld KiB after\n",
              rss_before, rss_open, vm_rss_kb(engine_.pid()));
  EXPECT_LT(rss_open - rss_before, 48 * 1024) << "idle connections hold large buffers";
  expect_healthy();
}

TEST_F(BadInput, ClientThatDoesNotReadItsRepliesCannotMakeTheEngineBufferWithoutBound) {
  SKIP_MEMORY_MEASURE_UNDER_SANITIZER();
  // Regression: the engine handled every request it had received and queued each reply, however
  // much was already waiting unsent: a client pipelining history requests without reading made
  // it buffer gigabytes. It must stop taking requests from a connection whose replies pile up.
  constexpr std::uint64_t kBytes = 4 << 20;
  constexpr int kRequests = 100;  // 400 MiB of replies
  engine_.spawn("big",
                {child_binary(), "pattern", "3", std::to_string(kBytes), "raw", "0", "wait"});
  wait_until([&] { return engine_.status("big").at("committed") == kBytes; }, "the output");
  const long rss_before = vm_rss_kb(engine_.pid());

  RawConnection greedy(engine_.places());
  std::string requests;
  for (int i = 0; i < kRequests; ++i) {
    requests +=
        control::encode_frame({{"op", "history"}, {"id", i}, {"actor", "big"}, {"from", 0}});
  }
  ASSERT_TRUE(greedy.send(requests));
  // A fresh client is answered only after the io thread got past the batch it received.
  expect_healthy();
  long rss_peak = vm_rss_kb(engine_.pid());
  EXPECT_LT(rss_peak - rss_before, 128 * 1024)
      << "the engine buffered " << (rss_peak - rss_before) / 1024 << " MiB for one client";

  // Every request is still answered, in order and exactly, once the client reads.
  const Pattern stream(3, false);
  for (int i = 0; i < kRequests; ++i) {
    auto reply = greedy.next_frame();
    ASSERT_TRUE(reply) << "the connection closed after " << i << " replies";
    ASSERT_EQ(reply->header.at("id"), i);
    ASSERT_EQ(reply->payload.size(), kBytes);
    if (i % 25 == 0) {
      EXPECT_FALSE(stream.first_mismatch(0, std::as_bytes(std::span(reply->payload))));
    }
    rss_peak = std::max(rss_peak, vm_rss_kb(engine_.pid()));
  }
  EXPECT_LT(rss_peak - rss_before, 128 * 1024);
  expect_healthy();
}

TEST_F(BadInput, SubscriberThatNeverReadsIsDisconnectedInsteadOfBuffered) {
  SKIP_MEMORY_MEASURE_UNDER_SANITIZER();
  RawConnection lazy(engine_.places());
  ASSERT_TRUE(lazy.send(control::encode_frame({{"op", "subscribe"}, {"id", 1}})));
  auto subscribed = lazy.next_frame();
  ASSERT_TRUE(subscribed);
  ASSERT_EQ(subscribed->header.value("ok", false), true);
  const long rss_before = vm_rss_kb(engine_.pid());

  // Each clear broadcasts a "cleared" event and its "track" frame, about 150 bytes: 100000 of
  // them are well past the 4 MiB a subscriber may leave unread. (Clears of the screen too: one
  // that keeps the screen waits for the mirror, and those pipelined meanwhile share its answer.)
  RawConnection driver(engine_.places());
  const std::string clear =
      control::encode_frame({{"op", "clear"}, {"actor", "witness"}, {"screen", true}});
  for (int batch = 0; batch < 10; ++batch) {
    std::string requests;
    for (int i = 0; i < 10000; ++i) requests += clear;
    ASSERT_TRUE(driver.send(requests));
    for (int i = 0; i < 10000; ++i) {
      auto reply = driver.next_frame();
      ASSERT_TRUE(reply);
      ASSERT_EQ(reply->header.value("ok", false), true);
    }
  }
  EXPECT_LT(vm_rss_kb(engine_.pid()) - rss_before, 32 * 1024);
  // The lazy subscriber finds some events, then the end of the connection.
  int events = 0;
  while (auto frame = lazy.next_frame()) {
    const std::string event = frame->header.value("event", "");
    ASSERT_TRUE(event == "cleared" || event == "track") << event;
    ++events;
  }
  EXPECT_LT(events, 100000);
  EXPECT_NE(engine_.log().find("events unread; disconnecting"), std::string::npos);
  expect_healthy();
}

// docs/protocol.md: replies count towards a subscriber's 4 MiB. A subscriber that asked for 6 MiB
// of history and reads none of it is disconnected at the next event, not buffered for.
TEST_F(BadInput, RepliesCountTowardsASubscribersUnreadBound) {
  constexpr std::uint64_t kBytes = 6 << 20;
  engine_.spawn("big",
                {child_binary(), "pattern", "3", std::to_string(kBytes), "raw", "0", "wait"});
  wait_until([&] { return engine_.status("big").at("committed") == kBytes; }, "the output");
  RawConnection lazy(engine_.places());
  ASSERT_TRUE(lazy.send(control::encode_frame({{"op", "subscribe"}, {"id", 1}})));
  ASSERT_TRUE(lazy.next_frame());
  ASSERT_TRUE(lazy.send(
      control::encode_frame({{"op", "history"}, {"id", 2}, {"actor", "big"}, {"from", 0}})));
  // The 6 MiB reply is queued (more than the socket buffer takes); then an event arrives.
  wait_until(
      [&] {
        return engine_.log().find("events unread; disconnecting") != std::string::npos ||
               (engine_.call("clear", {{"actor", "witness"}}), false);
      },
      "the subscriber to be disconnected");
  expect_healthy();
}

TEST_F(BadInput, SpawnOfAMissingProgramIsSpawnFailedAndLeavesNothingBehind) {
  const auto before = engine_.rings();
  const Error missing = error_of("spawn", {{"actor", "nothing"}, {"argv", {"/no/such/program"}}});
  EXPECT_EQ(missing.code, Errc::spawn_failed);
  EXPECT_NE(missing.message.find("No such file"), std::string::npos) << missing.message;
  const Error in_path =
      error_of("spawn", {{"actor", "nothing"}, {"argv", {"no-such-program-xyz"}}});
  EXPECT_EQ(in_path.code, Errc::spawn_failed);
  EXPECT_EQ(engine_.rings(), before);
  EXPECT_EQ(error_of("status", {{"actor", "nothing"}}).code, Errc::no_such_actor);
  EXPECT_TRUE(zombie_children(engine_.pid()).empty());
  engine_.spawn("nothing", {"true"});  // the name is free
  expect_healthy();
}

TEST_F(BadInput, SpawnInAMissingDirectoryIsSpawnFailedAndLeavesNothingBehind) {
  const auto before = engine_.rings();
  const Error missing =
      error_of("spawn", {{"actor", "lost"}, {"argv", {"true"}}, {"cwd", "/no/such/dir"}});
  EXPECT_EQ(missing.code, Errc::spawn_failed);
  EXPECT_NE(missing.message.find("/no/such/dir"), std::string::npos) << missing.message;
  EXPECT_EQ(engine_.rings(), before);
  EXPECT_EQ(error_of("status", {{"actor", "lost"}}).code, Errc::no_such_actor);
  expect_healthy();
}

// An engine under a memory cap (RLIMIT_AS) refuses the spawn that would bring it near the cap,
// with out_of_memory saying why, instead of failing later inside an allocation; it serves on
// and every actor it took keeps working.
TEST(MemoryCap, ASpawnPastTheCapIsRefusedAndTheEngineServesOn) {
  SKIP_MEMORY_MEASURE_UNDER_SANITIZER();  // and RLIMIT_AS cannot apply to it
  EngineConfig config;
  config.args.insert(config.args.end(), {"--ring-bytes", "50000000"});
  config.address_space_limit = 768ull << 20;
  EngineProcess engine;
  ASSERT_TRUE(engine.start(config));
  std::optional<Error> refused;
  int spawned = 0;
  for (; spawned < 20 && !refused; ++spawned) {
    auto r = engine.try_call("spawn", {{"actor", "big" + std::to_string(spawned)},
                                       {"argv", {"sh", "-c", "echo up; exec sleep 60"}}});
    if (!r) refused = r.error();
  }
  ASSERT_TRUE(refused) << "20 actors of 50 MB fit under a 768 MiB cap";
  EXPECT_EQ(refused->code, Errc::out_of_memory) << refused->describe();
  EXPECT_NE(refused->message.find("RLIMIT_AS"), std::string::npos) << refused->message;
  EXPECT_GE(spawned - 1, 2) << "the cap leaves room for a few actors";
  // The engine serves on: the actors it took work, a smaller request still gets answers.
  for (int i = 0; i + 1 < spawned; ++i) engine.wait_output("big" + std::to_string(i), "up");
  EXPECT_EQ(engine.call("list").header.at("actors").size(), static_cast<std::size_t>(spawned - 1));
  const Error again = expect_error(
      engine.try_call("spawn", {{"actor", "again"}, {"argv", {"true"}}}), "a second spawn");
  EXPECT_EQ(again.code, Errc::out_of_memory);
  engine.call("stop", {{"actor", "big0"}, {"grace_ms", 0}});
  engine.wait_sealed("big0");
}

// Regression (review): stop/restart/delete requests waiting for a seal were unbounded, and each
// kept its (up to 1 MiB) id: pipelined stops grew the engine's memory without limit.
TEST_F(BadInput, PendingLifecycleRequestsPerConnectionAreBounded) {
  engine_.spawn("stubborn", {"sh", "-c", "trap '' HUP; echo armed; while :; do sleep 0.05; done"});
  engine_.wait_output("stubborn", "armed");
  RawConnection raw(engine_.places());
  std::string frames;
  for (int id = 0; id <= 64; ++id) {
    frames += control::encode_frame(
        {{"op", "stop"}, {"id", id}, {"actor", "stubborn"}, {"grace_ms", 600000}});
  }
  frames += control::encode_frame({{"op", "stop"}, {"id", std::string(300, 'x')}, {"actor", "x"}});
  raw.send(frames);
  auto refused = raw.next_frame();  // the 65th stop: the first 64 wait for the seal
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->header.at("id"), 64);
  EXPECT_EQ(refused->header.value("/error/code"_json_pointer, ""), "too_large");
  auto long_id = raw.next_frame();
  ASSERT_TRUE(long_id);
  EXPECT_FALSE(long_id->header.contains("id"));
  EXPECT_EQ(long_id->header.value("/error/code"_json_pointer, ""), "bad_request");
  EXPECT_TRUE(engine_.try_call("ping"));
}

}  // namespace
}  // namespace backscroll::testing
