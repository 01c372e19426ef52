// File names that are a cursor: 16 lowercase hex digits and an extension (segments "<start>.seg",
// annexes "<start>.rec"), so a folder listing sorts them in cursor order without an index.
#pragma once

#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "shm/cursor.hpp"

namespace backscroll::store {

// `extension` with its dot: ".seg".
inline std::string cursor_file_name(Cursor at, std::string_view extension) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(value(at)));
  return std::string(hex) + std::string(extension);
}

// The cursor such a name holds; nullopt for any other name.
inline std::optional<Cursor> cursor_of_file_name(std::string_view name,
                                                 std::string_view extension) {
  if (name.size() != 16 + extension.size() || !name.ends_with(extension) ||
      name.find_first_not_of("0123456789abcdef") != 16)
    return std::nullopt;
  std::uint64_t v = 0;
  std::from_chars(name.data(), name.data() + 16, v, 16);
  return Cursor{v};
}

}  // namespace backscroll::store
