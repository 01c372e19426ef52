// The bridge's WebSocket protocol (docs/bridge.md) end to end: a real engine, a real
// backscroll-bridge process and a C++ WebSocket client. Screens are compared with
// @xterm/headless, the emulator browsers run (tests/xterm/screen.mjs).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tests/engine/engine_process.hpp"
#include "tools/bridge/client/bridge_client.hpp"

namespace backscroll::testing {
namespace {

using Json = nlohmann::json;

std::string base64(std::string_view in) {
  static constexpr char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += {k[v >> 18], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}

// What @xterm/headless shows after `bytes` on a fresh cols x rows terminal: the viewport, the
// cursor and the last `history` scrollback lines (tests/xterm/screen.mjs).
Json xterm_screen(int cols, int rows, const std::string& bytes, int history) {
  TempDir dir;
  const auto input = dir.path() / "in.jsonl";
  std::ofstream(input) << Json{{"id", 1},
                               {"cols", cols},
                               {"rows", rows},
                               {"history", history},
                               {"writes", Json::array({base64(bytes)})}}
                              .dump()
                       << "\n";
  const std::string command = "cd '" + std::string(BACKSCROLL_XTERM_DIR) +
                              "' && node screen.mjs < '" + input.string() + "'";
  FILE* out = ::popen(command.c_str(), "r");
  if (!out) raise_failure("cannot run node");
  std::string text;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) text.append(buf, n);
  if (::pclose(out) != 0 || text.empty())
    raise_failure("node screen.mjs failed (run .ci/setup): " + text);
  const Json reply = Json::parse(text);
  if (reply.contains("error")) raise_failure("xterm.js: " + reply["error"].get<std::string>());
  return reply["state"];
}

// The text of each row of a screen from xterm_screen (cells joined, blanks as spaces).
std::string rows_text(const Json& lines) {
  std::string out;
  for (const Json& row : lines) {
    for (const Json& cell : row) {
      out += cell.is_string()  ? cell.get<std::string>()
             : cell.is_array() ? cell[0].get<std::string>()
                               : " ";
    }
    out += "\n";
  }
  return out;
}

// A program that prints `lines` numbered lines of about 50 bytes at once (awk: fast, so a test
// does not wait on a shell loop), after a line of input when `wait_input`.
std::vector<std::string> printer(int lines, const std::string& what, bool wait_input = true) {
  const std::string awk = "awk 'BEGIN { for (i = 0; i < " + std::to_string(lines) +
                          "; i++) printf \"" + what +
                          " line %d xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\\n\", i }'";
  return {"sh", "-c", (wait_input ? "read x; " : "") + awk + "; exec sleep 600"};
}

// True when every frame is at most 64 KiB and valid UTF-8 on its own (no character cut).
::testing::AssertionResult whole_utf8(const std::string& frame) {
  if (frame.size() > 64 * 1024)
    return ::testing::AssertionFailure() << "a frame of " << frame.size() << " bytes";
  for (std::size_t i = 0; i < frame.size();) {
    const auto b = static_cast<unsigned char>(frame[i]);
    const std::size_t n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
    if (n == 0 || i + n > frame.size()) {
      return ::testing::AssertionFailure()
             << "a character cut or broken at byte " << i << " of " << frame.size();
    }
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(frame[i + k]) & 0xC0) != 0x80)
        return ::testing::AssertionFailure() << "bad continuation at " << i + k;
    }
    i += n;
  }
  return ::testing::AssertionSuccess();
}

class BridgeTest : public ::testing::Test {
 protected:
  void SetUp() override { start(EngineConfig{}); }
  void start(EngineConfig config) {
    ASSERT_TRUE(engine_.start(std::move(config)));
    bridge_.emplace(engine_.places());
  }
  void TearDown() override {
    if (bridge_) {
      EXPECT_EQ(bridge_->stop(), 0) << "the bridge exits 0 on SIGTERM";
    }
  }

  std::string query(const std::string& actor, const std::string& extra = "") {
    return "ticket=" + bridge_->ticket() + "&actor=" + actor + extra;
  }
  std::unique_ptr<WsClient> open(const std::string& actor, const std::string& extra = "") {
    return std::make_unique<WsClient>(bridge_->port(), query(actor, extra));
  }
  std::uint64_t committed(const std::string& actor) {
    return engine_.status(actor)["committed"].get<std::uint64_t>();
  }
  // Waits until the actor's last bytes contain `needle` (a small ring may no longer hold its
  // first ones); returns the committed cursor then.
  std::uint64_t wait_tail(const std::string& actor, std::string_view needle) {
    std::uint64_t end = 0;
    wait_until(
        [&] {
          end = committed(actor);
          const std::uint64_t from = end > 4096 ? end - 4096 : 0;
          // Only bytes before `end`: more may have come since, and `end` must include the needle.
          return engine_.history(actor, from).substr(0, end - from).find(needle) !=
                 std::string::npos;
        },
        "the actor's output");
    return end;
  }
  // Output of the actor between two cursors, from the engine.
  std::string history(const std::string& actor, std::uint64_t from, std::uint64_t to) {
    return engine_.history(actor, from).substr(0, to - from);
  }
  // Live output from `from`, until none comes for 700 ms (the client fell behind): its bytes.
  // With `ack`, each frame is acknowledged as it comes. Only output frames may come meanwhile.
  static std::string read_until_silent(WsClient& client, std::uint64_t from, bool ack) {
    std::string got;
    while (auto m = client.poll(std::chrono::milliseconds(700))) {
      if (m->text) {
        ADD_FAILURE() << "a JSON frame while only output was expected: " << m->data;
        break;
      }
      got += m->data;
      if (ack) client.send({{"type", "ack"}, {"cursor", from + got.size()}});
    }
    EXPECT_FALSE(client.closed());
    return got;
  }
  // A shell actor that runs `script`, then stays (sleep), so its screen stays put.
  void spawn_sh(const std::string& actor, const std::string& script, Json extra = Json::object()) {
    engine_.spawn(actor, {"sh", "-c", script + "; exec sleep 600"}, std::move(extra));
  }

