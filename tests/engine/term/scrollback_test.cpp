// Scrollback keeps each line it is given exactly, and the newest lines within both bounds,
// whatever the order of pushes, pops, new limits and erasures: checked against a model that
// keeps every line as the Cells a reader must get back. The ring under it (its growth, wrap and
// relayout) must be invisible to readers.
#include "engine/term/scrollback.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/engine/engine_process.hpp"
#include "tests/engine/term/line_read_check.hpp"

namespace backscroll::testing {
namespace {

using term::Cell;
using term::GridCell;
using term::Scrollback;
using term::ScrollbackLimits;

constexpr std::uint32_t kShownAttrMask = 0x3ffffu & ~term::attr::kProtected;

GridCell erased(std::uint32_t bg = 0) {
  GridCell g{};
  g.bg = bg;
  return g;
}

GridCell glyph(std::u32string chars, std::vector<std::u32string>& clusters, std::uint32_t attrs = 0,
               std::uint32_t fg = 0) {
  GridCell g{};
  g.attrs = attrs;
  g.fg = fg;
  if (chars.size() > 1) {
    g.ch = term::kClusterTag | static_cast<char32_t>(clusters.size());
    clusters.push_back(std::move(chars));
  } else {
    g.ch = chars.front();
  }
  return g;
}

// What a reader gets back for a pushed row: every cell up to the last one that is not pristine
// as to_cell shows it (the reverse bit as shown, without the protected bit), pristine after.
std::vector<Cell> expected_row(const std::vector<GridCell>& row, bool reverse,
                               const std::vector<std::u32string>& clusters) {
  std::vector<Cell> out(row.size());
  for (std::size_t c = 0; c < row.size(); ++c) {
    GridCell g = row[c];
    g.attrs = (g.attrs & kShownAttrMask) ^ (reverse ? term::attr::kReverse : 0u);
    const bool wide = c + 1 < row.size() && row[c + 1].ch == term::kContinuationChar;
    out[c] =
        term::to_cell(g, wide, term::is_cluster(g) ? &clusters[term::cluster_index(g)] : nullptr);
  }
  std::size_t used = row.size();
  auto pristine = [&](const GridCell& g) {
    return g.ch == 0 && ((g.attrs & kShownAttrMask) ^ (reverse ? term::attr::kReverse : 0u)) == 0 &&
           g.fg == 0 && g.bg == 0;
  };
  while (used > 0 && pristine(row[used - 1])) --used;
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(used), out.end(), Cell{});
  return out;
}

std::vector<Cell> read_row(const Scrollback& s, std::size_t line, std::size_t width) {
  std::vector<Cell> out(width);
  s.row(line, out);
  return out;
}

// The model: the lines a Scrollback without bounds would hold, with the words each takes in
// the ring: 1 per stored cell, 4 per run of cells in one pen on one kind of line, and when
// glyphs have combining characters, a byte per cell (rounded up to words) and 1 per character.
struct Model {
  std::vector<std::vector<Cell>> lines;
  std::vector<int> cols;
  std::vector<std::size_t> words;
  std::size_t gone = 0;  // lines before this one were dropped by a new bound or an erasure

