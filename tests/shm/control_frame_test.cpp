// Control-socket framing (docs/protocol.md): encode_frame and FrameDecoder round-trip headers and
// payloads however the stream is split, enforce the 1 MiB header and 16 MiB payload bounds with
// too_large, reject malformed headers with bad_request and stay failed afterwards; error
// responses round-trip through error_response / error_from_response, cursor included.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shm/control_frame.hpp"
#include "shm/error.hpp"

namespace backscroll::control {
namespace {

std::string length_prefix(std::uint32_t n) {
  return std::string{static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                     static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
}

// A frame with an arbitrary (possibly malformed) header text.
std::string raw_frame(std::string_view header_text) {
  return length_prefix(static_cast<std::uint32_t>(header_text.size())) + std::string(header_text);
}

// Feeds everything, then pops frames until the decoder needs more or fails.
struct Decoded {
  std::vector<Frame> frames;
  std::optional<Error> error;
};

Decoded decode_all(FrameDecoder& decoder) {
  Decoded out;
  for (;;) {
    auto next = decoder.next();
    if (!next) {
      out.error = next.error();
      return out;
    }
    if (!*next) return out;
    out.frames.push_back(std::move(**next));
  }
}

Decoded decode(std::string_view bytes) {
  FrameDecoder decoder;
  decoder.feed(bytes);
  return decode_all(decoder);
}

Errc first_error(std::string_view bytes) {
  const Decoded d = decode(bytes);
  EXPECT_TRUE(d.error.has_value());
  return d.error ? d.error->code : Errc::internal;
}

TEST(FrameDecoder, DecodesAFrameWithoutPayload) {
  const Json header = {{"op", "list"}, {"id", 7}};
  const std::string bytes = encode_frame(header);
  EXPECT_EQ(bytes.substr(0, 4), length_prefix(static_cast<std::uint32_t>(bytes.size() - 4)));
  const Decoded d = decode(bytes);
  ASSERT_FALSE(d.error) << d.error->describe();
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(d.frames[0].header, header);
  EXPECT_FALSE(d.frames[0].header.contains("payload"));
  EXPECT_TRUE(d.frames[0].payload.empty());
}

TEST(FrameDecoder, DecodesAFrameWithARawPayload) {
  const std::string payload("\0\x01\xff raw \r\n bytes", 17);
  const std::string bytes = encode_frame({{"op", "input"}, {"id", "x"}}, payload);
  const Decoded d = decode(bytes);
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(d.frames[0].header["op"], "input");
  EXPECT_EQ(d.frames[0].header["payload"], payload.size());
  EXPECT_EQ(d.frames[0].payload, payload);
}

TEST(FrameDecoder, WaitsForEveryByteWhenFedOneAtATime) {
  const std::string payload(300, 'p');
  const std::string bytes = encode_frame({{"op", "input"}}, payload);
  FrameDecoder decoder;
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i) {
    decoder.feed(bytes.substr(i, 1));
    auto next = decoder.next();
    ASSERT_TRUE(next.has_value()) << "byte " << i;
    ASSERT_FALSE(next->has_value()) << "a frame before its last byte, at byte " << i;
  }
  decoder.feed(bytes.substr(bytes.size() - 1));
  auto next = decoder.next();
  ASSERT_TRUE(next.has_value());
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((*next)->payload, payload);
  EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(FrameDecoder, DecodesSeveralFramesFromOneFeedInOrder) {
  std::string bytes;
  for (int i = 0; i < 5; ++i)
    bytes += encode_frame(
        {{"id", i}}, std::string(static_cast<std::size_t>(i) * 10, static_cast<char>('a' + i)));
  const Decoded d = decode(bytes);
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(d.frames[i].header["id"], i);
    EXPECT_EQ(d.frames[i].payload,
              std::string(static_cast<std::size_t>(i) * 10, static_cast<char>('a' + i)));
  }
}

TEST(FrameDecoder, KeepsAPartialFrameBufferedAfterACompleteOne) {
  const std::string first = encode_frame({{"id", 1}});
  const std::string second = encode_frame({{"id", 2}}, "xyz");
  FrameDecoder decoder;
  decoder.feed(first + second.substr(0, 6));
  const Decoded d = decode_all(decoder);
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(decoder.buffered(), 6u);
  decoder.feed(second.substr(6));
  const Decoded rest = decode_all(decoder);
  ASSERT_EQ(rest.frames.size(), 1u);
  EXPECT_EQ(rest.frames[0].payload, "xyz");
}

TEST(FrameDecoder, ReportsTooLargeForALengthOf4GiB) {
  EXPECT_EQ(first_error(length_prefix(0xffffffffu)), Errc::too_large);
}

TEST(FrameDecoder, ReportsTooLargeForAHeaderOneByteOverOneMebibyte) {
  EXPECT_EQ(first_error(length_prefix(kMaxHeaderBytes + 1)), Errc::too_large);
}

TEST(FrameDecoder, WaitsForAHeaderOfExactlyOneMebibyte) {
  const Decoded d = decode(length_prefix(kMaxHeaderBytes) + "{");
  EXPECT_FALSE(d.error);
  EXPECT_TRUE(d.frames.empty());
}

TEST(FrameDecoder, ReportsTooLargeForAPayloadClaimOver16MiB) {
  EXPECT_EQ(first_error(raw_frame("{\"payload\":16777217}")), Errc::too_large);
  EXPECT_EQ(first_error(raw_frame("{\"payload\":18446744073709551615}")), Errc::too_large);
}

TEST(FrameDecoder, WaitsForAPayloadOfExactly16MiB) {
  const Decoded d = decode(raw_frame("{\"payload\":16777216}") + "abc");
  EXPECT_FALSE(d.error);
  EXPECT_TRUE(d.frames.empty());
}

TEST(FrameDecoder, ReportsBadRequestForAnEmptyHeader) {
  EXPECT_EQ(first_error(length_prefix(0)), Errc::bad_request);
}

TEST(FrameDecoder, ReportsBadRequestForAHeaderThatIsNotJson) {
  EXPECT_EQ(first_error(raw_frame("op=list")), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame("{\"op\":\"list\"")), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame("{\"op\":\"\xff\"}")), Errc::bad_request);  // not UTF-8
  EXPECT_EQ(first_error(raw_frame("{} {}")), Errc::bad_request);
  // A NUL is the end of input to the JSON parser: what follows must not be ignored.
  EXPECT_EQ(first_error(raw_frame(std::string("{\"op\":\"list\"}\0", 14))), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame(std::string("{\"op\":\"list\"}\0junk", 18))), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame(std::string("{\"op\":\"li\0st\"}", 15))), Errc::bad_request);
}