  EngineProcess engine_;
  std::optional<BridgeProcess> bridge_;
};

TEST_F(BridgeTest, AFreshAttachDrawsTheScreenTheRawStreamDraws) {
  spawn_sh("art",
           "i=1; while [ $i -le 60 ]; do printf '\\033[3%dmline %d "
           "\\303\\251\\342\\202\\254\\360\\237\\230\\200\\033[0m\\n' "
           "$((i % 8)) $i; i=$((i+1)); done; printf '\\033[5;10H\\033[1mmid\\033[0m'");
  engine_.wait_output("art", "mid");
  auto client = open("art");
  const CatchUp c = read_catch_up(*client);
  EXPECT_EQ(c.hello["actor"], "art");
  EXPECT_EQ(c.hello["role"], "viewer");
  EXPECT_EQ(c.hello["session"], 1);
  EXPECT_EQ(c.hello["epoch"], engine_.status("art")["epoch"]);
  ASSERT_EQ(c.start["type"], "snapshot");
  EXPECT_EQ(c.start["format"], "snapshot_v1") << c.start.dump();
  EXPECT_EQ(c.start["cols"], 80);
  EXPECT_EQ(c.start["rows"], 24);
  const std::string raw = history("art", 0, c.replayed);
  ASSERT_NE(raw.find("mid"), std::string::npos);
  const Json from_snapshot = xterm_screen(80, 24, c.bytes, 30);
  const Json from_raw = xterm_screen(80, 24, raw, 30);
  EXPECT_EQ(from_snapshot["lines"], from_raw["lines"]);
  EXPECT_EQ(from_snapshot["history"], from_raw["history"]);
  EXPECT_EQ(from_snapshot["x"], from_raw["x"]);
  EXPECT_EQ(from_snapshot["y"], from_raw["y"]);
}

TEST_F(BridgeTest, AControllerTypesAndSeesTheEcho) {
  engine_.spawn("cat", {"cat"});
  auto client = open("cat", "&role=controller&cols=100&rows=30");
  const CatchUp c = read_catch_up(*client);
  EXPECT_EQ(c.hello["role"], "controller");
  EXPECT_EQ(engine_.status("cat")["cols"], 100) << "a visible controller's attach sets the size";
  EXPECT_EQ(engine_.status("cat")["rows"], 30);
  client->send({{"type", "input"}, {"data", "hello bridge\r"}});
  std::string live;
  while (live.find("hello bridge\r\nhello bridge") == std::string::npos) {
    auto m = client->next();
    ASSERT_TRUE(m) << "closed";
    if (!m->text) live += m->data;
  }
  client->send({{"type", "ping"}});
  client->until("pong");
}

TEST_F(BridgeTest, AViewerCannotTypeOrResize) {
  engine_.spawn("cat", {"cat"});
  auto client = open("cat", "&role=viewer");
  read_catch_up(*client);
  client->send({{"type", "input"}, {"data", "x"}});
  EXPECT_EQ(client->until("error").json()["code"], "read_only");
  client->send({{"type", "resize"}, {"cols", 50}, {"rows", 10}});
  EXPECT_EQ(client->until("error").json()["code"], "bad_request");
  client->send({{"type", "no-such-thing"}});
  EXPECT_EQ(client->until("error").json()["code"], "bad_request");
  EXPECT_EQ(engine_.status("cat")["cols"], 80);
}

TEST_F(BridgeTest, AResumeSendsOnlyTheBytesAfterItsCursor) {
  engine_.spawn("sh", {"sh", "-c", "while read l; do echo \"got $l\"; done"});
  auto first = open("sh", "&role=controller");
  const CatchUp a = read_catch_up(*first);
  first->close();
  engine_.call("input", {{"actor", "sh"}}, "one\r");
  engine_.wait_output("sh", "got one");
  const std::string resume = "&epoch=" + a.hello["epoch"].get<std::string>() +
                             "&session=1&cursor=" + std::to_string(a.replayed);
  auto second = open("sh", resume);
  const CatchUp b = read_catch_up(*second);
  EXPECT_EQ(b.start["type"], "resume") << "no snapshot, no reset";
  EXPECT_EQ(b.start["cursor"], a.replayed);
  EXPECT_EQ(b.bytes, history("sh", a.replayed, b.replayed)) << "exactly the tail it missed";
  EXPECT_NE(b.bytes.find("got one"), std::string::npos);
}

