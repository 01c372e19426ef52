// The bridge's pure parts (docs/bridge.md): where a frame may end in UTF-8, tickets, the
// per-client flow control and the WebSocket URL's query. No sockets, no engine.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "engine/term/utf8.hpp"
#include "tools/bridge/auth.hpp"
#include "tools/bridge/bridge.hpp"
#include "tools/bridge/client_flow.hpp"
#include "tools/bridge/url_query.hpp"
#include "tools/bridge/utf8_boundary.hpp"

namespace backscroll::bridge {
namespace {

using namespace std::chrono_literals;

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// --listen: an IP literal as it is; a host name resolved, IPv4 first (localhost is 127.0.0.1).
TEST(ListenAddress, TakesLiteralsAndHostNames) {
  EXPECT_EQ(Bridge::listen_address("::1").value().to_string(), "::1");
  EXPECT_EQ(Bridge::listen_address("0.0.0.0").value().to_string(), "0.0.0.0");
  EXPECT_EQ(Bridge::listen_address("localhost").value().to_string(), "127.0.0.1");
  const auto nowhere = Bridge::listen_address("no-such-host.invalid");
  ASSERT_FALSE(nowhere);
  EXPECT_NE(nowhere.error().message.find("cannot listen on 'no-such-host.invalid'"),
            std::string::npos)
      << nowhere.error().message;
}

TEST(Utf8Boundary, HoldsBackOnlyAnIncompleteLastCharacter) {
  EXPECT_EQ(utf8_complete_prefix(bytes_of("abc")), 3u);
  EXPECT_EQ(utf8_complete_prefix(bytes_of("a\xC3")), 1u);          // é cut after its lead byte
  EXPECT_EQ(utf8_complete_prefix(bytes_of("a\xC3\xA9")), 3u);      // é whole
  EXPECT_EQ(utf8_complete_prefix(bytes_of("a\xE2\x82")), 1u);      // € cut after 2 of 3
  EXPECT_EQ(utf8_complete_prefix(bytes_of("a\xF0\x9F\x98")), 1u);  // an emoji cut after 3 of 4
  EXPECT_EQ(utf8_complete_prefix(bytes_of("a\xF0\x9F\x98\x80")), 5u);
  // Not UTF-8: sent as it is (nothing could ever complete it).
  EXPECT_EQ(utf8_complete_prefix(bytes_of("a\xFF")), 2u);
  EXPECT_EQ(utf8_complete_prefix(bytes_of("a\x80\x80\x80")), 4u);  // stray continuation bytes
  EXPECT_EQ(utf8_complete_prefix(bytes_of("a\xC3\xA9\xA9")), 4u);  // one continuation too many
  EXPECT_EQ(utf8_complete_prefix(bytes_of("\xC0")), 1u);           // never a lead byte
  EXPECT_EQ(utf8_complete_prefix(bytes_of("")), 0u);
}

RC_GTEST_PROP(Utf8Boundary, AFrameEndsOnACharacterBoundaryAndHoldsAtMostThreeBytes, ()) {
  // Random text (ASCII, 2-, 3- and 4-byte characters) cut at a random place.
  const auto points = *rc::gen::container<std::vector<char32_t>>(rc::gen::oneOf(
      rc::gen::inRange<char32_t>(0x20, 0x7F), rc::gen::inRange<char32_t>(0x80, 0x800),
      rc::gen::inRange<char32_t>(0x800, 0xD800), rc::gen::inRange<char32_t>(0x10000, 0x110000)));
  std::string text;
  std::vector<std::size_t> boundaries{0};
  for (const char32_t cp : points) {
    term::append_utf8(text, cp);
    boundaries.push_back(text.size());
  }
  const std::size_t cut = *rc::gen::inRange<std::size_t>(0, text.size() + 1);
  const std::string frame = text.substr(0, cut);
  const std::size_t whole = utf8_complete_prefix(bytes_of(frame));
  RC_ASSERT(std::find(boundaries.begin(), boundaries.end(), whole) != boundaries.end());
  RC_ASSERT(whole <= cut);
  RC_ASSERT(cut - whole <= 3u);
  // The largest boundary at or before the cut: nothing whole is held back.
  std::size_t last = 0;
  for (const std::size_t b : boundaries)
    if (b <= cut) last = b;
  RC_ASSERT(whole == last);
}

TEST(TicketBook, ATicketWorksOnceWithinItsLifetime) {
  TicketBook book;
  const auto t0 = TicketBook::Clock::now();
  const std::string a = book.issue(t0);
  const std::string b = book.issue(t0);
  EXPECT_EQ(a.size(), 48u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(book.redeem(a, t0 + 29s));
  EXPECT_FALSE(book.redeem(a, t0 + 29s)) << "a ticket is one-time";
  EXPECT_FALSE(book.redeem(b, t0 + 31s)) << "a ticket lives 30 s";
  EXPECT_FALSE(book.redeem(b, t0)) << "an expired ticket is forgotten when tried";
  EXPECT_FALSE(book.redeem("", t0));
  EXPECT_FALSE(book.redeem("not-a-ticket", t0));
}

TEST(TicketBook, OutstandingTicketsAreBounded) {
  TicketBook book;
  const auto t0 = TicketBook::Clock::now();
  for (std::size_t i = 0; i < TicketBook::kMaxOutstanding; ++i)
    ASSERT_FALSE(book.issue(t0).empty());
  EXPECT_TRUE(book.issue(t0 + 1s).empty()) << "full of unexpired tickets: refused";
  EXPECT_FALSE(book.issue(t0 + 31s).empty()) << "the expired ones are forgotten first";
  EXPECT_EQ(book.outstanding(), 1u);
}

TEST(Secrets, CompareWholeStrings) {
  EXPECT_TRUE(same_secret("abc", "abc"));
  EXPECT_FALSE(same_secret("abc", "abd"));
  EXPECT_FALSE(same_secret("abc", "abcd"));
  EXPECT_FALSE(same_secret("", "a"));
}

constexpr std::uint64_t KiB = 1024;

TEST(ClientFlow, ALiveClientGetsAtMostTheHighWaterUnacknowledged) {
  const auto t0 = ClientFlow::Clock::now();
  ClientFlow flow(Cursor{1000}, /*visible=*/true, t0);
  Cursor at{1000};
  for (int i = 0; i < 8; ++i) {  // 8 x 64 KiB = the 512 KiB high water
    ASSERT_TRUE(flow.admit(at, 64 * KiB, t0));
    at = at + 64 * KiB;
    flow.sent(at, t0);
  }
  EXPECT_FALSE(flow.admit(at, 1, t0));
  ASSERT_TRUE(flow.behind());
  EXPECT_EQ(*flow.behind(), at) << "behind from the first byte it did not get";
  EXPECT_FALSE(flow.admit(at, 1, t0)) << "a behind client gets no live frames at all";
}

TEST(ClientFlow, AcksAreClampedAndNeverGoBack) {
  const auto t0 = ClientFlow::Clock::now();
  ClientFlow flow(Cursor{0}, true, t0);
  ASSERT_TRUE(flow.admit(Cursor{0}, 100 * KiB, t0));
  flow.sent(Cursor{100 * KiB}, t0);
  flow.ack(Cursor{40 * KiB}, t0);
  EXPECT_EQ(flow.unacked(), 60 * KiB);
  flow.ack(Cursor{10 * KiB}, t0);  // older: ignored
  EXPECT_EQ(flow.unacked(), 60 * KiB);
  flow.ack(Cursor{900 * KiB}, t0);  // past what was sent: clamped
  EXPECT_EQ(flow.unacked(), 0u);
}

TEST(ClientFlow, AHiddenClientGetsItsBudgetPerWindow) {
  const auto t0 = ClientFlow::Clock::now();
  ClientFlow flow(Cursor{0}, /*visible=*/false, t0);
  Cursor at{0};
  for (int i = 0; i < 4; ++i) {  // 4 x 64 KiB = 256 KiB
    ASSERT_TRUE(flow.admit(at, 64 * KiB, t0 + 10ms));
    at = at + 64 * KiB;
    flow.sent(at, t0);
    flow.ack(at, t0 + 10ms);  // acked: only the budget holds it back
  }
  EXPECT_FALSE(flow.admit(at, 1, t0 + 20ms)) << "past 256 KiB in one second";
  EXPECT_TRUE(flow.behind());

  ClientFlow later(Cursor{0}, false, t0);
  ASSERT_TRUE(later.admit(Cursor{0}, 256 * KiB, t0));
  later.sent(Cursor{256 * KiB}, t0);
  later.ack(Cursor{256 * KiB}, t0);
  EXPECT_TRUE(later.admit(Cursor{256 * KiB}, 64 * KiB, t0 + 1s)) << "a new window, a new budget";
}

TEST(ClientFlow, ABehindClientIsCaughtUpOnceAckedVisibleAndTheActorQuiet) {
  const auto t0 = ClientFlow::Clock::now();
  ClientFlow flow(Cursor{0}, true, t0);
  ASSERT_TRUE(flow.admit(Cursor{0}, 512 * KiB, t0));
  flow.sent(Cursor{512 * KiB}, t0);
  ASSERT_FALSE(flow.admit(Cursor{512 * KiB}, 64 * KiB, t0));
  EXPECT_EQ(flow.catch_up(t0, /*actor_quiet=*/true), ClientFlow::CatchUp::wait) << "not acked yet";
  flow.ack(Cursor{500 * KiB}, t0 + 10ms);  // less than one ack step left: all it can have parsed
  EXPECT_EQ(flow.catch_up(t0 + 10ms, false), ClientFlow::CatchUp::wait) << "the actor still floods";
  EXPECT_EQ(flow.catch_up(t0 + 10ms, true), ClientFlow::CatchUp::resume);
  EXPECT_EQ(flow.catch_up(t0 + 2s, false), ClientFlow::CatchUp::resume) << "behind 2 s: anyway";
  flow.set_visible(false, t0 + 10ms);
  EXPECT_EQ(flow.catch_up(t0 + 3s, true), ClientFlow::CatchUp::wait) << "hidden: waits to be shown";
  flow.set_visible(true, t0 + 3s);
  flow.caught_up(Cursor{2048 * KiB}, t0 + 3s);
  EXPECT_FALSE(flow.behind());
  EXPECT_EQ(flow.unacked(), 0u) << "catch-up bytes never count";
  EXPECT_TRUE(flow.admit(Cursor{2048 * KiB}, 64 * KiB, t0 + 3s));
}

TEST(ClientFlow, AClientWhoseAcksStoppedGetsASnapshot) {
  const auto t0 = ClientFlow::Clock::now();
  ClientFlow flow(Cursor{0}, true, t0);
  ASSERT_TRUE(flow.admit(Cursor{0}, 512 * KiB, t0));
  flow.sent(Cursor{512 * KiB}, t0);
  ASSERT_FALSE(flow.admit(Cursor{512 * KiB}, 1, t0));
  EXPECT_EQ(flow.catch_up(t0 + 4s, true), ClientFlow::CatchUp::wait);
  EXPECT_EQ(flow.catch_up(t0 + 5s, true), ClientFlow::CatchUp::snapshot)
      << "no ack for 5 s: its cursor cannot be trusted";
}

TEST(ClientFlow, AClientWithNothingToAckIsNeverStalled) {
  const auto t0 = ClientFlow::Clock::now();
  ClientFlow flow(Cursor{0}, true, t0);
  // Quiet for a minute, then a burst it has had no time to acknowledge.
  ASSERT_TRUE(flow.admit(Cursor{0}, 512 * KiB, t0 + 60s));
  flow.sent(Cursor{512 * KiB}, t0 + 60s);
  ASSERT_FALSE(flow.admit(Cursor{512 * KiB}, 1, t0 + 60s));
  EXPECT_EQ(flow.catch_up(t0 + 61s, true), ClientFlow::CatchUp::wait)
      << "the stall clock starts when it first owes an ack, not at its last one";
  EXPECT_EQ(flow.catch_up(t0 + 65s, true), ClientFlow::CatchUp::snapshot);
}

TEST(UrlQuery, DecodesNamesAndValues) {
  const auto t = parse_target("/ws?actor=a%2Eb&role=viewer&x=1+2&flag&actor=second");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->path, "/ws");
  EXPECT_EQ(t->query.at("actor"), "a.b") << "the first value of a name counts";
  EXPECT_EQ(t->query.at("x"), "1 2");
  EXPECT_EQ(t->query.at("flag"), "");
  EXPECT_FALSE(parse_target("/ws?a=%zz"));
  EXPECT_FALSE(parse_target("/ws?a=%4"));
  EXPECT_FALSE(parse_target("/ws?a=%"));
  EXPECT_EQ(parse_target("/a%20b")->path, "/a b");
}

}  // namespace
}  // namespace backscroll::bridge
