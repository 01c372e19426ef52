#include "tools/bridge/client_session.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "tools/bridge/bridge.hpp"
#include "tools/bridge/json_text.hpp"
#include "tools/bridge/utf8_boundary.hpp"

namespace backscroll::bridge {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string epoch_hex(std::uint64_t epoch) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(epoch));
  return text;
}

void bridge_detach(Bridge& bridge, std::uint64_t attachment) {
  bridge.engine_call("detach", {{"attachment", attachment}}, [](const Result<control::Frame>&) {});
}

}  // namespace

ClientSession::ClientSession(Bridge& bridge, Socket socket, AttachRequest request)
    : bridge_(bridge),
      ws_(std::move(socket)),
      request_(std::move(request)),
      frame_(kFrameBytes),
      behind_timer_(ws_.get_executor()),
      size_timer_(ws_.get_executor()) {}

void ClientSession::start() {
  ws_.read_message_max(kMaxClientMessage);
  bridge_.add_session(shared_from_this());
  read_next();
  // The engine first: it knows whether the actor exists even while its ring cannot be mapped
  // (an engine that is restarting); the ring is mapped once the attach succeeded.
  Json fields = {{"actor", request_.actor},
                 {"role", request_.controller ? "controller" : "viewer"},
                 {"formats", Json::array({"snapshot_v1"})}};
  if (request_.controller && request_.visible && !request_.resume && request_.cols &&
      request_.rows) {
    fields["cols"] = *request_.cols;  // a visible controller claims the size (Natamux)
    fields["rows"] = *request_.rows;
  }
  if (request_.resume) {
    fields["since"] = value(request_.resume->cursor);
    fields["epoch"] = epoch_hex(request_.resume->epoch);
  }
  bridge_.engine_call("attach", std::move(fields),
                      [self = shared_from_this()](Result<control::Frame> answer) {
                        self->on_attach_answer(std::move(answer));
                      });
}

void ClientSession::on_attach_answer(Result<control::Frame> answer) {
  if (phase_ == Phase::closing) {
    // The client left while the engine attached it: that attachment must not outlive it.
    if (answer) bridge_detach(bridge_, answer->header.value("attachment", std::uint64_t{0}));
    return;
  }
  if (!answer) return refuse(answer.error());
  attachment_ = answer->header.value("attachment", std::uint64_t{0});
  auto feed = bridge_.feed(request_.actor);
  if (!feed) return refuse(feed.error());  // deleted in between (no_such_actor), or its engine gone
  feed_ = std::move(*feed);
  const auto meta = feed_->ring().meta();
  session_ = meta ? meta->session : 0;
  if (request_.resume &&
      (request_.resume->epoch != feed_->ring().epoch() || request_.resume->session != session_)) {
    // Another cursor space (an engine restart without persistence) or a newer session: what
    // the client showed is gone; it starts over with a fresh attach.
    return close_with(kCloseGone, "the session or epoch no longer exists");
  }
  feed_handle_ = feed_->subscribe([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->pump();
  });
  on_attached(answer->header, std::move(answer->payload));
}

// Why an attach failed, and how the socket ends: 1011 while the engine cannot be reached (the
// page retries), 4410 for a resume of an actor that is gone, else `error` and 4409.
void ClientSession::refuse(const Error& error) {
  if (error.code == Errc::engine_unavailable || error.code == Errc::stale_segment) {
    return close_with(1011, "the engine is unavailable");
  }
  if (request_.resume && error.code == Errc::no_such_actor) {
    return close_with(kCloseGone, "the actor no longer exists");
  }
  send_json({{"type", "error"}, {"code", to_string(error.code)}, {"message", error.message}});
  close_with(kCloseRefused, "cannot attach");
}

void ClientSession::on_attached(const Json& header, std::string payload) {
  const auto now = Clock::now();
  send_json({{"type", "hello"},
             {"actor", request_.actor},
             {"epoch", epoch_hex(feed_->ring().epoch())},
             {"session", session_},
             {"role", request_.controller ? "controller" : "viewer"},
             {"attachment", *attachment_}});
  if (header.value("mode", "") == "resume") {
    flow_.emplace(request_.resume->cursor, request_.visible, now);
    // The client's size at its cursor: as it says, else (a client that does not track sizes)
    // the actor's now.
    size_ = request_.have.value_or(
        TermSize{header.value<std::uint16_t>("cols", 80), header.value<std::uint16_t>("rows", 24)});
    begin_resume(request_.resume->cursor, /*fresh=*/true);
  } else {
    flow_.emplace(Cursor{header.value("cursor", std::uint64_t{0})}, request_.visible, now);
    begin_snapshot(header, std::move(payload));
  }
}