TEST_F(BridgeTest, AResumeWhoseBytesAreGoneGetsASnapshot) {
  TearDown();
  bridge_.reset();
  engine_.stop();
  start(EngineConfig::with({"--ring-bytes", "65536"}));
  engine_.spawn("big", printer(3000, "big"));
  auto first = open("big", "&role=controller");
  const CatchUp a = read_catch_up(*first);
  first->close();
  engine_.call("input", {{"actor", "big"}}, "go\r");
  wait_tail("big", "big line 2999 ");
  ASSERT_GT(committed("big") - a.replayed, 65536u);
  auto second = open("big", "&epoch=" + a.hello["epoch"].get<std::string>() +
                                "&session=1&cursor=" + std::to_string(a.replayed));
  const CatchUp b = read_catch_up(*second);
  EXPECT_EQ(b.start["type"], "snapshot") << "the ring no longer holds its cursor";
  const Json screen = xterm_screen(80, 24, b.bytes, 0);
  EXPECT_NE(rows_text(screen["lines"]).find("big line 2999 "), std::string::npos)
      << rows_text(screen["lines"]);
}

TEST_F(BridgeTest, AResumeOfAnotherEpochSessionOrActorIsGone) {
  engine_.spawn("cat", {"cat"});
  const std::string epoch = engine_.status("cat")["epoch"];
  const auto gone = [&](const std::string& actor, const std::string& resume) {
    auto client = open(actor, resume);
    return client->wait_close();
  };
  EXPECT_EQ(gone("cat", "&epoch=00000000000000ff&session=1&cursor=0"), 4410) << "another epoch";
  EXPECT_EQ(gone("cat", "&epoch=" + epoch + "&session=2&cursor=0"), 4410)
      << "a session that is not the actor's";
  EXPECT_EQ(gone("nobody", "&epoch=" + epoch + "&session=1&cursor=0"), 4410) << "no such actor";
  // A fresh attach to an actor that does not exist is refused, with the reason first.
  auto fresh = open("nobody");
  const Json refused = fresh->until("error").json();
  EXPECT_EQ(refused["code"], "no_such_actor");
  EXPECT_EQ(refused["message"], "no actor named 'nobody'")
      << "the engine's own words, for the page's header";
  EXPECT_EQ(fresh->wait_close(), 4409);
}

TEST_F(BridgeTest, AReplacedControllersResizeIsRejected) {
  engine_.spawn("cat", {"cat"});
  auto a = open("cat", "&role=controller&cols=100&rows=30");
  const CatchUp ca = read_catch_up(*a);
  auto b = open("cat", "&role=controller&cols=90&rows=20");
  const CatchUp cb = read_catch_up(*b);
  const Json notice = a->until("controller").json();
  EXPECT_EQ(notice["replaced"], ca.hello["attachment"]);
  EXPECT_EQ(notice["attachment"], cb.hello["attachment"]);
  EXPECT_EQ(notice["reason"], "attached") << "the engine's size ownership, passed on";
  EXPECT_EQ(notice["cols"], 90);
  EXPECT_EQ(notice["rows"], 20);
  a->send({{"type", "resize"}, {"cols", 120}, {"rows", 40}});
  EXPECT_EQ(a->until("error").json()["code"], "stale_controller");
  b->send({{"type", "resize"}, {"cols", 70}, {"rows", 20}});
  wait_until([&] { return engine_.status("cat")["cols"] == 70; }, "the controller's resize");
  EXPECT_EQ(engine_.status("cat")["rows"], 20);
  // The owner leaves: control (and its size) goes back to the first, which is told.
  b.reset();
  const Json back = a->until("controller").json();
  EXPECT_EQ(back["attachment"], ca.hello["attachment"]);
  EXPECT_EQ(back["reason"], "handed_back");
  EXPECT_EQ(back["cols"], 100);
  EXPECT_EQ(back["rows"], 30);
  const Json size = a->until("resized").json();
  EXPECT_EQ(size["cols"], 100);
  EXPECT_EQ(size["rows"], 30);
  a->send({{"type", "resize"}, {"cols", 110}, {"rows", 30}});
  wait_until([&] { return engine_.status("cat")["cols"] == 110; }, "the owner's resize again");
  // A displaced controller takes control back, at the size it gives.
  auto c = open("cat", "&role=controller&cols=60&rows=15");
  read_catch_up(*c);
  EXPECT_EQ(a->until("controller").json()["reason"], "attached");
  a->send({{"type", "take_control"}, {"cols", 120}, {"rows", 40}});
  const Json taken = a->until("controller").json();
  EXPECT_EQ(taken["reason"], "took_control");
  EXPECT_EQ(taken["attachment"], ca.hello["attachment"]);
  wait_until([&] { return engine_.status("cat")["cols"] == 120; }, "the size taken back");
  EXPECT_EQ(engine_.status("cat")["rows"], 40);
  a->send({{"type", "take_control"}, {"cols", 120}});
  EXPECT_EQ(a->until("error").json()["code"], "bad_request");
  auto viewer = open("cat");
  read_catch_up(*viewer);
  viewer->send({{"type", "take_control"}});
  EXPECT_EQ(viewer->until("error").json()["code"], "bad_request") << "a viewer cannot";
}

