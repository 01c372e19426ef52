// Every event a VtScanner reports (VtEvents), each with its cursor, as one line of text: what the
// look ahead's tests and the mirror fuzz target compare between a mirror that jumps and one that
// parses every byte.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "engine/term/vt_scanner.hpp"

namespace backscroll::testing {

class EventLog final : public term::VtEvents {
 public:
  void on_title(std::string_view title, Cursor after) noexcept override {
    text += "title " + std::to_string(value(after)) + " " + std::string(title) + "\n";
  }
  void on_bell(Cursor after) noexcept override {
    text += "bell " + std::to_string(value(after)) + "\n";
  }
  void on_shell_mark(char mark, std::optional<int> exit_status, Cursor after) noexcept override {
    text += std::string("mark ") + mark + " " +
            (exit_status ? std::to_string(*exit_status) : std::string("-")) + " " +
            std::to_string(value(after)) + "\n";
  }
  void on_screen_switch(Cursor begin, Cursor after) noexcept override {
    text += "switch " + std::to_string(value(begin)) + " " + std::to_string(value(after)) + "\n";
  }

  std::string text;
};

}  // namespace backscroll::testing
