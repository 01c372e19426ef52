// Mirror: one actor's terminal as the mirror thread keeps it (docs/snapshot.md). The raw stream
// goes through VtScanner first (clean boundaries, the modes and title libvterm 0.1.4 does not
// expose, output a snapshot cannot reproduce) and then, up to the scanner's feed limit, into
// MirrorScreen (libvterm); where the two stand at a clean boundary, bytes the grid's fast path
// takes go to it first and the scanner only steps over them (docs/fast-path.md, "Before the
// scanner"). Where libvterm 0.1.4 departs from xterm on a sequence the scanner
// flags (SM/RM with several parameters, ?47, DECSTR, RIS on the alternate screen, SCOSC/SCORC),
// the mirror feeds libvterm an equivalent it handles, so screen and modes describe one terminal.
// Invariant: libvterm has parsed exactly the bytes [start, parsed()), and parsed() is the
// scanner's clean position (ground state, no UTF-8 character pending) except after a forced
// feed of an oversized sequence or a settle(). Snapshots are taken only when parsed() is clean,
// and are tagged with it: a mirror that is fed whole sequences reaches every byte it is fed.
// Single-threaded.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/term/mirror_screen.hpp"
#include "engine/term/plain_scroll_scan.hpp"
#include "engine/term/snapshot_writer.hpp"
#include "engine/term/vt_scanner.hpp"
#include "shm/cursor.hpp"

namespace backscroll::term {

struct MirrorSnapshot {
  Snapshot snapshot;  // bytes, or a fallback reason (raw_replay)
  Cursor cursor;      // the raw cursor the snapshot represents (valid without a fallback)
};

// How far the mirror looks ahead and when it jumps (docs/plain-scroll-skip.md); tests shrink
// them to see jumps in short streams.
struct LookAheadOptions {
  std::uint64_t min_skip_bytes = 64 * 1024;  // a shorter jump is not worth its replacement
  std::uint64_t target_spacing = 16 * 1024;  // PlainScrollScan: one jump target per this
};

class Mirror {
 public:
  // A fresh terminal of `cols` x `rows` whose stream starts at `start`.
  Mirror(Cursor start, std::uint16_t cols, std::uint16_t rows, ScrollbackLimits limits = {},
         LookAheadOptions look_ahead = {});