TEST_F(BridgeTest, TicketsTokensHostsAndOriginsAreChecked) {
  engine_.spawn("cat", {"cat"});
  const auto closed_with = [&](const std::string& q) {
    WsClient client(bridge_->port(), q);
    return client.wait_close();
  };
  EXPECT_EQ(closed_with("actor=cat"), 4401) << "no ticket";
  EXPECT_EQ(closed_with("ticket=0123456789abcdef&actor=cat"), 4401) << "a made-up ticket";
  const std::string ticket = bridge_->ticket();
  {
    WsClient ok(bridge_->port(), "ticket=" + ticket + "&actor=cat");
    ok.until("hello");
  }
  EXPECT_EQ(closed_with("ticket=" + ticket + "&actor=cat"), 4401) << "a ticket works once";
  EXPECT_EQ(closed_with("ticket=" + bridge_->ticket() + "&actor=ca/t"), 4401) << "a bad query";
  EXPECT_EQ(closed_with("ticket=" + bridge_->ticket() + "&actor=cat&role=king"), 4401);
  EXPECT_EQ(closed_with("ticket=" + bridge_->ticket() + "&actor=cat&cols=0&rows=5"), 4401);
  EXPECT_EQ(closed_with("ticket=" + bridge_->ticket() + "&actor=cat&follow=yes"), 4401);
  EXPECT_EQ(closed_with("ticket=" + bridge_->ticket() + "&actor=cat&have_cols=80"), 4401);

  const std::string own = "http://127.0.0.1:" + std::to_string(bridge_->port());
  const std::vector<std::string> upgrade = {
      "Upgrade: websocket", "Connection: Upgrade",
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"};
  const auto handshake = [&](const std::string& origin, const std::string& host = {}) {
    auto headers = upgrade;
    headers.push_back("Origin: " + origin);
    if (!host.empty()) headers.push_back("Host: " + host);
    return bridge_->http("GET", "/ws?" + query("cat"), headers).status;
  };
  EXPECT_EQ(handshake("http://evil.example"), 403) << "a page of another site";
  EXPECT_EQ(handshake(own), 101) << "the bridge's own page";
  EXPECT_EQ(handshake("http://evil.example:1", "evil.example:1"), 403)
      << "a name that could be rebound to this machine";
  // A refused handshake spends its ticket: it is good for one try, whatever the outcome.
  for (const auto& [origin, host] : std::vector<std::pair<std::string, std::string>>{
           {"http://evil.example", ""}, {"http://evil.example:1", "evil.example:1"}}) {
    const std::string spent = bridge_->ticket();
    auto headers = upgrade;
    headers.push_back("Origin: " + origin);
    if (!host.empty()) headers.push_back("Host: " + host);
    EXPECT_EQ(bridge_->http("GET", "/ws?ticket=" + spent + "&actor=cat", headers).status, 403);
    EXPECT_EQ(closed_with("ticket=" + spent + "&actor=cat"), 4401)
        << "a ticket refused once is spent";
  }

  EXPECT_EQ(bridge_->http("GET", "/api/actors").status, 401);
  EXPECT_EQ(bridge_->http("POST", "/api/ticket", {"Authorization: Bearer wrong"}).status, 401);
  const auto actors =
      bridge_->http("GET", "/api/actors", {"Authorization: Bearer " + bridge_->token()});
  ASSERT_EQ(actors.status, 200);
  EXPECT_EQ(Json::parse(actors.body)["actors"][0]["name"], "cat");
  // What runs in it now (the page shows its argv): the engine's first look at the foreground.
  wait_until(
      [&] {
        const auto now =
            bridge_->http("GET", "/api/actors", {"Authorization: Bearer " + bridge_->token()});
        const Json foreground = Json::parse(now.body)["actors"][0]["foreground"];
        return foreground.is_object() && foreground["command"] == "cat";
      },
      "the foreground program in the actor list");
  EXPECT_EQ(bridge_
                ->http("GET", "/api/actors",
                       {"Authorization: Bearer " + bridge_->token(), "Origin: http://evil.example"})
                .status,
            403);
  EXPECT_EQ(bridge_->http("GET", "/", {}).status, 200) << "the page itself needs no token";
  EXPECT_EQ(bridge_->http("GET", "/../../etc/passwd").status, 404);
  EXPECT_EQ(bridge_->http("GET", "/.hidden").status, 404);
}

TEST_F(BridgeTest, ListenTakesAHostName) {
  bridge_.reset();  // the fixture's listens on 127.0.0.1; this one by name
  BridgeProcess by_name(engine_.places(), {"--listen", "localhost"});
  EXPECT_EQ(by_name.http("GET", "/", {}).status, 200);  // reached on 127.0.0.1
  EXPECT_EQ(by_name.stop(), 0);
}

TEST_F(BridgeTest, TheActorListCarriesEachAgentsStatus) {
  // Claude Code's idle title (✳), as the status detector's built-in rules read it.
  spawn_sh("agent", "printf '\\033]0;\\342\\234\\263 Claude Code\\007'");
  engine_.spawn("plain", {"cat"});
  Json agent;
  wait_until(
      [&] {  // the status thread reads a ring within a period of being asked for it
        const auto answer =
            bridge_->http("GET", "/api/actors", {"Authorization: Bearer " + bridge_->token()});
        const Json list = Json::parse(answer.body);
        for (const Json& a : list["actors"]) {
          if (a["name"] == "agent") agent = a;
        }
        return agent.is_object() && agent["agent_status"] == "idle";
      },
      "the agent's status in the actor list");
  EXPECT_EQ(agent["agent"], "claude-code");
  EXPECT_EQ(agent["title"], "\u2733 Claude Code");
  EXPECT_EQ(agent["state"], "running");
}

TEST_F(BridgeTest, HostileRequestsAndMessagesGetErrorsAndTheBridgeGoesOn) {
  engine_.spawn("cat", {"cat"});
  EXPECT_EQ(bridge_->http("GET", "/api/actors", {"Host: \xff\xfe"}).status, 403);
  EXPECT_EQ(bridge_->http("GET", "/", {"Origin: http://\xff"}).status, 403);
  auto client = open("cat", "&role=controller");
  read_catch_up(*client);
  for (const std::string bad :
       {R"({"type":5})", R"({"type":"resize","cols":"x","rows":2})", R"([1,2])",
        R"({"type":"ack","cursor":-1})", R"({"type":"visible","visible":"yes"})", "not json",
        R"({"type":"input","data":7})", R"({"type":"input","data":"x","paste":1})",
        R"({"type":"follow"})"}) {
    client->send_text(bad);
    EXPECT_EQ(client->until("error").json()["code"], "bad_request") << bad;
  }
  client->send({{"type", "ping"}});
  client->until("pong");
  EXPECT_EQ(bridge_->http("GET", "/", {}).status, 200) << "still serving";
}

// A program that says its size whenever it changes (after "ready"), and nothing else.
std::string size_reporter() {
  return "trap 'echo \"size $(stty size)\"' WINCH; echo ready; while :; do sleep 0.05; done";
}

// A client that keeps the actor's size (`follow=1`, what a viewer's page asks for) never gets a
// byte written at a size it was not told: `resized` at the engine's cursor for it, just before
// the first byte past the resize, and no snapshot (an engine without the `resized` event would
// get it a snapshot at the new size instead; this test accepted that until the engine had it).
TEST_F(BridgeTest, AFollowerIsToldTheActorsSizeBeforeAnyByteWrittenAtIt) {
  spawn_sh("sized", size_reporter(), {{"cols", 100}, {"rows", 30}});
  engine_.wait_output("sized", "ready");
  auto client = open("sized", "&follow=1");
  const CatchUp c = read_catch_up(*client);
  ASSERT_EQ(c.start["cols"], 100);
  ASSERT_EQ(c.start["rows"], 30);
  const std::uint64_t at = committed("sized");  // quiet until its size changes
  engine_.call("resize", {{"actor", "sized"}, {"cols", 72}, {"rows", 20}});
  std::uint64_t cursor = c.replayed;
  bool told = false;
  std::string after;  // the stream from the resize on, as the client draws it
  while (after.find("size 20 72") == std::string::npos) {
    auto m = client->next();
    ASSERT_TRUE(m) << "closed";
    if (!m->text) {
      ASSERT_TRUE(told || cursor + m->data.size() <= at)
          << "a byte written at 72x20 came before the size";
      if (cursor >= at) after += m->data;
      cursor += m->data.size();
      continue;
    }
    const Json j = m->json();
    if (j["type"] == "resized") {
      EXPECT_EQ(j["cursor"], at) << "where the new size starts";
      EXPECT_EQ(j["cursor"], cursor) << "just before the bytes at it";
      told = j["cols"] == 72 && j["rows"] == 20;
    } else {
      EXPECT_NE(j["type"], "snapshot") << "the engine said where the size changed: " << m->data;
    }
  }
  EXPECT_TRUE(told);
}

// The same for a client that fits itself, as long as the event comes before the program's first
// byte at the new size (here the program sleeps in between): `resized` just before it.
TEST_F(BridgeTest, AClientThatFitsItselfIsToldTheSizeToo) {
  spawn_sh("sized", size_reporter(), {{"cols", 100}, {"rows", 30}});
  engine_.wait_output("sized", "ready");
  auto client = open("sized");
  const CatchUp c = read_catch_up(*client);
  const std::uint64_t at = committed("sized");
  engine_.call("resize", {{"actor", "sized"}, {"cols", 72}, {"rows", 20}});
  const Json resized = client->until("resized").json();
  EXPECT_EQ(resized["cursor"], at);
  EXPECT_EQ(resized["cols"], 72);
  EXPECT_EQ(resized["rows"], 20);
  (void)c;
}

// A client that fits itself (a controller's page by default) sets the actor's size: its own
// resize never restarts its view.
TEST_F(BridgeTest, AControllerThatFitsItselfIsNotCaughtUpAgainByItsResize) {
  spawn_sh("sized", size_reporter(), {{"cols", 100}, {"rows", 30}});
  engine_.wait_output("sized", "ready");
  auto client = open("sized", "&role=controller");
  read_catch_up(*client);
  client->send({{"type", "resize"}, {"cols", 70}, {"rows", 20}});
  std::string live;
  while (live.find("size 20 70") == std::string::npos) {
    auto m = client->next();
    ASSERT_TRUE(m) << "closed";
    if (!m->text) {
      live += m->data;
    } else {
      EXPECT_NE(m->type(), "snapshot") << m->data;
      EXPECT_NE(m->type(), "error") << m->data;
    }
  }
}

// The browser test's flake (the key-bar case: a phone-sized controller that went live never
// showed the 11 bytes its program printed as it started): a program prints right after it
// starts while a controller attaches at another size and fits itself again at once. Whatever
// the order, the client gets the line, in its snapshot or in the frames after it.
TEST_F(BridgeTest, AProgramsFirstBytesReachAControllerThatAttachesAndResizesAsItStarts) {
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string actor = "early" + std::to_string(round);
    const std::string delay = "0.0" + std::to_string(round % 4 * 2);  // 0 to 60 ms after start
    engine_.spawn(actor,
                  {"sh", "-c", "sleep " + delay + "; printf 'recording\\n'; exec sleep 600"});
    auto client = open(actor, "&role=controller&cols=" + std::to_string(40 + round) + "&rows=20");
    const CatchUp c = read_catch_up(*client);
    std::string seen = c.bytes;
    client->send({{"type", "resize"}, {"cols", 30 + round}, {"rows", 16}});
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (seen.find("recording") == std::string::npos &&
           std::chrono::steady_clock::now() < give_up) {
      auto m = client->poll(std::chrono::milliseconds(200));
      if (!m) continue;
      if (m->text) {
        EXPECT_NE(m->type(), "error") << m->data;
      } else {
        seen += m->data;
      }
    }
    EXPECT_NE(seen.find("recording"), std::string::npos)
        << "the client got '" << seen << "' (" << c.start.dump() << ", replayed to " << c.replayed
        << "); the engine holds '" << engine_.history(actor, 0) << "'";
  }
}

