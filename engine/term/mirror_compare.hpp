// What a user can observe of two mirrors, compared (docs/design.md, "Snapshots": the contract): the
// cells of both screens (text, width, colours, attributes), the cursor (position, visibility,
// style, pending wrap), the pen, the saved cursor, the title, the modes a snapshot restores, and
// the newest history lines. Used where a Mirror is the second emulator: `backscroll verify`, the
// mirror fuzzer, tests. Pure function of the two mirrors; mirror thread or any single thread.
#pragma once

#include <cstddef>
#include <string>

#include "engine/term/mirror.hpp"

namespace backscroll::term {

struct CompareOptions {
  // History is compared over the newest min(history_lines, lines a holds, lines b holds) lines.
  std::size_t history_lines = 512;
  // Titles pushed with CSI 22 t are not in a snapshot (docs/snapshot.md, "Known limitations"):
  // after a pop the title differs, so a caller that knows of a push turns this off.
  bool titles = true;
  // false: only the screen each shows is compared, not which one it is nor the hidden one
  // (a snapshot on the alternate canvas draws only the screen shown).
  bool screens = true;
  // > 0: cells are compared only in the columns left of this one (a cold-restored mirror's
  // history lines are as wide as its keyframe drew them: docs/recorder.md, "Cold restore").
  int columns = 0;
};

// "" when `a` (the reference) and `b` show the same terminal, else the first difference in
// words. A saved cursor counts where DECRC would put it (clamped to the screen). A history line
// `a` stored wider than `b` is compared over `b`'s width (a snapshot draws history at the
// screen's width, docs/snapshot.md), a wide glyph cut by that width counting as erased.
std::string first_difference(const Mirror& a, const Mirror& b, const CompareOptions& options = {});

// A cell in words, for messages: "'x' w1 fg 1 bg default bold", "erased bg 4", "continuation".
std::string describe(const Cell& cell);

}  // namespace backscroll::term
