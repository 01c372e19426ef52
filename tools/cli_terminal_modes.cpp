#include "tools/cli_terminal_modes.hpp"

#include <algorithm>
#include <array>

namespace backscroll::cli {
namespace {

// DEC private modes a program may leave on, with their default (true = set by default).
struct TrackedMode {
  std::uint32_t number;
  bool default_set;
};
constexpr std::array<TrackedMode, 15> kTracked{{
    {1, false},     // application cursor keys
    {9, false},     // X10 mouse
    {25, true},     // cursor visible
    {47, false},    // alternate screen (old)
    {1000, false},  // mouse: press/release
    {1002, false},  // mouse: button motion
    {1003, false},  // mouse: any motion
    {1004, false},  // focus in/out reports
    {1005, false},  // mouse: UTF-8 coordinates
    {1006, false},  // mouse: SGR coordinates
    {1015, false},  // mouse: urxvt coordinates
    {1047, false},  // alternate screen
    {1049, false},  // alternate screen, cursor saved
    {2004, false},  // bracketed paste
    {1001, false},  // mouse: highlight tracking
}};

bool tracked(std::uint32_t mode, bool* default_set) {
  for (const auto& m : kTracked) {
    if (m.number == mode) {
      *default_set = m.default_set;
      return true;
    }
  }
  return false;
}

}  // namespace

void TerminalModes::apply(bool set) {
  for (std::size_t i = 0; i < param_count_; ++i) {
    bool default_set = false;
    if (!tracked(params_[i], &default_set)) continue;
    if (set == default_set) {
      modes_.erase(params_[i]);
    } else {
      modes_[params_[i]] = set;
    }
  }
}

void TerminalModes::observe(std::span<const std::byte> bytes) {
  for (const std::byte b : bytes) {
    const auto c = static_cast<unsigned char>(b);
    if (c == 0x1b) {  // ESC starts a sequence from any state (it aborts an unfinished one)
      state_ = State::escape;
      continue;
    }
    if (c == 0x18 || c == 0x1a) {  // CAN, SUB abort a sequence
      state_ = State::ground;
      continue;
    }
    switch (state_) {
      case State::ground:
        break;
      case State::escape:
        state_ = State::ground;
        if (c == '[') {
          state_ = State::csi_entry;
        } else if (c == '=') {
          keypad_application_ = true;
        } else if (c == '>') {
          keypad_application_ = false;
        } else if (c == 'c') {  // RIS: everything back to defaults
          keypad_application_ = false;
          modes_.clear();
        }
        break;
      case State::csi_entry:
        if (c == '?') {
          state_ = State::private_params;
          param_ = 0;
          param_count_ = 0;
        } else {
          state_ = (c >= 0x40 && c <= 0x7e) ? State::ground : State::csi_ignore;
        }
        break;
      case State::private_params:
        if (c >= '0' && c <= '9') {
          param_ = std::min<std::uint32_t>(param_ * 10 + (c - '0'), 100000);
        } else if (c == ';') {
          if (param_count_ < std::size(params_)) params_[param_count_++] = param_;
          param_ = 0;
        } else if (c == 'h' || c == 'l') {
          if (param_count_ < std::size(params_)) params_[param_count_++] = param_;
          apply(c == 'h');
          state_ = State::ground;
        } else if (c >= 0x40 && c <= 0x7e) {
          state_ = State::ground;  // another private sequence (DECRQM, XTSAVE, ...)
        } else if (c < 0x20) {
          // C0 controls inside a sequence are executed by terminals; they do not end it.
        } else {
          state_ = State::csi_ignore;
        }
        break;
      case State::csi_ignore:
        if (c >= 0x40 && c <= 0x7e) state_ = State::ground;
        break;
    }
  }
}

std::string TerminalModes::reset_sequence() const {
  std::string out;
  // The alternate screen first: leaving it (1049) restores the cursor the program saved.
  for (const std::uint32_t alt : {1049u, 1047u, 47u}) {
    if (modes_.count(alt)) out += "\x1b[?" + std::to_string(alt) + "l";
  }
  for (const auto& [mode, set] : modes_) {
    if (mode == 1049 || mode == 1047 || mode == 47) continue;
    out += "\x1b[?" + std::to_string(mode) + (set ? "l" : "h");  // only non-defaults are kept
  }
  if (keypad_application_) out += "\x1b>";
  out += "\x1b[0m";
  return out;
}

}  // namespace backscroll::cli
