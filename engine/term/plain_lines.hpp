// PlainLines: a raw terminal stream as plain text lines, each with the cursors of the raw bytes
// it came from (docs/recorder.md, "Search"). Escape sequences (CSI, OSC, DCS, SOS, PM, APC and
// two-byte ESC sequences) and control characters are dropped; what a terminal does within one
// line is kept: a CR goes back to column 0 and later text overwrites (a progress bar's last
// state), a BS goes back one character, EL (CSI K) erases to the end of the line (0), to its
// start (1) or all of it (2); overwrites count characters, not columns (no width table: a
// wide character is one). A line ends at LF; one longer than kMaxLineBytes is cut into
// pieces of that size. Cursor moves between lines are not followed: a full-screen program's
// text comes out in the order it was written. Any split of the stream into feed() calls gives
// the same lines. Text is UTF-8 as written (invalid bytes pass through). Single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shm/cursor.hpp"

namespace backscroll::term {

struct PlainLine {
  Cursor begin;            // the first raw byte of the line
  Cursor end;              // just past its LF (or where it was cut)
  std::size_t offset = 0;  // of its text in PlainLines::text()
  std::size_t length = 0;  // of its text (without the '\n' that follows it there)
};

class PlainLines {
 public:
  static constexpr std::size_t kMaxLineBytes = 64 * 1024;

  // The stream's next byte is at `start`.
  explicit PlainLines(Cursor start);

  // The next raw bytes; completed lines are appended to lines() and text().
  void feed(std::string_view bytes);
  // The stream ends here: a line with text (or any raw byte) so far is completed.
  void finish();

  // Completed lines since the last clear(), in order, and their text, each followed by '\n'
  // (text() ends with the unfinished line's text so far: no line refers to it).
  const std::vector<PlainLine>& lines() const noexcept { return lines_; }
  std::string_view text() const noexcept { return std::string_view(text_).substr(0, line_at_); }
  std::string_view text_of(const PlainLine& line) const noexcept {
    return std::string_view(text_).substr(line.offset, line.length);
  }
  // The unfinished line's text so far (a prompt that waits without a newline).
  std::string_view unfinished() const noexcept { return std::string_view(text_).substr(line_at_); }
  // Forgets the completed lines (the unfinished one goes on).
  void clear() noexcept;
  // The cursor of the next byte to feed.
  Cursor position() const noexcept { return position_; }

 private:
  enum class State : std::uint8_t { ground, escape, csi, string, string_escape };
  void printable(char byte);
  void end_line(Cursor end);
  void erase_in_line(int mode);
  static std::size_t text_run_end(std::string_view bytes, std::size_t from, std::size_t to);

  State state_ = State::ground;
  Cursor position_;
  Cursor line_begin_;
  // text_ holds the completed lines, then the unfinished line's text from line_at_ on (each
  // byte is copied once); column_ is where in it the next character goes.
  std::size_t line_at_ = 0;
  std::size_t column_ = 0;
  int csi_param_ = -1;  // the first parameter of the CSI being read (-1: none)
  bool csi_first_done_ = false;
  std::vector<PlainLine> lines_;
  std::string text_;

  std::size_t line_size() const noexcept { return text_.size() - line_at_; }
};

}  // namespace backscroll::term