  void push(std::vector<Cell> cells, int width) {
    std::size_t used = cells.size();
    while (used > 0 && cells[used - 1] == Cell{}) --used;
    std::size_t runs = 0;
    std::size_t extra = 0;
    for (std::size_t c = 0; c < used; ++c) {
      const Cell& a = cells[c];
      if (c == 0 || !(a.pen == cells[c - 1].pen) || a.dwl != cells[c - 1].dwl ||
          a.dhl != cells[c - 1].dhl)
        ++runs;
      if (a.kind == Cell::Kind::glyph) extra += a.nchars - 1u;
    }
    const std::size_t n = used + 4 * runs + (extra > 0 ? (used + 3) / 4 + extra : 0);
    lines.push_back(std::move(cells));
    cols.push_back(width);
    words.push_back(n);
  }
  void pop() {
    lines.pop_back();
    cols.pop_back();
    words.pop_back();
  }
  // The most of the newest lines since `gone` that the bounds must keep: their words, room for
  // the one padding a wrap can leave and the next line's, and their records.
  std::size_t must_keep(const ScrollbackLimits& limits) const {
    std::size_t largest = 0;
    for (std::size_t i = gone; i < lines.size(); ++i) largest = std::max(largest, words[i]);
    std::size_t k = 0;
    std::size_t total = 2 * largest;
    for (std::size_t i = lines.size(); i > gone && k < limits.max_lines; --i) {
      total += words[i - 1];
      if (total * 4 + (k + 1) * 64 > limits.max_bytes) break;
      ++k;
    }
    return k;
  }
};

// The line read in place (StoredLine) shows each stored cell as the Cell a reader gets; its
// size is the stored cells' count.
void expect_in_place_reads_the_same(const Scrollback& s, std::size_t i,
                                    const std::vector<Cell>& want) {
  SCOPED_TRACE("line " + std::to_string(i));
  const Scrollback::StoredLine line = s.stored_line(i);
  std::vector<Cell> stored(want.size() + 3);
  ASSERT_EQ(line.size(), s.stored_cells(i, stored));
  for (std::size_t c = 0; c < line.size(); ++c)
    expect_read_as(line, c, want[c], c > 0 ? &want[c - 1] : nullptr);
}

// The store holds the model's newest lines, each exactly, within both bounds, and drops no line
// the bounds could keep.
void expect_newest_of(const Scrollback& s, const Model& m, const ScrollbackLimits& limits) {
  ASSERT_LE(s.lines(), m.lines.size());
  ASSERT_LE(s.lines(), limits.max_lines);
  ASSERT_LE(s.bytes(), limits.max_bytes);
  ASSERT_GE(s.lines(), m.must_keep(limits));
  const std::size_t skip = m.lines.size() - s.lines();
  for (std::size_t i = 0; i < s.lines(); ++i) {
    const auto& want = m.lines[skip + i];
    ASSERT_EQ(s.cols(i), m.cols[skip + i]) << "line " << i;
    ASSERT_TRUE(read_row(s, i, want.size() + 3) ==
                [&] {
                  auto w = want;
                  w.resize(want.size() + 3);
                  return w;
                }())
        << "line " << i << " of " << s.lines();
    for (int c = 0; c < static_cast<int>(want.size()); ++c)
      ASSERT_TRUE(s.cell(i, c) == want[static_cast<std::size_t>(c)])
          << "line " << i << " col " << c;
    expect_in_place_reads_the_same(s, i, want);
  }
}

TEST(Scrollback, KeepsTheNewestLinesWhenTheRingWrapsMidLine) {
  // Rows of varying used width, so lines end at every offset of the ring; a byte bound that
  // holds a few dozen of them.
  const ScrollbackLimits limits{1000, 64 * 1024};
  Scrollback s(limits);
  Model m;
  std::vector<std::u32string> clusters;
  for (int i = 0; i < 5000; ++i) {
    std::vector<GridCell> row(120, erased());
    const int used = 1 + (i * 37) % 119;
    for (int c = 0; c < used; ++c)
      row[static_cast<std::size_t>(c)] =
          glyph({static_cast<char32_t>('a' + (i + c) % 26)}, clusters);
    s.push(row, false, clusters);
    m.push(expected_row(row, false, clusters), 120);
    if (i % 97 == 0) expect_newest_of(s, m, limits);
  }
  expect_newest_of(s, m, limits);
  // 64 KiB at 4 bytes a cell, 16 a run and about 60 cells a line: about 200 lines (at 16
  // bytes a cell, as stored before the compact lines, about 60).
  EXPECT_GT(s.lines(), 180u);
  EXPECT_EQ(s.pushed(), 5000u);
}

TEST(Scrollback, AnEntirelyBlankRowTakesNoCellsAndReadsPristine) {
  Scrollback s;
  std::vector<std::u32string> clusters;
  s.push(std::vector<GridCell>(80, erased()), false, clusters);
  ASSERT_EQ(s.lines(), 1u);
  EXPECT_EQ(s.cols(0), 80);
  EXPECT_TRUE(s.cell(0, 5) == Cell{});
  std::vector<Cell> out(80);
  ASSERT_TRUE(s.pop(out));
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](const Cell& c) { return c == Cell{}; }));
  EXPECT_EQ(s.lines(), 0u);
}