// A page that starts keeping the actor's size drew it at its own until then: its view starts
// over with a snapshot, at the actor's size.
TEST_F(BridgeTest, FollowingStartsTheViewOverWithASnapshot) {
  spawn_sh("sized", size_reporter(), {{"cols", 100}, {"rows", 30}});
  engine_.wait_output("sized", "ready");
  auto client = open("sized", "&role=controller");
  read_catch_up(*client);
  client->send({{"type", "follow"}, {"follow", true}});
  const Json start = client->until("snapshot").json();
  EXPECT_EQ(start["cols"], 100);
  EXPECT_EQ(start["rows"], 30);
  client->until("replayed");
  client->send({{"type", "follow"}, {"follow", false}});
  client->send({{"type", "ping"}});
  std::vector<WsMessage> before;
  client->until("pong", &before);
  for (const auto& m : before) EXPECT_NE(m.type(), "snapshot") << "turning it off restarts nothing";
}

// A follower's resume says its size at its cursor: resumed when the actor still has it, else
// caught up with a snapshot at the actor's size (it was resized while the page was away, and
// nothing here knows where).
TEST_F(BridgeTest, AFollowersResumeAtAnotherSizeGetsASnapshot) {
  spawn_sh("sized", size_reporter(), {{"cols", 100}, {"rows", 30}});
  engine_.wait_output("sized", "ready");
  auto first = open("sized", "&follow=1");
  const CatchUp a = read_catch_up(*first);
  first->close();
  const std::string resume = "&follow=1&epoch=" + a.hello["epoch"].get<std::string>() +
                             "&session=1&cursor=" + std::to_string(a.replayed);
  {
    auto same = open("sized", resume + "&have_cols=100&have_rows=30");
    EXPECT_EQ(read_catch_up(*same).start["type"], "resume");
  }
  engine_.call("resize", {{"actor", "sized"}, {"cols", 72}, {"rows", 20}});
  engine_.wait_output("sized", "size 20 72");
  auto other = open("sized", resume + "&have_cols=100&have_rows=30");
  const CatchUp b = read_catch_up(*other);
  EXPECT_EQ(b.start["type"], "snapshot");
  EXPECT_EQ(b.start["cols"], 72);
  EXPECT_EQ(b.start["rows"], 20);
}

