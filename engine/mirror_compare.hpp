// What a user can observe of two mirrors, compared (DESIGN section 4, "the contract"): the
// cells of both screens (text, width, colours, attributes), the cursor (position, visibility,
// style, pending wrap), the pen, the saved cursor, the title, the modes a snapshot restores, and
// the newest history lines. Used where a Mirror is the second emulator: `backscroll verify`, the
// mirror fuzzer, tests. Pure function of the two mirrors; mirror thread or any single thread.
#pragma once

#include <cstddef>
#include <string>

#include "engine/mirror.hpp"

namespace backscroll::engine {

// "" when `a` and `b` show the same terminal, else the first difference in words. History is
// compared over the newest min(history_lines, lines a holds, lines b holds) lines.
std::string first_difference(const Mirror& a, const Mirror& b, std::size_t history_lines = 512);

// A cell in words, for messages: "'x' w1 fg 1 bg default bold", "erased bg 4", "continuation".
std::string describe(const Cell& cell);

}  // namespace backscroll::engine
