#include "engine/term/scrollback.hpp"

#include <algorithm>

namespace backscroll::term {

namespace {

// The ring's first size: a quiet actor's history and a replay's mirror stay small.
constexpr std::size_t kFirstRingWords = 16 * 1024;

// The characters of glyph `g` after its first (its combining characters), at most as many as a
// Cell shows.
template <class Visit>
void for_each_combining(const GridCell& g, const std::vector<std::u32string>& tails,
                        Visit&& visit) {
  const std::u32string* tail = has_tail(g) ? &tails[tail_index(g)] : nullptr;
  int seen = 0;
  for_each_char(g, tail, [&](char32_t ch) {
    if (seen > 0 && seen < Cell::kMaxChars) visit(ch);
    ++seen;
  });
}

}  // namespace

// The hot path of a scrolling flood: one call per line scrolled off, no allocation once the ring
// has grown. Invariant: a stored line is what libvterm 0.1.4's vterm_screen_get_cell reports of
// the row, packed, up to its last cell that is not pristine (erased, default pen, not on a
// DECDWL/DECDHL line).
void Scrollback::push(std::span<const GridCell> row, bool reverse_video,
                      const std::vector<std::u32string>& tails) {
  ++pushed_;
  const std::uint32_t flip = reverse_video ? attr::kReverse : 0;
  auto shown_attrs = [flip](const GridCell& g) { return (g.attrs & ~attr::kProtected) ^ flip; };
  auto is_glyph = [](const GridCell& g) {
    return g.chars[0] != 0 && g.chars[0] != kContinuationChar;
  };
  std::size_t used = row.size();
  while (used > 0) {
    const GridCell& g = row[used - 1];
    if (g.chars[0] != 0 || shown_attrs(g) != 0 || g.fg != 0 || g.bg != 0) break;
    --used;
  }
  std::size_t extra = 0;
  for (std::size_t c = 0; c < used; ++c)
    if (is_glyph(row[c]) && row[c].chars[1] != 0)
      for_each_combining(row[c], tails, [&](char32_t) { ++extra; });

  LineRecord* line = place(used * kCellWords + extra);
  if (line == nullptr) return;
  line->cols = static_cast<int>(row.size());
  line->cells = static_cast<std::uint32_t>(used);
  line->extra = static_cast<std::uint32_t>(extra);
  if (used == 0) return;
  char32_t* cell = &ring_[line->at % ring_.size()];
  char32_t* more = cell + used * kCellWords;
  for (std::size_t c = 0; c < used; ++c, cell += kCellWords) {
    const GridCell& g = row[c];
    const std::uint32_t attrs = shown_attrs(g);
    const std::uint32_t width_high =
        (c + 1 < row.size() && row[c + 1].chars[0] == kContinuationChar ? 2u : 1u) | (attrs >> 16)
                                                                                         << 2;
    std::uint32_t combining = 0;
    if (is_glyph(g) && g.chars[1] != 0)
      for_each_combining(g, tails, [&](char32_t ch) {
        *more++ = ch;
        ++combining;
      });
    cell[0] = g.chars[0];
    cell[1] = (attrs & 0xffffu) | combining << 16 | width_high << 24;
    cell[2] = g.fg;
    cell[3] = g.bg;
  }
}

Scrollback::LineRecord* Scrollback::place(std::size_t n) {
  if (limits_.max_lines == 0 || n * sizeof(char32_t) + sizeof(LineRecord) > limits_.max_bytes) {
    drop_all();
    return nullptr;
  }
  while (lines_.size() >= limits_.max_lines) drop_oldest();
  for (;;) {
    const std::size_t capacity = ring_.size();
    std::uint64_t at = head_;
    if (capacity > 0 && at % capacity + n > capacity) at += capacity - at % capacity;
    const std::uint64_t used_after = at + n - tail_;
    const bool fits_ring = used_after <= capacity;
    const bool fits_bytes =
        used_after * sizeof(char32_t) + (lines_.size() + 1) * sizeof(LineRecord) <=
        limits_.max_bytes;
    if (fits_ring && fits_bytes) {
      lines_.push_back({head_, at, 0, 0, 0});
      head_ = at + n;
      return &lines_.back();
    }
    if (!fits_ring && capacity < max_words()) {
      const std::size_t live = static_cast<std::size_t>(head_ - tail_);
      relayout(std::min(max_words(), std::max({2 * capacity, kFirstRingWords, live + n})));
      continue;
    }
    if (lines_.empty()) return nullptr;  // unreachable: a line alone fits both bounds (above)
    drop_oldest();
  }
}

void Scrollback::relayout(std::size_t capacity) {
  HugePageArray<char32_t> fresh(capacity);
  std::uint64_t at = 0;
  for (LineRecord& line : lines_) {
    const std::size_t n = line.cells * kCellWords + line.extra;
    if (n > 0) std::copy_n(words(line), n, &fresh[at]);
    line.start = line.at = at;
    at += n;
  }
  ring_ = std::move(fresh);
  tail_ = 0;
  head_ = at;
}

void Scrollback::drop_oldest() {
  lines_.pop_front();
  if (lines_.empty()) {
    head_ = tail_ = 0;
  } else {
    tail_ = lines_.front().start;
  }
}

void Scrollback::drop_all() {
  lines_.clear();
  ring_ = {};
  head_ = tail_ = 0;
}

void Scrollback::set_limits(ScrollbackLimits limits) {
  limits_ = limits;
  while (!lines_.empty() && (lines_.size() > limits_.max_lines || bytes() > limits_.max_bytes))
    drop_oldest();
  if (lines_.empty()) {
    drop_all();
  } else if (ring_.size() > max_words()) {
    relayout(max_words());
  }
}

bool Scrollback::pop(std::span<Cell> out) {
  if (lines_.empty()) return false;
  row(lines_.size() - 1, out);
  head_ = lines_.back().start;
  lines_.pop_back();
  if (lines_.empty()) head_ = tail_ = 0;
  return true;
}

void Scrollback::clear() {
  drop_all();
  pushed_ = 0;
}

void Scrollback::erase_lines() { drop_all(); }

int Scrollback::cols(std::size_t line) const {
  return line < lines_.size() ? lines_[line].cols : 0;
}

std::uint32_t Scrollback::stored_attrs(std::uint32_t packed) {
  return (packed & 0xffffu) | (packed >> 26 & 3u) << 16;
}

void Scrollback::unpack(const char32_t* cell, const char32_t*& extra, Cell& c) {
  const std::uint32_t packed = cell[1];
  const std::uint32_t attrs = stored_attrs(packed);
  const std::uint32_t combining = packed >> 16 & 0xffu;
  c.pen = pen_of(attrs, cell[2], cell[3]);
  c.dwl = attrs & attr::kDwl;
  c.dhl = static_cast<std::uint8_t>(attrs >> attr::kDhlShift & 3u);
  c.width = static_cast<std::uint8_t>(packed >> 24 & 3u);
  c.nchars = 0;  // every field is set: `c` may hold another cell
  if (cell[0] == 0) {
    c.kind = Cell::Kind::erased;
  } else if (cell[0] == kContinuationChar) {
    c.kind = Cell::Kind::continuation;
  } else {
    c.kind = Cell::Kind::glyph;
    c.chars[0] = cell[0];
    c.nchars = static_cast<std::uint8_t>(1 + combining);
    std::copy_n(extra, combining, c.chars.begin() + 1);
  }
  extra += combining;
}

void Scrollback::row(std::size_t line, std::span<Cell> out) const {
  const std::size_t n = stored_cells(line, out);
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(n), out.end(), Cell{});
}