TEST(Scrollback, ALineLargerThanTheByteBoundLeavesNothing) {
  Scrollback s(ScrollbackLimits{100, 1024});  // 244 cells of one pen at most
  std::vector<std::u32string> clusters;
  std::vector<GridCell> small(10, glyph({U'x'}, clusters));
  s.push(small, false, clusters);
  ASSERT_EQ(s.lines(), 1u);
  std::vector<GridCell> huge(300, glyph({U'y'}, clusters));
  s.push(huge, false, clusters);
  EXPECT_EQ(s.lines(), 0u);  // as if pushed, then the oldest dropped until the bound held
  EXPECT_EQ(s.bytes(), 0u);
  EXPECT_EQ(s.pushed(), 2u);
  s.push(small, false, clusters);
  EXPECT_EQ(s.lines(), 1u);
}

TEST(Scrollback, CombiningCharactersAndTailsComeBackWithTheirGlyphs) {
  Scrollback s;
  std::vector<std::u32string> clusters;
  std::u32string many = U"e";
  for (int i = 0; i < 40; ++i) many += static_cast<char32_t>(0x300 + i);  // past a Cell's 32
  std::vector<GridCell> row{glyph(U"a\u0301", clusters), glyph(many, clusters),
                            glyph(U"\u4e2d", clusters), erased(),
                            glyph(U"b\u0308\u0323", clusters)};
  row[3].ch = term::kContinuationChar;
  s.push(row, true, clusters);
  const auto want = expected_row(row, true, clusters);
  EXPECT_TRUE(read_row(s, 0, row.size()) == want);
  EXPECT_EQ(s.cell(0, 1).nchars, Cell::kMaxChars);
  EXPECT_EQ(s.cell(0, 2).width, 2);
  EXPECT_TRUE(s.cell(0, 4) == want[4]);  // after the capped glyph's extra characters
}

TEST(Scrollback, AFillingHistoryGrowsInPlacePastTwoMebibytes) {
  SKIP_MEMORY_MEASURE_UNDER_SANITIZER();  // the pages counted are the sanitizer's too
  // From 2 MiB on the ring doubles inside one array sized for the byte bound, so a history
  // filling up to the bound touches those pages once; copying the lines into a fresh array at
  // each doubling (2, 4, 8, 16 MiB) touched nearly twice the bound (each fresh page a fault,
  // and on a virtual machine a shadow entry). Below 2 MiB the small arrays are copied, at most
  // 2 MiB more. Small pages for the count: transparent huge pages would hide the difference.
  ASSERT_EQ(::prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0), 0);
  struct HugePagesBack {  // for whatever this process runs next
    ~HugePagesBack() { ::prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0); }
  } back;
  constexpr std::size_t kBound = 16 << 20;
  Scrollback s(ScrollbackLimits{1'000'000, kBound});
  std::vector<std::u32string> clusters;
  std::vector<GridCell> row(100, glyph(U"x", clusters));
  const auto faults = [] {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
  };
  const long before = faults();
  // 100 cells and a run each: 416 bytes of ring, 32 of record; until the bound drops lines.
  while (s.lines() == s.pushed()) s.push(row, false, clusters);
  const long touched = faults() - before;
  EXPECT_GT(s.bytes(), kBound * 9 / 10);
  // The bound's pages once, the line records' (a deque of 32-byte records), the small arrays.
  const long pages = static_cast<long>((kBound + s.lines() * 32 + (2 << 20)) / 4096);
  EXPECT_LE(touched, pages + pages / 16)
      << "pages of the bound, records and small arrays: " << pages;
}