// snapshot {cols, rows, cursor, format}, the snapshot's bytes, then the ring from its cursor.
void ClientSession::begin_snapshot(const Json& answer, std::string payload) {
  const Cursor at{answer.value("cursor", std::uint64_t{0})};
  Json message = {{"type", "snapshot"},
                  {"cols", answer.value("cols", 80)},
                  {"rows", answer.value("rows", 24)},
                  {"cursor", value(at)},
                  {"format", answer.value("format", "raw_replay")}};
  if (answer.contains("reason")) message["reason"] = answer["reason"];
  send_json(message);
  snapshot_bytes_ = std::move(payload);
  snapshot_sent_ = 0;
  cursor_ = at;
  catch_up_end_ = stream_end();
  // The snapshot is at its own size: changes before its cursor are in it.
  size_ =
      TermSize{answer.value<std::uint16_t>("cols", 80), answer.value<std::uint16_t>("rows", 24)};
  std::erase_if(size_changes_, [at](const auto& change) { return change.first < at; });
  size_verified_ = at;
  snapshot_due_ = false;
  size_wait_over_ = false;
  phase_ = Phase::catching_up;
  pump();
}

// resume {cursor}, then the ring from it.
void ClientSession::begin_resume(Cursor from, bool fresh) {
  if (fresh) {
    // The client told its size at `from`: changes before it are its own business.
    std::erase_if(size_changes_, [from](const auto& change) { return change.first < from; });
    size_verified_ = from;
  }
  // A follower whose view must start over, or whose size the ring contradicts with no change
  // known to explain it (a resize while it was away, before this client subscribed): a snapshot.
  if (snapshot_due_ || (request_.follow && unexplained_size())) {
    request_snapshot();
    return;
  }
  send_json({{"type", "resume"}, {"cursor", value(from)}});
  snapshot_bytes_.clear();
  snapshot_sent_ = 0;
  cursor_ = from;
  catch_up_end_ = stream_end();
  phase_ = Phase::catching_up;
  pump();
}

void ClientSession::request_snapshot() {
  phase_ = Phase::snapshotting;
  bridge_.engine_call(
      "snapshot", {{"actor", request_.actor}, {"formats", Json::array({"snapshot_v1"})}},
      [self = shared_from_this()](Result<control::Frame> answer) {
        if (self->phase_ != Phase::snapshotting) return;
        if (!answer) {
          self->send_json({{"type", "error"},
                           {"code", to_string(answer.error().code)},
                           {"message", answer.error().message}});
          self->close_with(answer.error().code == Errc::no_such_actor ? kCloseGone : 1011,
                           "snapshot failed");
          return;
        }
        self->begin_snapshot(answer->header, std::move(answer->payload));
      });
}

void ClientSession::finish_catch_up(Cursor at) {
  send_json({{"type", "replayed"}, {"cursor", value(at)}});
  flow_->caught_up(at, Clock::now());
  snapshot_bytes_.clear();
  phase_ = Phase::live;
}

void ClientSession::arm_behind_timer() {
  behind_timer_.expires_after(std::chrono::milliseconds(100));
  behind_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->check_behind();
  });
}

void ClientSession::check_behind() {
  if (phase_ != Phase::behind) return;
  const auto now = Clock::now();
  const auto meta = feed_->ring().meta();
  const std::uint64_t screen = meta ? std::uint64_t{meta->cols} * meta->rows / 8 : 240;
  switch (flow_->catch_up(now, feed_->quiet(now, std::max<std::uint64_t>(screen, 256)))) {
    case ClientFlow::CatchUp::wait: arm_behind_timer(); return;
    case ClientFlow::CatchUp::resume: {
      const Cursor from = *flow_->behind();
      const auto& ring = feed_->ring();
      if (from >= ring.oldest() && ring.committed() - from <= kResumeMaxBytes) {
        begin_resume(from, /*fresh=*/false);
        return;
      }
      request_snapshot();
      return;
    }
    case ClientFlow::CatchUp::snapshot: request_snapshot(); return;
  }
}

