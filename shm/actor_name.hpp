// Actor names: [A-Za-z0-9][A-Za-z0-9._-]{0,63} (docs/design.md, "Actors"). A valid name is safe
// inside a file name and a memfd label, so no escaping is ever needed.
#pragma once

#include <cstddef>
#include <string_view>

namespace backscroll {

inline constexpr std::size_t kActorNameMax = 64;

constexpr bool is_valid_actor_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > kActorNameMax) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) continue;
    if (i == 0 || (c != '.' && c != '_' && c != '-')) return false;
  }
  return true;
}

}  // namespace backscroll