// Random rows (marks, clusters, wide glyphs, colours, attributes with the protected bit, reverse
// video) through random pushes, pops, new limits and erasures.
RC_GTEST_PROP(Scrollback, HoldsTheNewestLinesExactlyWhateverTheOperations, ()) {
  // Up to 400 lines and 400 KB: past the ring's first 64 KiB, so it grows while lines wrap.
  ScrollbackLimits limits{*rc::gen::inRange<std::size_t>(1, 400),
                          *rc::gen::inRange<std::size_t>(64, 400'000)};
  Scrollback s(limits);
  Model m;
  std::vector<std::u32string> clusters;
  const int steps = *rc::gen::inRange(1, 300);
  for (int step = 0; step < steps; ++step) {
    const int op = *rc::gen::inRange(0, 100);
    if (op < 75) {
      const auto width = *rc::gen::inRange<std::size_t>(1, 150);
      std::vector<GridCell> row(width, erased());
      const auto used = *rc::gen::inRange<std::size_t>(0, width + 1);
      // A row's pens: a few, each kept for a stretch (as text is: long runs of one pen, read
      // four cells at a time), or a new one at every cell; cells of one pen may differ in their
      // protection, which a reader never sees.
      std::vector<std::pair<std::uint32_t, std::uint32_t>> pens;
      const int pen_count = *rc::gen::inRange(1, 4);
      for (int k = 0; k < pen_count; ++k)
        pens.emplace_back(*rc::gen::inRange<std::uint32_t>(0, 1u << 18),
                          *rc::gen::inRange<std::uint32_t>(0, 1u << 25));
      const bool pen_per_cell = *rc::gen::inRange(0, 4) == 0;
      const int stretch = *rc::gen::inRange(1, 12);
      const bool reverse = *rc::gen::inRange(0, 8) == 0;
      auto pen_at = [&](std::size_t c) -> std::pair<std::uint32_t, std::uint32_t> {
        if (pen_per_cell)
          return {*rc::gen::inRange<std::uint32_t>(0, 1u << 18),
                  *rc::gen::inRange<std::uint32_t>(0, 1u << 25)};
        auto pen = pens[(c / static_cast<std::size_t>(stretch)) % pens.size()];
        if (*rc::gen::inRange(0, 6) == 0) pen.first ^= term::attr::kProtected;
        return pen;
      };
      for (std::size_t c = 0; c < used; ++c) {
        const int kind = *rc::gen::inRange(0, 12);
        if (kind == 0) {
          row[c] = erased(*rc::gen::inRange<std::uint32_t>(0, 3) << 24 | 7);
        } else if (kind == 10) {
          // Pristine as shown when the row is pushed in reverse video, or protected only.
          row[c] = erased();
          row[c].attrs = *rc::gen::element(term::attr::kReverse, term::attr::kProtected, 0u);
        } else if (kind == 1 && c + 1 < width) {
          row[c] = glyph(U"\u4e2d", clusters);
          row[c + 1] = erased();
          row[c + 1].ch = term::kContinuationChar;
          ++c;
        } else {
          std::u32string chars{static_cast<char32_t>(*rc::gen::inRange(0x21, 0x7f))};
          if (kind == 2) {
            const int marks = *rc::gen::inRange(1, 45);
            for (int k = 0; k < marks; ++k) chars += static_cast<char32_t>(0x300 + k);
          }
          const auto [attrs, fg] = pen_at(c);
          row[c] = glyph(chars, clusters, attrs, fg);
        }
      }
      // Pristine cells after the text, as many as the scan from the row's end must skip.
      if (used < width && *rc::gen::inRange(0, 3) == 0) {
        const auto tail = *rc::gen::inRange<std::size_t>(0, width - used + 1);
        for (std::size_t c = width - tail; c < width; ++c)
          row[c].attrs = reverse ? term::attr::kReverse : term::attr::kProtected;
      }
      s.push(row, reverse, clusters);
      m.push(expected_row(row, reverse, clusters), static_cast<int>(width));
    } else if (op < 88) {
      const auto width = *rc::gen::inRange<std::size_t>(1, 160);
      std::vector<Cell> out(width);
      const bool had = s.lines() > 0;
      RC_ASSERT(s.pop(out) == had);
      if (had) {  // the newest line the store holds is the model's newest
        auto want = m.lines.back();
        want.resize(width);
        RC_ASSERT(out == want);
        m.pop();
      }
      m.gone = m.lines.size() - s.lines();  // lines dropped for the popped one stay dropped
    } else if (op < 97) {
      limits = {*rc::gen::inRange<std::size_t>(0, 400), *rc::gen::inRange<std::size_t>(0, 400'000)};
      s.set_limits(limits);
      m.gone = m.lines.size() - s.lines();
    } else {
      s.erase_lines();
      m.gone = m.lines.size();
    }
    expect_newest_of(s, m, limits);
    RC_ASSERT(!::testing::Test::HasFailure());
  }
}

}  // namespace
}  // namespace backscroll::testing