void ClientSession::on_engine_event(const Json& event) {
  if (phase_ == Phase::closing) return;
  const std::string kind = string_field(event, "event").value_or("");
  if (kind == "controller") {
    Json message = {{"type", "controller"},
                    {"attachment", event.value("attachment", std::uint64_t{0})},
                    {"replaced", event.value("replaced", std::uint64_t{0})}};
    // The engine's size ownership adds the size the actor has now and why control moved.
    for (const char* field : {"cols", "rows", "reason"}) {
      if (event.contains(field)) message[field] = event[field];
    }
    send_json(message);
  } else if (kind == "resized") {
    const auto cols = uint_field(event, "cols"), rows = uint_field(event, "rows");
    const auto at = uint_field(event, "cursor");
    if (!cols || !rows || !at || *cols < 1 || *cols > 1000 || *rows < 1 || *rows > 1000) return;
    if (size_changes_.size() >= kMaxSizeChanges) {
      // Far behind while the actor kept resizing: a snapshot replaces them all.
      size_changes_.clear();
      snapshot_due_ = true;
    }
    size_changes_.emplace_back(Cursor{*at}, TermSize{static_cast<std::uint16_t>(*cols),
                                                     static_cast<std::uint16_t>(*rows)});
    pump();  // a follower waiting for this event goes on
  }
}

// ---- the actor's size in the stream ----

std::optional<TermSize> ClientSession::newest_known_size() const {
  if (!size_changes_.empty()) return size_changes_.back().second;
  return size_;
}

bool ClientSession::unexplained_size() const {
  const auto meta = feed_ ? feed_->ring().meta() : std::nullopt;
  const auto known = newest_known_size();
  if (!meta || !known) return false;
  return TermSize{static_cast<std::uint16_t>(meta->cols), static_cast<std::uint16_t>(meta->rows)} !=
         *known;
}

bool ClientSession::bound_by_size(Cursor& end) {
  const Cursor committed_end = end;  // loaded before the ring's size below (stream_end())
  while (!size_changes_.empty() && size_changes_.front().first <= cursor_) {
    const auto [at, size] = size_changes_.front();
    size_changes_.pop_front();
    if (size_ == size) continue;  // the size it already has: nothing changed
    if (at < cursor_ && request_.follow) {
      // The event came after bytes written at the new size went out at the old one (the
      // actor went back to a size the ring check knew, A then B then A): start over.
      request_snapshot();
      return false;
    }
    size_ = size;
    // Every byte before cursor_ was written at the old size, every one from it at this one
    // (a late change, for a client that does not follow, from here on as well as it can).
    send_json({{"type", "resized"},
               {"cols", size.cols},
               {"rows", size.rows},
               {"cursor", value(cursor_)}});
    return false;  // send_json started writing it; its completion pumps again
  }
  if (!size_changes_.empty()) end = min(end, size_changes_.front().first);
  if (request_.follow) {
    // The engine publishes a new size in the ring before any byte written at it is committed.
    // committed_end was loaded before this read of the size: if the size is one we know, no
    // unknown resize happened before committed_end, and the bytes up to it are at known sizes.
    // If not, the unknown resize is after size_verified_: wait there for its event.
    if (unexplained_size()) {
      if (size_wait_over_) {
        // No event came (an engine that does not send `resized`): the snapshot is exact for
        // its cursor and size.
        request_snapshot();
        return false;
      }
      end = min(end, max(size_verified_, cursor_));
      arm_size_timer();
    } else {
      size_verified_ = max(size_verified_, committed_end);
      size_wait_over_ = false;
      if (size_timer_armed_) {
        size_timer_armed_ = false;
        size_timer_.cancel();
      }
    }
  }
  return true;
}

bool ClientSession::move_change_before_partial_character(Cursor end) {
  if (size_changes_.empty() || size_changes_.front().first != end || cursor_ >= end) return false;
  size_changes_.front().first = cursor_;
  return true;
}

