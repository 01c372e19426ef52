// A line read in place (Scrollback::StoredLine, GridRow) against the Cells a reader gets for
// it: the snapshot writer draws simple lines from such reads (LineDrawer::draw_simple).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>

#include "engine/term/grid_cell.hpp"
#include "engine/term/screen_cell.hpp"

namespace backscroll::testing {

// Cell c of `line` read in place says what `want`, its Cell, says: its kind (by its first
// character), width, line size, pen and whether that is the default one, and for a glyph
// whether characters follow its first; with `previous` (the Cell before it), whether the two
// pens are the same. Callers say which line with SCOPED_TRACE.
template <typename Line>
void expect_read_as(const Line& line, std::size_t c, const term::Cell& want,
                    const term::Cell* previous) {
  const char32_t first = want.kind == term::Cell::Kind::erased         ? 0
                         : want.kind == term::Cell::Kind::continuation ? term::kContinuationChar
                                                                       : want.chars[0];
  ASSERT_EQ(line.first_char(c), first) << "col " << c;
  ASSERT_EQ(line.width(c), want.width) << "col " << c;
  ASSERT_EQ(line.line_sized(c), want.dwl || want.dhl != 0) << "col " << c;
  ASSERT_TRUE(line.pen(c) == want.pen) << "col " << c;
  ASSERT_EQ(line.default_pen(c), want.pen == term::Pen{}) << "col " << c;
  if constexpr (requires { line.pristine(c); }) {
    ASSERT_EQ(line.pristine(c), term::is_pristine(want)) << "col " << c;
  }
  if (want.kind == term::Cell::Kind::glyph) {
    ASSERT_EQ(line.combining(c), want.nchars > 1) << "col " << c;
  }
  if (previous != nullptr) {
    ASSERT_EQ(line.same_pen(c, c - 1), want.pen == previous->pen) << "col " << c;
  }
}

}  // namespace backscroll::testing
