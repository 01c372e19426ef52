#include "shm/control_frame.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace backscroll::control {
namespace {

// The deepest nesting of arrays and objects in `text`, brackets inside strings not counted.
// Stops counting once past `limit`.
std::size_t json_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) break;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

std::string encode_frame(Json header, std::string_view payload) {
  if (!payload.empty()) header["payload"] = payload.size();
  const std::string body = header.dump(-1, ' ', false, Json::error_handler_t::replace);
  const auto n = static_cast<std::uint32_t>(body.size());
  std::string out;
  out.reserve(4 + body.size() + payload.size());
  const char len[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                       static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
  out.append(len, 4);
  out += body;
  out.append(payload);
  return out;
}

Result<std::optional<Frame>> FrameDecoder::next() {
  if (failed_) return tl::unexpected(*failed_);
  auto failure = [this](Errc code, std::string message) -> Result<std::optional<Frame>> {
    failed_ = Error{code, std::move(message), std::nullopt};
    return tl::unexpected(*failed_);
  };
  const std::size_t available = buffer_.size() - consumed_;
  if (available < 4) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + consumed_);
  const std::uint32_t header_len = std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) |
                                   (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
  if (header_len == 0) return failure(Errc::bad_request, "empty frame header");
  if (header_len > kMaxHeaderBytes) {
    return failure(Errc::too_large, "frame header of " + std::to_string(header_len) +
                                        " bytes exceeds " + std::to_string(kMaxHeaderBytes));
  }
  if (!pending_) {
    // Parsed once per frame: a payload that trickles in must not cost a parse per recv.
    if (available < 4 + std::size_t{header_len}) return std::nullopt;
    const std::string_view text(buffer_.data() + consumed_ + 4, header_len);
    // JSON allows no raw NUL anywhere (inside a string it must be \u0000), and the JSON parser
    // would stop at one as at the end of input: "{...}\0junk" must not pass as "{...}".
    if (text.find('\0') != std::string_view::npos) {
      return failure(Errc::bad_request, "frame header holds a NUL byte");
    }
    if (json_depth(text, kMaxJsonDepth) > kMaxJsonDepth) {
      return failure(Errc::bad_request,
                     "frame header nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    Json header = Json::parse(text.begin(), text.end(), nullptr, false);
    if (header.is_discarded()) return failure(Errc::bad_request, "frame header is not valid JSON");
    if (!header.is_object()) return failure(Errc::bad_request, "frame header is not a JSON object");
    std::uint64_t payload_len = 0;
    if (auto it = header.find("payload"); it != header.end()) {
      if (!it->is_number_unsigned()) {
        return failure(Errc::bad_request, "\"payload\" must be a non-negative integer");
      }
      payload_len = it->get<std::uint64_t>();
      if (payload_len > kMaxPayloadBytes) {
        return failure(Errc::too_large, "payload of " + std::to_string(payload_len) +
                                            " bytes exceeds " + std::to_string(kMaxPayloadBytes));
      }
    }
    pending_ = PendingHeader{std::move(header), payload_len};
  }
  const std::uint64_t payload_len = pending_->payload_bytes;
  if (available < 4 + header_len + payload_len) return std::nullopt;
  Frame frame;
  frame.header = std::move(pending_->header);
  pending_.reset();
  frame.payload.assign(buffer_, consumed_ + 4 + header_len, payload_len);
  consumed_ += 4 + header_len + payload_len;
  // Compact once the consumed prefix dominates, so the buffer stays bounded by one frame.
  if (consumed_ == buffer_.size() || (consumed_ > 65536 && consumed_ * 2 > buffer_.size())) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return frame;
}

Json ok_response(const Json& request_id, Json fields) {
  fields["ok"] = true;
  if (!request_id.is_null()) fields["id"] = request_id;
  return fields;
}

Json error_response(const Json& request_id, const Error& error) {
  Json e = {{"code", std::string(to_string(error.code))}, {"message", error.message}};
  if (error.cursor) e["cursor"] = *error.cursor;
  if (error.from) {  // data_lost: the gap, as {from, to}
    e["from"] = *error.from;
    if (error.cursor) e["to"] = *error.cursor;
  }
  Json out = {{"ok", false}, {"error", std::move(e)}};
  if (!request_id.is_null()) out["id"] = request_id;
  return out;
}

std::optional<Error> error_from_response(const Json& header) {
  if (header.value("ok", false)) return std::nullopt;
  Error e{Errc::internal, "malformed error response", std::nullopt, std::nullopt};
  const auto it = header.find("error");
  if (it == header.end() || !it->is_object()) return e;
  if (auto code = errc_from_string(it->value("code", std::string{}))) e.code = *code;
  e.message = it->value("message", std::string{});
  if (auto c = it->find("cursor"); c != it->end() && c->is_number_unsigned()) {
    e.cursor = c->get<std::uint64_t>();
  }
  if (auto f = it->find("from"); f != it->end() && f->is_number_unsigned()) {
    e.from = f->get<std::uint64_t>();
  }
  return e;
}

}  // namespace backscroll::control
