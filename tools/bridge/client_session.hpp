// ClientSession: one WebSocket client of one actor (docs/bridge.md, "Protocol"). It attaches
// through the engine's control socket, then sends, in order: hello; a catch-up (a snapshot, or a
// resume from the client's own cursor) ending with `replayed`; then live output read in place
// from the actor's ring, under the client's flow control (client_flow.hpp). Output goes out as
// binary frames of at most kFrameBytes, never cut inside a UTF-8 character; everything else is
// one JSON text frame. One write at a time: a frame is copied from the ring only when the
// previous one is on its way, so a slow client costs the bridge one frame of memory and the
// actor nothing.
//
// The actor's size travels in the stream too (docs/bridge.md, "The actor's size"): the engine's
// `resized` events say at which cursor a size starts; the client gets `resized` just before the
// first byte written at that size. A client that keeps the actor's size (`follow`) never gets a
// byte at a size it was not told: output the ring's size says was resized without an event yet
// waits for it, and a size it learned too late is repaired with a snapshot.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <nlohmann/json.hpp>

#include "shm/control_frame.hpp"
#include "shm/cursor.hpp"
#include "shm/error.hpp"
#include "shm/ring_layout.hpp"
#include "tools/bridge/actor_feed.hpp"
#include "tools/bridge/client_flow.hpp"

namespace backscroll::bridge {

class Bridge;

// A terminal size, as the engine reports it.
struct TermSize {
  std::uint16_t cols = 0;
  std::uint16_t rows = 0;
  bool operator==(const TermSize&) const = default;
};

// What the client asked for in the WebSocket URL's query.
struct AttachRequest {
  std::string actor;
  bool controller = false;
  bool visible = true;
  std::optional<std::uint16_t> cols, rows;  // a controller's fitted size
  // The client keeps the actor's size (a viewer's page, or a controller that chose to): the
  // bytes it gets are always at the size it was told.
  bool follow = false;
  // With a resume: the actor's size at the client's cursor, as the client has it.
  std::optional<TermSize> have;
  // A resume: the cursor space, session and cursor the client already consumed.
  struct Resume {
    std::uint64_t epoch = 0;
    std::uint64_t session = 0;
    Cursor cursor{0};
  };
  std::optional<Resume> resume;
};

// Close codes (docs/bridge.md).
inline constexpr std::uint16_t kCloseUnauthorized = 4401;
inline constexpr std::uint16_t kCloseRefused = 4409;
inline constexpr std::uint16_t kCloseGone = 4410;

class ClientSession : public std::enable_shared_from_this<ClientSession> {
 public:
  using Socket = boost::beast::websocket::stream<boost::beast::tcp_stream>;
  static constexpr std::size_t kFrameBytes = 64 * 1024;
  // A behind client whose first missed byte is further back than this gets a snapshot, not a
  // resume: a screen is smaller than a megabyte of output to parse.
  static constexpr std::uint64_t kResumeMaxBytes = 1 << 20;
  // Largest message a client may send (input up to 64 KiB of text, as JSON).
  static constexpr std::size_t kMaxClientMessage = 1 << 20;
  // JSON frames waiting for a client that does not read (answers to its pings, errors): past
  // this the client is dropped (1008), so it cannot grow the bridge's memory.
  static constexpr std::size_t kMaxQueuedTexts = 256;
  // How long a follower's output waits for the `resized` event of a resize the ring already
  // shows, before it is caught up with a snapshot instead (an engine without the event).
  static constexpr std::chrono::milliseconds kSizeEventWait{1000};
  // Size changes a client keeps for bytes it has not been sent; past this a snapshot replaces
  // them.
  static constexpr std::size_t kMaxSizeChanges = 1024;

  ClientSession(Bridge& bridge, Socket socket, AttachRequest request);
  // Attaches and starts reading the client's messages.
  void start();
  // From the bridge: an engine event about this session's actor.
  void on_engine_event(const nlohmann::json& event);
  // From the bridge: the engine connection is gone.
  void engine_lost();
  const std::string& actor() const noexcept { return request_.actor; }

