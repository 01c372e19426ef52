#include "engine/term/plain_lines.hpp"

#include <algorithm>
#include <cstring>

namespace backscroll::term {
namespace {

bool continuation(char byte) noexcept { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

// Bytes of the UTF-8 character whose lead byte is `byte` (1 for anything that is not a lead).
std::size_t char_length(char byte) noexcept {
  const auto b = static_cast<unsigned char>(byte);
  if (b >= 0xF0 && b < 0xF8) return 4;
  if (b >= 0xE0) return b < 0xF0 ? 3 : 1;
  if (b >= 0xC0) return 2;
  return 1;
}

}  // namespace

PlainLines::PlainLines(Cursor start) : position_(start), line_begin_(start) {}

void PlainLines::clear() noexcept {
  lines_.clear();
  text_.erase(0, line_at_);  // the unfinished line stays
  line_at_ = 0;
}

void PlainLines::end_line(Cursor end) {
  lines_.push_back({line_begin_, end, line_at_, line_size()});
  text_ += '\n';
  line_at_ = text_.size();
  column_ = 0;
  line_begin_ = end;
}

void PlainLines::printable(char byte) {
  const std::size_t at = line_at_ + column_;
  if (column_ == line_size()) {
    text_ += byte;
  } else if (continuation(byte)) {
    text_.insert(text_.begin() + static_cast<std::ptrdiff_t>(at), byte);
  } else {
    // Overwrites the character at the column (all of its bytes).
    std::size_t old = char_length(text_[at]);
    while (old > 1 && column_ + old > line_size()) --old;
    text_.replace(at, old, 1, byte);
  }
  ++column_;
  if (line_size() >= kMaxLineBytes && column_ == line_size()) end_line(position_ + 1);
}

void PlainLines::erase_in_line(int mode) {
  const auto line = text_.begin() + static_cast<std::ptrdiff_t>(line_at_);
  switch (mode) {
    case 1: std::fill(line, line + static_cast<std::ptrdiff_t>(column_), ' '); break;
    case 2:
      text_.resize(line_at_);
      text_.append(column_, ' ');
      break;
    default: text_.resize(line_at_ + column_); break;
  }
}

// The first byte of bytes[from, to) below 0x20 or equal to 0x7F (a control, or ESC), or `to`:
// eight bytes at a time (bytes >= 0x80, UTF-8, are text).
std::size_t PlainLines::text_run_end(std::string_view bytes, std::size_t from, std::size_t to) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  std::size_t i = from;
  for (; i + 8 <= to; i += 8) {
    std::uint64_t x;
    std::memcpy(&x, bytes.data() + i, 8);
    const std::uint64_t below_space = (x - kOnes * 0x20) & ~x & kHigh;
    const std::uint64_t del = x ^ (kOnes * 0x7F);
    const std::uint64_t is_del = (del - kOnes) & ~del & kHigh;
    if (below_space | is_del) break;
  }
  for (; i < to; ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b < 0x20 || b == 0x7F) break;
  }
  return i;
}

void PlainLines::feed(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    if (state_ == State::ground && column_ == line_size()) {
      // The common case: a run of text appended at the end of the line.
      const std::size_t room = kMaxLineBytes - std::min(kMaxLineBytes - 1, line_size());
      const std::size_t run = text_run_end(bytes, i, std::min(bytes.size(), i + room - 1));
      if (run > i) {
        text_.append(bytes.data() + i, run - i);
        column_ = line_size();
        position_ = position_ + (run - i);
        i = run;
        continue;
      }
    }
    const char byte = bytes[i++];
    const auto b = static_cast<unsigned char>(byte);
    switch (state_) {
      case State::ground:
        if (b == '\n') {
          end_line(position_ + 1);
        } else if (b == '\r') {
          column_ = 0;
        } else if (b == '\b') {
          while (column_ > 0 && continuation(text_[line_at_ + --column_])) {
          }
        } else if (b == 0x1B) {
          state_ = State::escape;
        } else if (b == '\t' || (b >= 0x20 && b != 0x7F)) {
          printable(byte);
        }
        break;
      case State::escape:
        if (b == '[') {
          state_ = State::csi;
          csi_param_ = -1;
          csi_first_done_ = false;
        } else if (b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_') {
          state_ = State::string;
        } else if (b >= 0x20 && b <= 0x2F) {
          // an intermediate: the final byte follows
        } else {
          state_ = State::ground;  // a final byte, or a control that cancels the sequence
        }
        break;
      case State::csi:
        if (b >= '0' && b <= '9') {
          if (!csi_first_done_)
            csi_param_ = std::min(csi_param_ < 0 ? 0 : csi_param_ * 10 + (b - '0'), 9999);
        } else if (b == ';' || b == ':') {
          csi_first_done_ = true;
        } else if (b >= 0x40 && b <= 0x7E) {
          if (b == 'K') erase_in_line(std::max(csi_param_, 0));
          state_ = State::ground;
        } else if (b == 0x1B) {
          state_ = State::escape;
        } else if (b == 0x18 || b == 0x1A) {
          state_ = State::ground;  // CAN, SUB
        }
        break;
      case State::string:
        if (b == 0x07) state_ = State::ground;
        else if (b == 0x1B) state_ = State::string_escape;
        break;
      case State::string_escape:
        state_ = b == '\\' ? State::ground : State::string;
        if (b == 0x1B) state_ = State::string_escape;
        break;
    }
    position_ = position_ + 1;
  }
}

void PlainLines::finish() {
  if (line_size() > 0 || position_ > line_begin_) end_line(position_);
  state_ = State::ground;
}

}  // namespace backscroll::term