void ClientSession::arm_size_timer() {
  if (size_timer_armed_) return;
  size_timer_armed_ = true;
  size_timer_.expires_after(kSizeEventWait);
  size_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (ec) return;
    if (auto self = weak.lock()) {
      self->size_timer_armed_ = false;
      self->on_size_wait_over();
    }
  });
}

void ClientSession::on_size_wait_over() {
  // Decided in pump() (bound_by_size), never while a catch-up's snapshot bytes are on their way.
  size_wait_over_ = true;
  pump();
}

void ClientSession::set_follow(bool follow) {
  if (follow == request_.follow) return;
  request_.follow = follow;
  if (!follow) return;
  // What the client shows was drawn at its own size: its view starts over at the actor's.
  size_verified_ = cursor_;
  snapshot_due_ = true;
  pump();  // live: the snapshot is requested once the write in flight (if any) is done
}

void ClientSession::engine_lost() {
  attachment_.reset();  // its attachments ended with the connection
  close_with(1011, "the engine is gone");
}

// ---- reading the client ----

void ClientSession::read_next() {
  // Beast's idle timeout (set before the accept, http_session.cpp) drops a silent client.
  ws_.async_read(read_buffer_,
                 [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                   if (ec) {
                     self->finish();
                     return;
                   }
                   if (self->ws_.got_text()) {
                     const std::string text = beast::buffers_to_string(self->read_buffer_.data());
                     self->on_message(text);
                   }  // binary frames from a client mean nothing here: ignored
                   self->read_buffer_.consume(self->read_buffer_.size());
                   if (self->phase_ != Phase::closing) self->read_next();
                 });
}

void ClientSession::on_message(std::string_view text) {
  const Json message = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string type = string_field(message, "type").value_or("");
  const auto reject = [this](std::string code, std::string why) {
    send_json({{"type", "error"}, {"code", std::move(code)}, {"message", std::move(why)}});
  };
  const auto report = [weak = weak_from_this()](Result<control::Frame> answer) {
    auto self = weak.lock();
    if (self && !answer) {
      self->send_json({{"type", "error"},
                       {"code", to_string(answer.error().code)},
                       {"message", answer.error().message}});
    }
  };
  const auto now = Clock::now();
  if (type == "ping") {
    send_json({{"type", "pong"}});
  } else if (type == "ack") {
    const auto cursor = uint_field(message, "cursor");
    if (!cursor) return reject("bad_request", "ack needs a cursor");
    if (!flow_) return;  // before the first catch-up there is nothing to acknowledge
    if (Cursor{*cursor} > flow_->sent_cursor()) {
      // A client acknowledging bytes it never got has lost track of the stream (or lies):
      // trusting it would let it hold the flow control open.
      return reject("bad_request", "ack of cursor " + std::to_string(*cursor) +
                                       " beyond what was sent (up to " +
                                       std::to_string(value(flow_->sent_cursor())) + ")");
    }
    flow_->ack(Cursor{*cursor}, now);
    if (phase_ == Phase::behind) check_behind();
    pump();
  } else if (type == "visible") {
    const auto visible = bool_field(message, "visible");
    if (!visible) return reject("bad_request", "visible needs a boolean 'visible'");
    request_.visible = *visible;
    if (flow_) {
      flow_->set_visible(*visible, now);
      if (phase_ == Phase::behind) check_behind();
    }
  } else if (type == "input") {
    auto data = string_field(message, "data");
    if (!data) return reject("bad_request", "input needs a string 'data'");
    const bool paste = message.contains("paste");
    const auto is_paste = bool_field(message, "paste");
    if (paste && !is_paste) return reject("bad_request", "input's 'paste' is a boolean");
    if (!request_.controller)
      return reject("read_only", "a viewer cannot type; attach as controller");
    Json fields = {{"actor", request_.actor}};
    if (is_paste.value_or(false))
      fields["paste"] = true;  // the engine writes a trailing Enter apart
    bridge_.engine_call("input", std::move(fields), *data, report);
  } else if (type == "take_control") {
    // A displaced controller takes the actor's size back (the engine's size ownership).
    if (!request_.controller || !attachment_)
      return reject("bad_request", "only a controller takes control");
    Json fields = {{"attachment", *attachment_}};
    if (message.contains("cols") || message.contains("rows")) {
      const auto cols = int_field(message, "cols"), rows = int_field(message, "rows");
      if (!cols || !rows || *cols < 1 || *cols > 1000 || *rows < 1 || *rows > 1000) {
        return reject("bad_request", "take_control's cols and rows are both in 1..1000, or absent");
      }
      fields["cols"] = *cols;
      fields["rows"] = *rows;
    }
    bridge_.engine_call("take_control", std::move(fields), report);
  } else if (type == "follow") {
    const auto follow = bool_field(message, "follow");
    if (!follow) return reject("bad_request", "follow needs a boolean 'follow'");
    set_follow(*follow);
  } else if (type == "resize") {
    const auto cols = int_field(message, "cols"), rows = int_field(message, "rows");
    if (!cols || !rows || *cols < 1 || *cols > 1000 || *rows < 1 || *rows > 1000) {
      return reject("bad_request", "resize needs cols and rows in 1..1000");
    }
    if (!request_.controller || !attachment_)
      return reject("bad_request", "only a controller resizes");
    bridge_.engine_call(
        "resize",
        {{"actor", request_.actor}, {"cols", *cols}, {"rows", *rows}, {"attachment", *attachment_}},
        report);
  } else {
    reject("bad_request", type.empty() ? "a message is a JSON object with a string 'type'"
                                       : "unknown message type '" + type.substr(0, 64) + "'");
  }
}

