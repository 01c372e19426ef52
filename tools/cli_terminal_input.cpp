#include "tools/cli_terminal_input.hpp"

namespace backscroll::cli {
namespace {

constexpr char kEsc = '\x1b';

// Whether a complete CSI sequence (ESC [ params intermediates final) is a terminal's answer
// to a query rather than a key: DA (c), CPR (R), DSR (n), DECRPM ($ y), window reports (t),
// the kitty keyboard flags (? u). Keys are cursor and function keys (A-D, H, F, ~, P-S with
// modifiers), focus (I, O), mouse (M, m) and bracketed paste (200~, 201~). `CSI 1 ; m R` is
// also Shift/Ctrl-F3 on some terminals: read as a report, it is only dropped during a catch-up.
bool is_reply_csi(std::string_view sequence) {
  const char final_byte = sequence.back();
  const std::string_view params = sequence.substr(2, sequence.size() - 3);
  const bool private_prefix = !params.empty() && params.front() == '?';
  const bool dollar = params.find('$') != std::string_view::npos;
  switch (final_byte) {
    case 'c':
    case 'R':
    case 'n':
    case 't': return true;
    case 'y': return dollar;
    case 'u': return private_prefix;
    default: return false;
  }
}

}  // namespace

TerminalInput::Unit TerminalInput::finish(bool reply, bool status_ok) {
  Unit unit{std::move(unit_), reply, status_ok};
  unit_.clear();
  state_ = State::ground;
  return unit;
}

std::optional<TerminalInput::Unit> TerminalInput::next(std::string_view& bytes) {
  while (!bytes.empty()) {
    const char b = bytes.front();
    bytes.remove_prefix(1);
    if (unit_.size() < kMaxUnit) unit_ += b;
    switch (state_) {
      case State::ground:
        if (b == kEsc) {
          state_ = State::escape;
          continue;
        }
        return finish(false);
      case State::escape:
        switch (b) {
          case '[': state_ = State::csi; continue;
          case 'O': state_ = State::ss3; continue;
          case ']':  // OSC: colour and title reports
            state_ = State::string;
            bel_ends_ = true;
            continue;
          case 'P':  // DCS: DECRQSS, XTGETTCAP, DA3 replies
          case '_':  // APC
          case '^':  // PM
          case 'X':  // SOS
            state_ = State::string;
            bel_ends_ = false;
            continue;
          case kEsc: {  // ESC ESC: the first one alone (the Escape key), the second starts anew
            unit_.pop_back();
            Unit lone = finish(false);
            unit_ = kEsc;
            state_ = State::escape;
            return lone;
          }
          default:  // ESC and a key: Alt-key
            return finish(false);
        }
      case State::csi:
        if (b >= 0x40 && b <= 0x7e) {
          const bool reply = is_reply_csi(unit_);
          return finish(reply, reply && unit_ == "\x1b[0n");
        }
        if (b >= 0x20 && b <= 0x3f) continue;  // parameters, intermediates
        return finish(false);  // a control inside: no terminal sends it; pass it on as keys
      case State::ss3:         // ESC O and one byte: application cursor and keypad keys, F1-F4
        return finish(false);
      case State::string:
        if (b == '\a' && bel_ends_) return finish(true);
        if (b == kEsc) state_ = State::string_escape;
        continue;
      case State::string_escape:  // ESC \ (ST) ends it
        state_ = b == '\\' ? State::ground : State::string;
        if (state_ == State::ground) return finish(true);
        continue;
    }
  }
  return std::nullopt;
}

std::string TerminalInput::take_pending() {
  std::string pending = std::move(unit_);
  unit_.clear();
  state_ = State::ground;
  return pending;
}

void CatchUpGuard::sentinel_written(unsigned answers, Clock::time_point now) {
  if (in_flight_ > 0) --in_flight_;
  expected_ += answers;
  deadline_ = now + kAnswerTimeout;
  settle();
}

void CatchUpGuard::settle() noexcept {
  if (in_flight_ > 0 || answered_ < expected_) return;
  expected_ = 0;
  answered_ = 0;
  deadline_.reset();
}

std::string CatchUpGuard::filter(std::string_view bytes) {
  if (!active()) return std::string(bytes);
  std::string keys;
  while (active() && !bytes.empty()) {
    auto unit = input_.next(bytes);
    if (!unit) break;  // a sequence continues in the next read
    if (unit->status_ok) {
      ++answered_;
      settle();
    }
    if (!unit->reply) keys += unit->bytes;
  }
  keys.append(bytes);  // after the last answer: as they are
  return keys;
}

std::optional<CatchUpGuard::Clock::time_point> CatchUpGuard::deadline() const noexcept {
  if (in_flight_ > 0) return std::nullopt;  // still writing: as long as that takes
  return deadline_;
}

std::string CatchUpGuard::expire(Clock::time_point now) {
  const auto due = deadline();
  if (!due || now < *due) return {};
  expected_ = answered_;
  settle();
  return input_.take_pending();
}

void StatusRequestCounter::observe(std::string_view bytes) noexcept {
  for (const char b : bytes) {
    if (b == kStatusRequest[matched_]) {
      if (++matched_ == kStatusRequest.size()) {
        ++count_;
        matched_ = 0;
      }
    } else {
      matched_ = b == kEsc ? 1 : 0;
    }
  }
}

unsigned StatusRequestCounter::take() noexcept {
  const unsigned n = count_;
  count_ = 0;
  return n;
}

}  // namespace backscroll::cli
