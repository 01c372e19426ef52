// How much of a stream a snapshot drawn on the alternate canvas covers (docs/snapshot.md, "On
// the alternate canvas"): the bytes before its first screen switch (VtEvents::on_screen_switch),
// where `attach` starts again from a new snapshot. For the snapshot contract test and the
// mirror fuzz target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/term/vt_scanner.hpp"

namespace backscroll::testing {

// `bytes` starts at a clean boundary of the stream.
inline std::size_t bytes_before_screen_switch(std::string_view bytes) {
  struct FirstSwitch final : term::VtEvents {
    std::optional<std::uint64_t> at;
    void on_title(std::string_view, Cursor) noexcept override {}
    void on_bell(Cursor) noexcept override {}
    void on_screen_switch(Cursor begin, Cursor) noexcept override {
      if (!at) at = value(begin);
    }
  } first;
  term::VtScanner scanner(Cursor{0}, 80, 24);  // the size matters only to scroll regions
  scanner.set_events(&first);
  scanner.scan(bytes);
  return first.at ? static_cast<std::size_t>(*first.at) : bytes.size();
}

}  // namespace backscroll::testing