TEST(FrameDecoder, ReportsBadRequestForJsonThatIsNotAnObject) {
  EXPECT_EQ(first_error(raw_frame("[1,2]")), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame("\"op\"")), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame("42")), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame("null")), Errc::bad_request);
}

TEST(FrameDecoder, ReportsBadRequestForAPayloadThatIsNotANonNegativeInteger) {
  EXPECT_EQ(first_error(raw_frame("{\"payload\":\"3\"}")), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame("{\"payload\":-1}")), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame("{\"payload\":1.5}")), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame("{\"payload\":null}")), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame("{\"payload\":[3]}")), Errc::bad_request);
}

// Regression: an "id" nested 300,000 levels deep parsed fine, then crashed the engine by
// recursion when the reply copied it. Headers nesting deeper than kMaxJsonDepth are refused.
TEST(FrameDecoder, ReportsBadRequestForJsonNestedDeeperThanTheLimit) {
  const auto nested = [](std::size_t levels) {
    return "{\"id\":" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  EXPECT_EQ(first_error(raw_frame(nested(kMaxJsonDepth + 1))), Errc::bad_request);
  EXPECT_EQ(first_error(raw_frame(nested(300'000))), Errc::bad_request);
  const Decoded at_limit = decode(raw_frame(nested(kMaxJsonDepth)));
  EXPECT_FALSE(at_limit.error);
  EXPECT_EQ(at_limit.frames.size(), 1u);
  // Brackets inside strings are text, not nesting.
  const Decoded in_string = decode(raw_frame("{\"text\":\"" + std::string(1000, '[') + "\\\"\"}"));
  EXPECT_FALSE(in_string.error);
  EXPECT_EQ(in_string.frames.size(), 1u);
}

TEST(FrameDecoder, AcceptsAnExplicitPayloadOfZero) {
  const Decoded d = decode(raw_frame("{\"payload\":0,\"id\":1}"));
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_TRUE(d.frames[0].payload.empty());
}

TEST(FrameDecoder, StaysFailedAfterAnError) {
  FrameDecoder decoder;
  decoder.feed(encode_frame({{"id", 1}}) + raw_frame("[]"));
  auto first = decoder.next();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(first->has_value());
  auto bad = decoder.next();
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, Errc::bad_request);
  decoder.feed(encode_frame({{"id", 2}}));
  for (int i = 0; i < 3; ++i) {
    auto again = decoder.next();
    ASSERT_FALSE(again.has_value());
    EXPECT_EQ(again.error().code, Errc::bad_request);
    EXPECT_EQ(again.error().message, bad.error().message);
  }
}

TEST(FrameDecoder, ReportsAnErrorOnlyOnceTheFrameBeforeItWasTaken) {
  // Frames before a malformed one are still delivered, in order.
  const Decoded d = decode(encode_frame({{"id", 1}}) + encode_frame({{"id", 2}}, "pp") +
                           length_prefix(0xffffffffu));
  ASSERT_EQ(d.frames.size(), 2u);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, Errc::too_large);
}

TEST(EncodeFrame, ReplacesInvalidUtf8InsteadOfThrowing) {
  std::string bytes;
  ASSERT_NO_THROW(bytes = encode_frame({{"title", std::string("a\xff"
                                                              "b")}}));
  const Decoded d = decode(bytes);
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(d.frames[0].header["title"],
            "a\xef\xbf\xbd"
            "b");
}

TEST(ErrorResponse, RoundTripsCodeMessageAndCursor) {
  const Error expired{Errc::cursor_expired, "cursor 5 is older than 1048576", 1048576};
  const Json response = error_response(7, expired);
  EXPECT_EQ(response["ok"], false);
  EXPECT_EQ(response["id"], 7);
  EXPECT_EQ(response["error"]["code"], "cursor_expired");
  // Through the wire, as a client sees it.
  const Decoded d = decode(encode_frame(response));
  ASSERT_EQ(d.frames.size(), 1u);
  const auto back = error_from_response(d.frames[0].header);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->code, Errc::cursor_expired);
  EXPECT_EQ(back->message, expired.message);
  EXPECT_EQ(back->cursor, 1048576u);
}

TEST(ErrorResponse, RoundTripsAnErrorWithoutCursor) {
  const Json response = error_response(Json("abc"), Error{Errc::no_such_actor, "no actor x", {}});
  EXPECT_FALSE(response["error"].contains("cursor"));
  const auto back = error_from_response(response);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->code, Errc::no_such_actor);
  EXPECT_FALSE(back->cursor.has_value());
}

TEST(ErrorResponse, OmitsANullId) {
  EXPECT_FALSE(error_response(Json(), Error{Errc::internal, "x", {}}).contains("id"));
  EXPECT_FALSE(ok_response(Json()).contains("id"));
}

TEST(ErrorResponse, RoundTripsEveryErrorCode) {
  for (int i = 0; i <= static_cast<int>(Errc::internal); ++i) {
    const auto code = static_cast<Errc>(i);
    EXPECT_EQ(errc_from_string(to_string(code)), code) << to_string(code);
    const auto back = error_from_response(error_response(1, Error{code, "m", {}}));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->code, code);
  }
}