// ---- writing to the client ----

void ClientSession::send_json(const Json& message) {
  if (phase_ == Phase::closing) return;  // nothing after the close
  const std::string type = string_field(message, "type").value_or("");
  std::string text = to_text(message);
  if (!hello_sent_ && type != "hello" && type != "error") {
    before_hello_.push_back(std::move(text));  // `hello` is always first
    return;
  }
  if (type == "hello") {
    hello_sent_ = true;
    texts_.push_back(std::move(text));
    for (auto& early : before_hello_) texts_.push_back(std::move(early));
    before_hello_.clear();
  } else {
    texts_.push_back(std::move(text));
  }
  if (texts_.size() > kMaxQueuedTexts) {  // it sends but does not read
    texts_.clear();
    close_with(1008, "not reading");
    return;
  }
  pump();
}

void ClientSession::pump() {
  if (writing_ || finished_) return;
  if (!texts_.empty()) {
    writing_ = true;
    ws_.text(true);
    ws_.async_write(asio::buffer(texts_.front()),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      self->writing_ = false;
                      if (ec) return self->finish();
                      self->texts_.pop_front();
                      self->pump();
                    });
    return;
  }
  if (phase_ == Phase::closing) {
    if (!close_sent_) {
      close_sent_ = true;
      writing_ = true;
      ws_.async_close(close_reason_, [self = shared_from_this()](boost::system::error_code) {
        self->writing_ = false;
        self->finish();
      });
    }
    return;
  }
  const auto& ring = feed_ ? &feed_->ring() : nullptr;
  switch (phase_) {
    case Phase::catching_up: {
      if (snapshot_sent_ < snapshot_bytes_.size()) {
        // Written from the snapshot itself: it stays put until the catch-up ends, which only
        // pump() decides, after this write completed. Its characters are whole; a frame still
        // ends on one (a snapshot holds at least one character per 64 KiB).
        const auto rest = std::as_bytes(std::span(snapshot_bytes_)).subspan(snapshot_sent_);
        const auto frame = rest.first(std::min(kFrameBytes, rest.size()));
        const std::size_t whole = utf8_complete_prefix(frame);
        const auto out = frame.first(whole > 0 ? whole : frame.size());
        snapshot_sent_ += out.size();
        write_binary(out);
        return;
      }
      if (cursor_ < catch_up_end_) {
        if (cursor_ < ring->oldest()) {  // lapped while catching up: behind, from the start
          phase_ = Phase::behind;
          flow_->fall_behind(cursor_, Clock::now());
          arm_behind_timer();
          return;
        }
        Cursor end = catch_up_end_;
        if (!bound_by_size(end)) return;
        if (cursor_ < end) {
          if (write_ring_frame(end, /*live=*/false)) return;
          if (phase_ != Phase::catching_up) return;  // the ring lapped it: behind
          if (move_change_before_partial_character(end)) return pump();
        }
        // Otherwise held (a character's last bytes, a size's event): the rest comes live.
      }
      finish_catch_up(cursor_);
      pump();
      return;
    }
    case Phase::live: {
      if (snapshot_due_) {
        request_snapshot();
        return;
      }
      const Cursor available = stream_end();
      Cursor end = available;
      if (!bound_by_size(end)) return;
      if (cursor_ < end) {
        if (write_ring_frame(end, /*live=*/true)) return;
        if (phase_ != Phase::live) return;  // fell behind
        if (move_change_before_partial_character(end)) return pump();
      }
      if (end < available) return;  // held until a size's event (or its timer) pumps again
      if (const auto record = ended()) {
        send_json({{"type", "exit"},
                   {"session", session_},
                   {"cursor", record->end},
                   {"exit_code", record->exit_code},
                   {"term_signal", record->term_signal}});
        close_with(1000, "exit");
      } else if (feed_->closed()) {
        // Deleted without a sealed end this client reached (or its engine went away).
        close_with(kCloseGone, "the actor was deleted");
      }
      return;
    }
    case Phase::attaching:
    case Phase::behind:
    case Phase::snapshotting:
    case Phase::closing: return;
  }
}