std::size_t Scrollback::stored_cells(std::size_t line, std::span<Cell> out) const {
  if (line >= lines_.size()) return 0;
  const LineRecord& l = lines_[line];
  const std::size_t n = std::min<std::size_t>(out.size(), l.cells);
  if (n == 0) return 0;
  const char32_t* cell = words(l);
  const char32_t* extra = cell + l.cells * kCellWords;
  for (std::size_t col = 0; col < n; ++col, cell += kCellWords) unpack(cell, extra, out[col]);
  return n;
}

Scrollback::StoredLine Scrollback::stored_line(std::size_t line) const {
  if (line >= lines_.size() || lines_[line].cells == 0) return StoredLine(nullptr, 0);
  const LineRecord& l = lines_[line];
  return StoredLine(words(l), l.cells);
}

Pen Scrollback::StoredLine::pen(std::size_t i) const noexcept {
  const char32_t* cell = at(i);
  return pen_of(stored_attrs(cell[1]), cell[2], cell[3]);
}

Cell Scrollback::cell(std::size_t line, int col) const {
  Cell out;
  if (line >= lines_.size() || col < 0) return out;
  const LineRecord& l = lines_[line];
  const auto at = static_cast<std::size_t>(col);
  if (at >= l.cells) return out;
  const char32_t* cells = words(l);
  const char32_t* extra = cells + l.cells * kCellWords;
  for (std::size_t c = 0; c < at; ++c) extra += cells[c * kCellWords + 1] >> 16 & 0xffu;
  unpack(cells + at * kCellWords, extra, out);
  return out;
}

}  // namespace backscroll::term
