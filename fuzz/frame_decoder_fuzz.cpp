// Fuzz target: control-socket framing (shm/control_frame.hpp), the bytes any local client sends.
// Input: byte 0 seeds how the rest is split into feed() calls; bytes 1.. are the stream. Oracles:
// no crash or sanitizer report; decoding the stream whole and in pieces gives the same frames and
// the same first error; every decoded frame re-encodes to bytes that decode to the same frame.
// Run: frame_decoder_fuzz -dict=fuzz/frame_decoder.dict -max_len=4096 fuzz/corpus/frame_decoder
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shm/control_frame.hpp"

namespace {

using backscroll::Errc;
using backscroll::control::encode_frame;
using backscroll::control::Frame;
using backscroll::control::FrameDecoder;

struct Outcome {
  std::vector<Frame> frames;
  std::optional<Errc> error;
  std::string message;
};

// Pops frames until the decoder needs more bytes (true) or fails (false).
bool drain(FrameDecoder& decoder, Outcome& out) {
  for (;;) {
    auto next = decoder.next();
    if (!next) {
      out.error = next.error().code;
      out.message = next.error().message;
      return false;
    }
    if (!*next) return true;
    out.frames.push_back(std::move(**next));
  }
}

[[noreturn]] void violated() { __builtin_trap(); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::uint32_t split_state = data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  Outcome whole;
  FrameDecoder whole_decoder;
  whole_decoder.feed(stream);
  drain(whole_decoder, whole);

  Outcome pieces;
  FrameDecoder piece_decoder;
  std::size_t fed = 0;
  while (fed < stream.size()) {
    split_state = split_state * 1103515245u + 12345u;  // an LCG: piece sizes 1..64
    const std::size_t n =
        std::min<std::size_t>(1 + ((split_state >> 16) & 63), stream.size() - fed);
    piece_decoder.feed(stream.substr(fed, n));
    fed += n;
    if (!drain(piece_decoder, pieces)) break;
  }

  // Splitting never changes the outcome.
  if (whole.frames.size() != pieces.frames.size() || whole.error != pieces.error ||
      whole.message != pieces.message) {
    violated();
  }
  if (!whole.error && whole_decoder.buffered() != piece_decoder.buffered()) violated();
  for (std::size_t i = 0; i < whole.frames.size(); ++i) {
    const Frame& a = whole.frames[i];
    const Frame& b = pieces.frames[i];
    if (a.header != b.header || a.payload != b.payload) violated();
    if (!a.header.is_object()) violated();
    if (a.payload.size() > backscroll::control::kMaxPayloadBytes) violated();

    // What was decoded re-encodes to a frame that decodes to the same thing.
    FrameDecoder again;
    again.feed(encode_frame(a.header, a.payload));
    Outcome round;
    if (!drain(again, round) || round.frames.size() != 1) violated();
    if (round.frames[0].header != a.header || round.frames[0].payload != a.payload) violated();
  }

  // A failed decoder stays failed with the same error.
  if (whole.error) {
    whole_decoder.feed(encode_frame({{"op", "list"}}));
    auto next = whole_decoder.next();
    if (next || next.error().code != *whole.error) violated();
  }
  return 0;
}
