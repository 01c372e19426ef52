// Control-socket framing (docs/protocol.md, "Frames"), used by the engine and by clients.
// A frame is: a 4-byte little-endian length N, N bytes of a JSON object (the header), then
// header["payload"] raw bytes when that field is present. Both sides enforce the same bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "shm/error.hpp"

namespace backscroll::control {

using Json = nlohmann::json;

inline constexpr std::uint32_t kMaxHeaderBytes = 1u << 20;      // 1 MiB of JSON
inline constexpr std::uint64_t kMaxPayloadBytes = 16ull << 20;  // 16 MiB of raw bytes
// Deeper JSON is refused before parsing: copying or printing a value recurses once per level,
// and a 1 MiB header could otherwise nest 500k levels and overflow any thread's stack.
inline constexpr std::size_t kMaxJsonDepth = 32;

struct Frame {
  Json header;
  std::string payload;  // raw bytes, possibly empty
};

// Encodes one frame. A non-empty payload sets header["payload"] to its size.
std::string encode_frame(Json header, std::string_view payload = {});

// Incremental decoder for a byte stream of frames. Once it reports an error it stays failed:
// the connection cannot be resynchronised and must be closed after the error reply.
class FrameDecoder {
 public:
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete frame, nothing if more bytes are needed, or the first framing error
  // (too_large for a length or payload over its bound, bad_request for anything malformed).
  Result<std::optional<Frame>> next();
  std::size_t buffered() const noexcept { return buffer_.size() - consumed_; }

 private:
  struct PendingHeader {
    Json header;
    std::uint64_t payload_bytes;
  };
  std::string buffer_;
  std::size_t consumed_ = 0;
  std::optional<PendingHeader> pending_;  // the current frame's parsed header, awaiting payload
  std::optional<Error> failed_;
};

// A response header: {"id": id, "ok": true, ...fields}.
Json ok_response(const Json& request_id, Json fields = Json::object());
// {"id": id, "ok": false, "error": {"code", "message", "cursor"?}}.
Json error_response(const Json& request_id, const Error& error);
// Turns an error response back into an Error (clients); nullopt when the header says ok.
std::optional<Error> error_from_response(const Json& header);

}  // namespace backscroll::control