 private:
  enum class Phase {
    attaching,    // waiting for the engine's attach answer
    catching_up,  // `snapshot`/`resume` sent; catch-up frames until catch_up_end_, then `replayed`
    live,
    behind,        // frames are not sent; the ring keeps them until a catch-up
    snapshotting,  // behind, a snapshot requested from the engine
    closing,
  };

  void on_attach_answer(Result<control::Frame> answer);
  void refuse(const Error& error);
  void on_attached(const nlohmann::json& header, std::string payload);
  void begin_snapshot(const nlohmann::json& answer, std::string payload);
  // `fresh`: the client's own cursor from its query (it told its size there); else the first byte
  // a behind client missed.
  void begin_resume(Cursor from, bool fresh);
  void request_snapshot();
  void finish_catch_up(Cursor at);
  void check_behind();
  void arm_behind_timer();
  // Before ring bytes from cursor_ go out: sends `resized` for a size that starts at cursor_ and
  // bounds `end` (at the next size change; for a follower, at the last byte the ring confirms
  // was written at a known size). False when pump() must stop here (a `resized` is on its way,
  // or a snapshot was requested).
  bool bound_by_size(Cursor& end);
  // The size after every change the client knows of, its stream's included.
  std::optional<TermSize> newest_known_size() const;
  // The ring's size differs from every size this client knows of: a resize without its event.
  bool unexplained_size() const;
  // The bytes before the next size change end inside a character (a PTY read stops anywhere):
  // the character completes after the change, so the change moves to its first byte. True
  // when it moved.
  bool move_change_before_partial_character(Cursor end);
  void arm_size_timer();
  void on_size_wait_over();
  void set_follow(bool follow);

  void read_next();
  void on_message(std::string_view text);
  void send_json(const nlohmann::json& message);
  void pump();
  // Where the client's stream ends for now: the committed cursor, or the session's end once
  // it is sealed (a restarted actor's next session is not this client's).
  Cursor stream_end() const;
  // The session's seal record once the client has every byte of it.
  std::optional<shm::SessionRecord> ended() const;
  // The next ring frame from cursor_ up to `end`: true when one was written.
  bool write_ring_frame(Cursor end, bool live);
  // One binary frame; `bytes` must stay put until the write completes.
  void write_binary(std::span<const std::byte> bytes);
  void close_with(std::uint16_t code, const std::string& reason);
  void finish();  // the socket is done: detach and leave the feed

  Bridge& bridge_;
  Socket ws_;
  AttachRequest request_;
  std::shared_ptr<ActorFeed> feed_;
  std::uint64_t feed_handle_ = 0;
  Phase phase_ = Phase::attaching;
  std::optional<std::uint64_t> attachment_;
  std::uint64_t session_ = 0;  // the actor's session at hello
  Cursor cursor_{0};           // next byte of the stream to send
  Cursor catch_up_end_{0};
  // The actor's size at cursor_ as the client has it (from the snapshot, its query, `resized`).
  std::optional<TermSize> size_;
  // Size changes at or after cursor_ the client has not been told, oldest first.
  std::deque<std::pair<Cursor, TermSize>> size_changes_;
  // A follower may be sent bytes up to here: the ring's size matched a known size after the
  // committed cursor was this far.
  Cursor size_verified_{0};
  bool snapshot_due_ = false;  // the next catch-up is a snapshot (a follower's view starts over)
  bool size_timer_armed_ = false;
  bool size_wait_over_ = false;  // the timer ran out: an unexplained size gets a snapshot
  std::string snapshot_bytes_;   // the catch-up's snapshot, sent from snapshot_sent_ on
  std::size_t snapshot_sent_ = 0;
  std::optional<ClientFlow> flow_;
  std::deque<std::string> texts_;  // JSON frames waiting; they go before any output frame
  bool hello_sent_ = false;
  std::vector<std::string> before_hello_;  // texts made before `hello` (pongs, events): after it
  std::vector<std::byte> frame_;           // a ring frame being written (copied out of the ring)
  bool writing_ = false;                   // one write (or the close) at a time
  bool close_sent_ = false;
  boost::beast::websocket::close_reason close_reason_;
  bool finished_ = false;
  boost::beast::flat_buffer read_buffer_;
  boost::asio::steady_timer behind_timer_;
  boost::asio::steady_timer size_timer_;
};

}  // namespace backscroll::bridge