// A paste goes to the engine as one (`paste: true`: a trailing Enter is written apart).
TEST_F(BridgeTest, APasteIsTyped) {
  engine_.spawn("cat", {"cat"});
  auto client = open("cat", "&role=controller");
  read_catch_up(*client);
  client->send({{"type", "input"}, {"data", "pasted text\r"}, {"paste", true}});
  std::string live;
  while (live.find("pasted text\r\npasted text") == std::string::npos) {
    auto m = client->next();
    ASSERT_TRUE(m) << "closed";
    if (!m->text) live += m->data;
    else EXPECT_NE(m->type(), "error") << m->data;
  }
}

// A restarted actor's next session is not the client's: it gets its session's bytes, `exit` at
// the session's end, and nothing after.
TEST_F(BridgeTest, AClientStopsAtItsSessionsEnd) {
  spawn_sh("again", "echo started-$$");
  engine_.wait_output("again", "started-");
  auto client = open("again");
  const CatchUp c = read_catch_up(*client);
  ASSERT_EQ(c.hello["session"], 1);
  engine_.call("restart", {{"actor", "again"}});
  std::string live;
  Json exit;
  for (;;) {
    auto m = client->next();
    ASSERT_TRUE(m) << "closed before exit";
    if (!m->text) {
      live += m->data;
    } else if (m->type() == "exit") {
      exit = m->json();
      break;
    }
  }
  const Json first = engine_.status("again")["sessions"][0];
  ASSERT_EQ(first["id"], 1);
  EXPECT_EQ(exit["cursor"], first["end"]);
  EXPECT_EQ(live, history("again", c.replayed, first["end"].get<std::uint64_t>()));
  EXPECT_EQ(client->wait_close(), 1000);
}

// While the engine is down a page retries (1011), it is not told its session is gone; once a
// memory-only engine is back, the old cursor space is gone (4410).
TEST_F(BridgeTest, AnEngineRestartIsRetriedThenTheOldEpochIsGone) {
  engine_.spawn("cat", {"cat"});
  auto client = open("cat");
  const CatchUp c = read_catch_up(*client);
  const std::string runtime = engine_.places().runtime_dir.string();
  engine_.stop();
  EXPECT_NE(client->wait_close(), 4410) << "the engine went away, not the session";
  const std::string resume = "&epoch=" + c.hello["epoch"].get<std::string>() +
                             "&session=1&cursor=" + std::to_string(c.replayed);
  {
    auto retry = open("cat", resume);
    EXPECT_EQ(retry->wait_close(), 1011) << "no engine: try again later";
  }
  EngineConfig config;
  config.runtime_dir = runtime;
  ASSERT_TRUE(engine_.start(config));
  engine_.spawn("cat", {"cat"});
  auto after = open("cat", resume);
  EXPECT_EQ(after->wait_close(), 4410) << "a new engine without persistence: a new epoch";
}

