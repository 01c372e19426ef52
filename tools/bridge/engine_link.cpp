#include "tools/bridge/engine_link.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace backscroll::bridge {

namespace asio = boost::asio;
using local_socket = asio::local::stream_protocol::socket;

Result<std::shared_ptr<EngineLink>> EngineLink::connect(asio::io_context& io,
                                                        const Places& places) {
  local_socket socket(io);
  boost::system::error_code ec;
  socket.connect(asio::local::stream_protocol::endpoint(places.socket_path().string()), ec);
  if (ec) {
    return fail(Errc::engine_unavailable,
                "no engine answers on " + places.socket_path().string() + ": " + ec.message());
  }
  auto link = std::shared_ptr<EngineLink>(new EngineLink(std::move(socket)));
  link->read_more();
  return link;
}

EngineLink::EngineLink(local_socket socket) : socket_(std::move(socket)) {}

void EngineLink::call(std::string_view op, control::Json fields, const std::string& payload,
                      Reply reply) {
  if (!open_) {
    reply(fail(Errc::engine_unavailable, "the engine closed the control connection"));
    return;
  }
  const std::uint64_t id = next_id_++;
  fields["op"] = op;
  fields["id"] = id;
  waiting_.emplace(id, std::move(reply));
  outgoing_.push_back(control::encode_frame(std::move(fields), payload));
  if (outgoing_.size() == 1) write_more();
}

void EngineLink::write_more() {
  asio::async_write(socket_, asio::buffer(outgoing_.front()),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      if (ec) {
                        self->close();
                        return;
                      }
                      self->outgoing_.pop_front();
                      if (!self->outgoing_.empty()) self->write_more();
                    });
}

void EngineLink::read_more() {
  socket_.async_read_some(asio::buffer(read_buffer_), [self = shared_from_this()](
                                                          boost::system::error_code ec,
                                                          std::size_t n) {
    if (ec) {
      self->close();
      return;
    }
    self->decoder_.feed(std::string_view(self->read_buffer_.data(), n));
    for (;;) {
      auto frame = self->decoder_.next();
      if (!frame) {  // the engine never sends a malformed frame; if it did, nothing after is safe
        self->close();
        return;
      }
      if (!*frame) break;
      control::Frame& f = **frame;
      if (f.header.contains("event")) {
        if (self->on_event_) self->on_event_(f.header);
        continue;
      }
      const auto id = f.header.find("id");
      if (id == f.header.end() || !id->is_number_unsigned()) continue;
      const auto it = self->waiting_.find(id->get<std::uint64_t>());
      if (it == self->waiting_.end()) continue;
      Reply reply = std::move(it->second);
      self->waiting_.erase(it);
      if (auto error = control::error_from_response(f.header)) {
        reply(tl::unexpected(*error));
      } else {
        reply(std::move(f));
      }
      if (!self->open_) return;  // a reply handler closed the link
    }
    self->read_more();
  });
}

void EngineLink::fail_all(const Error& error) {
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& [id, reply] : waiting) reply(tl::unexpected(error));
}

void EngineLink::close() {
  if (!open_) return;
  open_ = false;
  boost::system::error_code ignored;
  socket_.close(ignored);
  fail_all(Error{Errc::engine_unavailable, "the engine closed the control connection", {}});
  if (on_closed_) {
    auto handler = std::move(on_closed_);
    handler();
  }
}

}  // namespace backscroll::bridge