Cursor ClientSession::stream_end() const {
  const auto& ring = feed_->ring();
  const Cursor committed = ring.committed();  // before the record: a seal precedes any later byte
  const auto record = ring.session(session_);
  if (record && (record->flags & shm::kSessionSealed)) return min(committed, Cursor{record->end});
  return committed;
}

std::optional<shm::SessionRecord> ClientSession::ended() const {
  const auto record = feed_->ring().session(session_);
  if (record && (record->flags & shm::kSessionSealed) && Cursor{record->end} <= cursor_)
    return record;
  return std::nullopt;
}

bool ClientSession::write_ring_frame(Cursor end, bool live) {
  const auto& ring = feed_->ring();
  const std::size_t want =
      static_cast<std::size_t>(std::min<std::uint64_t>(kFrameBytes, end - cursor_));
  const auto copied = ring.copy(cursor_, std::span(frame_.data(), want));
  const auto now = Clock::now();
  if (!copied) {  // overwritten before it was read: the client is behind from here
    phase_ = Phase::behind;
    flow_->fall_behind(cursor_, now);
    arm_behind_timer();
    return false;
  }
  std::size_t n = *copied - cursor_;
  const std::size_t whole = utf8_complete_prefix(std::span(frame_.data(), n));
  if (whole < n) {
    // The last character is incomplete. Its other bytes are still to come, unless the session
    // ended right there: then nothing will complete it, and it goes out as it is.
    const auto record = ring.session(session_);
    const bool last =
        record && (record->flags & shm::kSessionSealed) && Cursor{record->end} <= *copied;
    if (!last) n = whole;
  }
  if (n == 0) return false;
  if (live) {
    if (!flow_->admit(cursor_, n, now)) {
      phase_ = Phase::behind;
      arm_behind_timer();
      return false;
    }
    flow_->sent(cursor_ + n, now);
  }
  cursor_ = cursor_ + n;
  write_binary(std::span<const std::byte>(frame_.data(), n));
  return true;
}

void ClientSession::write_binary(std::span<const std::byte> bytes) {
  writing_ = true;
  ws_.binary(true);
  ws_.async_write(asio::buffer(bytes.data(), bytes.size()),
                  [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                    self->writing_ = false;
                    if (ec) return self->finish();
                    self->pump();
                  });
}

void ClientSession::close_with(std::uint16_t code, const std::string& reason) {
  if (phase_ == Phase::closing || finished_) return;
  phase_ = Phase::closing;
  behind_timer_.cancel();
  size_timer_.cancel();
  close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code), reason);
  pump();  // the text frames already queued (an `error`, an `exit`) go first
}

void ClientSession::finish() {
  if (finished_) return;
  finished_ = true;
  phase_ = Phase::closing;
  behind_timer_.cancel();
  size_timer_.cancel();
  if (feed_) feed_->unsubscribe(feed_handle_);
  if (attachment_) bridge_detach(bridge_, *attachment_);
  attachment_.reset();
  boost::system::error_code ignored;
  beast::get_lowest_layer(ws_).socket().close(ignored);
  bridge_.remove_session(this);
}

}  // namespace backscroll::bridge