  // The next bytes of the stream, [position(), position() + bytes.size()).
  void feed(std::string_view bytes);
  void feed(std::span<const std::byte> bytes) {
    feed(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  // The PTY was resized after the bytes fed so far. Text is laid out at the old size first; an
  // unfinished sequence stays held unless controls inside it already acted (mirror.cpp).
  void resize(std::uint16_t cols, std::uint16_t rows);
  // Hands every byte fed so far to libvterm, a held text run or an incomplete sequence too.
  void settle();
  // The terminal's plain text (plain_text.hpp) once every byte fed is parsed: for an ended
  // stream (a deleted actor), since it settles the mirror.
  MirrorSnapshot final_text();
  // A fresh terminal whose stream starts at `at` (a clear, or a new session).
  void reset(Cursor at);
  // The same screen without its history (the engine's clear that keeps the screen), from the
  // bytes parsed so far on.
  void drop_history() { screen_.erase_history(); }
  // The same terminal, its stream continuing at `at`: a mirror rebuilt from a keyframe and the
  // bytes after it takes over an actor whose stream goes on from there (a cold restore). Only
  // when settled at a clean position (false, unchanged, otherwise).
  bool restart_at(Cursor at);
  // The history's bounds from now on (lowered: the oldest lines go at once). The look ahead
  // jumps over what scrolls out of the current bound.
  void set_history_limits(ScrollbackLimits limits);

  // Look ahead (docs/plain-scroll-skip.md). The mirror thread hands over the bytes after the
  // ones fed, from look_ahead_from() on (nullopt: none wanted now; the scan stopped at a byte
  // that is not plain text), without feeding them; then skip_ahead() replaces a stretch of
  // scrolling text that can never be seen again by a short equivalent and moves position()
  // past it. Exact: screen, history, pen, cursor and last glyph are what feeding every byte
  // gives (tests/engine/plain_scroll_skip_test.cpp).
  std::optional<Cursor> look_ahead_from();
  void look_ahead(std::string_view bytes) { scan_.scan(bytes); }
  void look_ahead(std::span<const std::byte> bytes) {
    look_ahead(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  // The bytes handed over may have been torn (overwritten in the ring): scan them again.
  void drop_look_ahead() noexcept { scan_stale_ = true; }
  // True when it jumped. `at_least`: a jump shorter than this is not taken (besides
  // LookAheadOptions::min_skip_bytes).
  bool skip_ahead(std::uint64_t at_least = 0);
  // Whether skip_ahead(at_least) would jump now.
  bool can_skip(std::uint64_t at_least = 0) { return jump_target(at_least) != nullptr; }
  // Whether the mirror thread may stop feeding this mirror while the stream keeps coming (a
  // flood): history_ready(history_lines), the bytes after are plain so far and a jump may
  // start where the mirror stands (jump_region), so a later jump passes them. Whether it jumped
  // before does not matter: a mirror that keeps up with a flood is never far enough behind for a
  // jump unless it stops feeding.
  bool may_coast(std::size_t history_lines) const noexcept;
  // After a jump the rows above the landing line and the history before it are not the
  // stream's, until libvterm has pushed them all out: the screen is exact once it pushed
  // rows - 1 lines, and the history lines pushed after that are (snapshots and final_text()
  // draw only those). The look ahead jumps only where the stream goes on long enough for the
  // whole history to be exact again before the bytes it scanned end.
  bool screen_exact() const noexcept;
  std::size_t exact_history_lines() const noexcept;
  // The screen is exact and so are the newest `lines` history lines (or all it holds): what
  // the mirror thread waits for after a jump before it answers a snapshot.
  bool history_ready(std::size_t lines) const noexcept;
  std::uint64_t skipped_bytes() const noexcept { return skipped_bytes_; }
  std::uint64_t skips() const noexcept { return skips_; }

  // End of the bytes fed.
  Cursor position() const noexcept { return scanner_.position(); }
  // End of the bytes libvterm has parsed: at most position(); behind it by a held sequence.
  Cursor parsed() const noexcept { return parsed_; }
  // A snapshot of what has been parsed; never waits for more bytes.
  MirrorSnapshot snapshot(const SnapshotOptions& options = {}) const;

  const VtScanner& scanner() const noexcept { return scanner_; }
  const MirrorScreen& screen() const noexcept { return screen_; }
  // Who hears of each title set, bell and shell mark the mirror reads (VtEvents), across
  // resets; nullptr: nobody.
  void set_events(VtEvents* events) noexcept {
    events_ = events;
    scanner_.set_events(events);
  }
  // MirrorScreen::set_tap: what reaches libvterm, reported (tests compare a second libvterm).
  void set_tap(VtermTap* tap) { screen_.set_tap(tap); }
  // MirrorScreen::set_fast_path: off, libvterm parses every byte (tests compare the two).
  void set_fast_path(bool on) { screen_.set_fast_path(on); }

 private:
  // Where skip_ahead(at_least) would land, or nullptr.
  const PlainScrollScan::Target* jump_target(std::uint64_t at_least);
  // The scroll region a jump from parsed_ would scroll (the cursor is in it): `height` rows, 0
  // where no jump may start now; whether what leaves its top enters the history (the main
  // screen's region from the top row) or is dropped (the alternate screen, a region below the
  // top row).
  struct JumpRegion {
    int height = 0;
    bool pushes_history = false;
  };
  JumpRegion jump_region() const;
  // The prefix of `bytes` the fast path takes where it may start (MirrorScreen::feed_fast_only),
  // the scanner moved past it; returns its length.
  std::size_t feed_fast(std::string_view bytes);
  // `bytes` through the scanner, then libvterm (MirrorScreen::feed) up to the feed limit.
  void feed_scanned(std::string_view bytes);
  void feed_to(Cursor end);
  // Feeds libvterm up to `end` (at most position()) and drops what it parsed from unfed_.
  void settle_to(Cursor end);
  void skip_to(Cursor end);
  void synthesize(std::string_view bytes);
  std::string_view unfed(Cursor begin, Cursor end) const;
  void apply_marks();

  VtScanner scanner_;
  VtEvents* events_ = nullptr;  // handed to each new scanner_
  MirrorScreen screen_;
  // Bytes [parsed_, position()) the scanner has seen and libvterm has not, starting at
  // unfed_base_ (<= parsed_; the prefix up to parsed_ is dropped after each feed).
  std::string unfed_;
  Cursor unfed_base_;
  MirrorScreen::FastRun fast_run_;  // feed_fast()'s, kept for its capacity
  Cursor parsed_;
  bool parsed_clean_ = true;  // parsed_ is a clean position (see the invariant)
  Cursor resized_at_{0};      // where the latest resize came in the stream
  // The start of an unfinished sequence a resize fed to libvterm (controls inside), from
  // cut_sequence_at_: a mode sequence among them is completed per mode when it ends.
  std::string cut_sequence_;
  Cursor cut_sequence_at_{0};
  // Look ahead: the scan runs from a clean point at or after parsed_ (scan_stale_: restart it).
  PlainScrollScan scan_;
  bool scan_stale_ = true;
  LookAheadOptions look_ahead_options_;
  std::size_t history_lines_;  // the history's line limit
  // The latest jump, until the screen and the history are exact again. What it left behind
  // (the rows of its region above the landing line; where the region pushes into the history,
  // the history before them too) goes as rows leave the region's top, pushed or dropped
  // (JumpRegion). `scrolled`: that count (screen_.pushed_lines() or screen_.dropped_rows())
  // right after the jump's equivalent. The window ends within the scanned run (a target has
  // its LFs after it), and the mirror thread never scans past its next event: no resize or
  // reset falls inside a window, so nothing but the run's own LFs moves the count.
  struct Landing {
    JumpRegion region;
    std::uint64_t scrolled;
  };
  std::optional<Landing> landing_;
  // Rows that left the top of a region like the landing's (Landing::scrolled's count).
  std::uint64_t rows_scrolled_off(const JumpRegion& region) const noexcept;
  std::uint64_t skipped_bytes_ = 0;
  std::uint64_t skips_ = 0;
  std::uint16_t cols_;  // the PTY's size (the screen may be clamped)
  std::uint16_t rows_;
};

// The SM/RM/DECSET/DECRST `sequence` (ESC [ [?] p1 ; p2 ... h|l, possibly with C0 controls inside)
// as one sequence per parameter, in order, with the controls first (unless !with_controls);
// ?47 becomes ?1047. Empty if
// `sequence` is not such a sequence.
std::string split_mode_sequence(std::string_view sequence, bool with_controls = true);

}  // namespace backscroll::term