TEST(ErrorResponse, IsNotFoundInAnOkResponse) {
  const Json ok = ok_response(3, {{"cursor", 5}});
  EXPECT_EQ(ok["ok"], true);
  EXPECT_EQ(ok["id"], 3);
  EXPECT_EQ(ok["cursor"], 5);
  EXPECT_FALSE(error_from_response(ok).has_value());
}

TEST(ErrorResponse, ReadsAMalformedErrorAsInternal) {
  const auto missing = error_from_response({{"ok", false}});
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->code, Errc::internal);
  const auto unknown = error_from_response({{"ok", false}, {"error", {{"code", "no_such_code"}}}});
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->code, Errc::internal);
  const auto negative_cursor =
      error_from_response({{"ok", false}, {"error", {{"code", "cursor_expired"}, {"cursor", -1}}}});
  ASSERT_TRUE(negative_cursor.has_value());
  EXPECT_FALSE(negative_cursor->cursor.has_value());
}

// --- property: splitting never changes what is decoded ---------------------------------------

Json gen_header() {
  Json header = Json::object();
  header["op"] = *rc::gen::element<std::string>("list", "input", "read", "spawn", "subscribe");
  header["id"] = *rc::gen::inRange<std::int64_t>(-5, 1'000'000);
  const auto extra = *rc::gen::container<std::vector<std::string>>(
      rc::gen::container<std::string>(rc::gen::inRange<char>(0x20, 0x7f)));
  for (std::size_t i = 0; i < extra.size(); ++i) header["k" + std::to_string(i)] = extra[i];
  return header;
}

RC_GTEST_PROP(FrameDecoder, DecodesTheSameFramesHoweverTheStreamIsSplit, ()) {
  const auto count = *rc::gen::inRange<std::size_t>(0, 8);
  std::vector<Json> headers;
  std::vector<std::string> payloads;
  std::string stream;
  for (std::size_t i = 0; i < count; ++i) {
    headers.push_back(gen_header());
    payloads.push_back(*rc::gen::container<std::string>(rc::gen::arbitrary<char>()));
    stream += encode_frame(headers.back(), payloads.back());
  }
  const auto cuts = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, stream.size() + 1));
  std::vector<std::size_t> points(cuts.begin(), cuts.end());
  points.push_back(0);
  points.push_back(stream.size());
  std::sort(points.begin(), points.end());

  FrameDecoder decoder;
  std::vector<Frame> frames;
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    decoder.feed(std::string_view(stream).substr(points[i], points[i + 1] - points[i]));
    const Decoded d = decode_all(decoder);
    RC_ASSERT(!d.error.has_value());
    for (const Frame& f : d.frames) frames.push_back(f);
  }
  RC_ASSERT(frames.size() == count);
  RC_ASSERT(decoder.buffered() == 0u);
  for (std::size_t i = 0; i < count; ++i) {
    Json expected = headers[i];
    if (!payloads[i].empty()) expected["payload"] = payloads[i].size();
    RC_ASSERT(frames[i].header == expected);
    RC_ASSERT(frames[i].payload == payloads[i]);
  }
}

}  // namespace
}  // namespace backscroll::control