TEST_F(BridgeTest, TheTokenFileIsPrivate) {
  struct stat st {};
  ASSERT_EQ(::stat((engine_.places().state_dir / "bridge.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_GE(bridge_->token().size(), 32u);
}

// A client that never acknowledges gets at most 512 KiB of live output, then nothing (it is
// behind; the bytes stay in the ring); once it acknowledges, it is caught up from the ring with
// exactly the bytes it missed.
TEST_F(BridgeTest, AClientThatDoesNotAckStopsAtTheHighWaterAndIsCaughtUpAfter) {
  engine_.spawn("flood", printer(16000, "flood"));
  auto client = open("flood", "&role=controller");
  const CatchUp c = read_catch_up(*client);
  engine_.call("input", {{"actor", "flood"}}, "go\r");
  const std::string got = read_until_silent(*client, c.replayed, /*ack=*/false);
  const std::uint64_t live = got.size();
  const std::uint64_t end = wait_tail("flood", "flood line 15999 ");
  ASSERT_GT(end - c.replayed, 700'000u);
  EXPECT_LE(live, 512u * 1024) << "never more than the high water unacknowledged";
  EXPECT_GT(live, 0u);
  EXPECT_EQ(got, history("flood", c.replayed, c.replayed + live));
  // Acknowledging bytes it was never sent is an error, and opens nothing.
  client->send({{"type", "ack"}, {"cursor", c.replayed + live + 1000}});
  const Json refused = client->until("error").json();
  EXPECT_EQ(refused["code"], "bad_request");
  EXPECT_NE(refused["message"].get<std::string>().find("beyond what was sent"), std::string::npos);
  client->send({{"type", "ack"}, {"cursor", c.replayed + live}});
  const CatchUp again = [&] {
    CatchUp out;
    out.start = client->until("resume").json();  // ~780 KB behind, within the 1 MiB resume limit
    std::vector<WsMessage> frames;
    out.replayed = client->until("replayed", &frames).json()["cursor"].get<std::uint64_t>();
    for (const auto& f : frames) out.bytes += f.data;
    return out;
  }();
  EXPECT_EQ(again.start["cursor"], c.replayed + live) << "from the first byte it did not get";
  EXPECT_EQ(again.bytes, history("flood", c.replayed + live, again.replayed));
  EXPECT_EQ(again.replayed, end);
}

// A hidden page gets at most 256 KiB of live output per second; past it, it is behind until it
// is shown, then caught up.
TEST_F(BridgeTest, AHiddenClientGetsItsBudgetThenCatchesUpWhenShown) {
  engine_.spawn("flood", printer(40000, "hidden"));
  auto client = open("flood", "&visible=0");
  const CatchUp c = read_catch_up(*client);
  const auto start = std::chrono::steady_clock::now();
  engine_.call("input", {{"actor", "flood"}}, "go\r");
  // It acks everything: only the budget holds it back.
  const std::uint64_t live = read_until_silent(*client, c.replayed, /*ack=*/true).size();
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
  const std::uint64_t windows = static_cast<std::uint64_t>(seconds.count()) + 1;
  const std::uint64_t end = wait_tail("flood", "hidden line 39999 ");
  EXPECT_LE(live, windows * 256 * 1024) << "at most 256 KiB per one-second window";
  ASSERT_LT(c.replayed + live, end) << "it fell behind";
  EXPECT_FALSE(client->poll(std::chrono::milliseconds(300))) << "hidden: no catch-up yet";
  client->send({{"type", "visible"}, {"visible", true}});
  std::vector<WsMessage> frames;
  EXPECT_EQ(client->until("replayed", &frames).json()["cursor"], end) << "shown: caught up";
}

// A client that falls further behind than a resume is worth (1 MiB) is caught up with a
// snapshot once it acknowledges: it draws the actor's screen, then follows live.
TEST_F(BridgeTest, AClientFarBehindIsCaughtUpWithASnapshot) {
  engine_.spawn("flood", printer(60000, "far"));
  auto client = open("flood", "&role=controller");
  const CatchUp c = read_catch_up(*client);
  engine_.call("input", {{"actor", "flood"}}, "go\r");
  const std::uint64_t live =
      read_until_silent(*client, c.replayed, /*ack=*/false).size();  // behind
  const std::uint64_t end = wait_tail("flood", "far line 59999 ");
  ASSERT_GT(end - (c.replayed + live), 1u << 20) << "more than a resume is worth";
  client->send({{"type", "ack"}, {"cursor", c.replayed + live}});
  const Json start = client->until("snapshot").json();
  std::vector<WsMessage> frames;
  const auto replayed = client->until("replayed", &frames).json()["cursor"].get<std::uint64_t>();
  EXPECT_EQ(replayed, end);
  std::string bytes;
  for (const auto& f : frames) bytes += f.data;
  const Json screen = xterm_screen(start["cols"].get<int>(), start["rows"].get<int>(), bytes, 0);
  EXPECT_NE(rows_text(screen["lines"]).find("far line 59999 "), std::string::npos)
      << rows_text(screen["lines"]);
  client->send({{"type", "ack"}, {"cursor", replayed}});
  client->send({{"type", "input"}, {"data", "after\r"}});  // live again: the tty echoes it
  std::string after;
  while (after.find("after") == std::string::npos) {
    auto m = client->next();
    ASSERT_TRUE(m);
    if (!m->text) after += m->data;
  }
}

// A client that stops reading altogether never holds the actor or another client back.
TEST_F(BridgeTest, AStalledClientSlowsNeitherTheActorNorOtherClients) {
  std::vector<std::string> argv = printer(60000, "flood");
  argv[2].erase(argv[2].find("; exec sleep 600"));  // this one exits when done
  engine_.spawn("flood", argv);
  auto stalled = open("flood");
  read_catch_up(*stalled);  // then never reads again
  auto good = open("flood", "&role=controller");
  const CatchUp c = read_catch_up(*good);
  engine_.call("input", {{"actor", "flood"}}, "go\r");
  // The good client acks every frame, as fast as this thread reads. On a busy machine it may
  // still fall 512 KiB behind (it is then caught up, never queued for): its stream stays exact
  // unless a snapshot replaced part of it.
  std::uint64_t cursor = c.replayed;
  std::string live;
  int snapshots = 0;
  bool in_snapshot = false;
  Json exit;
  for (;;) {
    auto m = good->next();
    ASSERT_TRUE(m) << "closed before exit";
    if (!m->text) {
      ASSERT_TRUE(whole_utf8(m->data));
      if (in_snapshot) continue;
      cursor += m->data.size();
      live += m->data;
      good->send({{"type", "ack"}, {"cursor", cursor}});
      continue;
    }
    const Json j = m->json();
    if (j["type"] == "exit") {
      exit = j;
      break;
    }
    if (j["type"] == "snapshot") {
      ++snapshots;
      in_snapshot = true;
    } else if (j["type"] == "resume") {
      EXPECT_EQ(j["cursor"], cursor) << "a resume continues where its frames stopped";
    } else if (j["type"] == "replayed") {
      in_snapshot = false;
      cursor = j["cursor"].get<std::uint64_t>();
      good->send({{"type", "ack"}, {"cursor", cursor}});
    }
  }
  const Json session = engine_.wait_sealed("flood");
  EXPECT_EQ(exit["exit_code"], 0);
  EXPECT_EQ(exit["cursor"], session["end"]) << "the actor ran to its end";
  EXPECT_EQ(exit["cursor"], cursor) << "the good client got every byte up to it";
  if (snapshots == 0) {
    EXPECT_EQ(live, history("flood", c.replayed, cursor));
  }
  EXPECT_EQ(good->wait_close(), 1000);
}

TEST_F(BridgeTest, OutputFramesNeverCutACharacter) {
  // `cat` writes big blocks, which the PTY hands to the engine in pieces that end anywhere,
  // inside characters too: 2-, 3- and 4-byte characters in lines of 52 bytes.
  TempDir dir;
  const auto file = dir.path() / "utf8.txt";
  {
    std::ofstream out(file, std::ios::binary);
    for (int i = 0; i < 8000; ++i)
      out << "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80 " << i % 10
          << " \xE2\x82\xAC\xC3\xA9\xF0\x9F\x98\x80\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xC3\xA9\xC3"
             "\xA9 end\n";
  }
  spawn_sh("utf8", "read x; cat '" + file.string() + "'; echo done-$((6*7))");
  auto client = open("utf8", "&role=controller");
  const CatchUp c = read_catch_up(*client);
  engine_.call("input", {{"actor", "utf8"}}, "go\r");
  const std::uint64_t end = wait_tail("utf8", "done-42");
  std::uint64_t cursor = c.replayed;
  std::string live;
  while (cursor < end) {
    auto m = client->next();
    ASSERT_TRUE(m);
    if (m->text) continue;
    ASSERT_TRUE(whole_utf8(m->data));
    cursor += m->data.size();
    live += m->data;
    client->send({{"type", "ack"}, {"cursor", cursor}});
  }
  EXPECT_EQ(cursor, end);
  EXPECT_EQ(live, history("utf8", c.replayed, end)) << "held bytes go out with the next frame";
  // A late client's catch-up (the snapshot, then the ring's bytes) keeps characters whole too.
  auto late = open("utf8");
  std::vector<WsMessage> frames;
  late->until("replayed", &frames);
  for (const auto& f : frames) {
    if (!f.text) {
      EXPECT_TRUE(whole_utf8(f.data));
    }
  }
}

TEST_F(BridgeTest, AnExitIsReportedAndADeletionClosesTheSocket) {
  engine_.spawn("short", {"sh", "-c", "read x; echo bye; exit 3"});
  auto client = open("short", "&role=controller");
  read_catch_up(*client);
  client->send({{"type", "input"}, {"data", "now\r"}});
  const Json exit = client->until("exit").json();
  EXPECT_EQ(exit["exit_code"], 3);
  EXPECT_EQ(exit["session"], 1);
  EXPECT_EQ(client->wait_close(), 1000);

  // A deletion stops the program and seals its session before the ring goes: the client gets
  // the session's end, then the socket closes.
  engine_.spawn("cat", {"cat"});
  auto watcher = open("cat");
  read_catch_up(*watcher);
  engine_.call("delete", {{"actor", "cat"}});
  const Json stopped = watcher->until("exit").json();
  EXPECT_EQ(stopped["term_signal"], 1) << "SIGHUP";
  EXPECT_EQ(watcher->wait_close(), 1000);
}

}  // namespace
}  // namespace backscroll::testing
