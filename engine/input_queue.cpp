#include "engine/input_queue.hpp"

#include <algorithm>

namespace backscroll::engine {

void InputQueue::push_piece(std::string_view bytes, Kind kind, std::chrono::milliseconds gap) {
  if (bytes.empty()) return;
  if (kind != last_kind_ && gap == std::chrono::milliseconds{0}) gap = kKindChangeGap;
  // Append to the newest piece when nothing separates them, unless that piece is the front
  // one: its bytes may be in flight to the kernel and must not move.
  if (pieces_.size() > 1 && pieces_.back().kind == kind && gap.count() == 0) {
    pieces_.back().bytes.append(bytes);
  } else {
    pieces_.push_back(Piece{std::string(bytes), 0, kind, gap});
  }
  last_kind_ = kind;
}

bool InputQueue::try_push(std::string_view bytes, bool paste) {
  if (bytes.size() > capacity_ - queued_) return false;
  queued_ += bytes.size();
  std::string_view rest = bytes;
  std::string_view enter;
  if (paste && rest.size() > 1 && rest.back() == '\r') {
    enter = rest.substr(rest.size() - 1);
    rest.remove_suffix(1);
  }
  while (!rest.empty()) {
    const bool del = rest.front() == '\x7f';
    const auto end =
        std::find_if(rest.begin(), rest.end(), [del](char c) { return (c == '\x7f') != del; });
    const auto n = static_cast<std::size_t>(end - rest.begin());
    push_piece(rest.substr(0, n), del ? Kind::del : Kind::text, std::chrono::milliseconds{0});
    rest.remove_prefix(n);
  }
  push_piece(enter, Kind::enter, kPasteEnterGap);
  return true;
}

InputQueue::Clock::time_point InputQueue::front_ready_at() const noexcept {
  if (pieces_.empty()) return Clock::time_point::max();
  const Piece& p = pieces_.front();
  if (p.written > 0 || p.gap.count() == 0) return Clock::time_point::min();
  return last_written_at_ + p.gap;
}

std::span<const std::byte> InputQueue::front() const noexcept {
  if (pieces_.empty()) return {};
  const Piece& p = pieces_.front();
  return std::as_bytes(std::span(p.bytes)).subspan(p.written);
}

void InputQueue::consume(std::size_t bytes, Clock::time_point now) noexcept {
  if (pieces_.empty()) return;
  Piece& p = pieces_.front();
  bytes = std::min(bytes, p.bytes.size() - p.written);
  p.written += bytes;
  queued_ -= bytes;
  if (p.written == p.bytes.size()) {
    pieces_.pop_front();
    last_written_at_ = now;
  }
}

void InputQueue::clear() noexcept {
  pieces_.clear();
  queued_ = 0;
  last_kind_ = Kind::text;
}

}  // namespace backscroll::engine
