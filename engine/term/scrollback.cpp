#include "engine/term/scrollback.hpp"

#include <algorithm>

namespace backscroll::term {

std::size_t Scrollback::StoredLine::bytes() const {
  return sizeof(StoredLine) + cells.capacity() * sizeof(PackedCell) +
         extra.capacity() * sizeof(char32_t);
}

// The hot path of a scrolling flood: one call per line scrolled off.
// Invariant: a stored line is what libvterm 0.1.4's vterm_screen_get_cell reports of the row,
// packed, up to its last cell that is not pristine (erased, default pen, not on a DECDWL/DECDHL
// line).
void Scrollback::push(std::span<const GridCell> row, bool reverse_video,
                      const std::vector<std::u32string>& tails) {
  const std::uint32_t flip = reverse_video ? attr::kReverse : 0;
  auto shown_attrs = [flip](const GridCell& g) { return (g.attrs & ~attr::kProtected) ^ flip; };
  std::size_t used = row.size();
  while (used > 0) {
    const GridCell& g = row[used - 1];
    if (g.chars[0] != 0 || shown_attrs(g) != 0 || g.fg != 0 || g.bg != 0) break;
    --used;
  }
  StoredLine line;
  line.cols = static_cast<int>(row.size());
  line.cells.resize(used);
  for (std::size_t c = 0; c < used; ++c) {
    const GridCell& g = row[c];
    PackedCell& p = line.cells[c];
    p.ch = g.chars[0];
    const std::uint32_t attrs = shown_attrs(g);
    p.attrs = static_cast<std::uint16_t>(attrs);
    p.width_high = static_cast<std::uint8_t>(
        (c + 1 < row.size() && row[c + 1].chars[0] == kContinuationChar ? 2 : 1) | (attrs >> 16)
                                                                                       << 2);
    p.fg = g.fg;
    p.bg = g.bg;
    p.nextra = 0;
    if (p.ch != 0 && p.ch != kContinuationChar) {
      std::size_t n = 1;
      while (n < kInlineChars && g.chars[n] != 0) {
        if (n == kInlineChars - 1 && has_tail(g)) {
          const std::u32string& tail = tails[tail_index(g)];
          line.extra.insert(line.extra.end(), tail.begin(), tail.end());
          n += tail.size();
          break;
        }
        line.extra.push_back(g.chars[n++]);
      }
      p.nextra = static_cast<std::uint8_t>(n - 1);
    }
  }
  line.extra.shrink_to_fit();
  bytes_ += line.bytes();
  lines_.push_back(std::move(line));
  ++pushed_;
  trim();
}

void Scrollback::set_limits(ScrollbackLimits limits) {
  limits_ = limits;
  trim();
}

void Scrollback::trim() {
  while (!lines_.empty() && (lines_.size() > limits_.max_lines || bytes_ > limits_.max_bytes)) {
    bytes_ -= lines_.front().bytes();
    lines_.pop_front();
  }
}

bool Scrollback::pop(std::span<Cell> out) {
  if (lines_.empty()) return false;
  row(lines_.size() - 1, out);
  bytes_ -= lines_.back().bytes();
  lines_.pop_back();
  return true;
}

void Scrollback::clear() {
  lines_.clear();
  bytes_ = 0;
  pushed_ = 0;
}

void Scrollback::erase_lines() {
  lines_.clear();
  bytes_ = 0;
}

int Scrollback::cols(std::size_t line) const {
  return line < lines_.size() ? lines_[line].cols : 0;
}

void Scrollback::unpack(const StoredLine& l, std::size_t col, std::size_t extra_at, Cell& c) {
  const PackedCell& p = l.cells[col];
  const std::uint32_t attrs = p.attrs | std::uint32_t{p.width_high} >> 2 << 16;
  unpack_pen(attrs, c.pen);
  c.dwl = attrs & attr::kDwl;
  c.dhl = static_cast<std::uint8_t>(attrs >> attr::kDhlShift & 3u);
  c.pen.fg = unpack_color(p.fg);
  c.pen.bg = unpack_color(p.bg);
  c.width = p.width_high & 3u;
  c.nchars = 0;  // every field is set: `c` may hold another cell
  if (p.ch == 0) {
    c.kind = Cell::Kind::erased;
  } else if (p.ch == kContinuationChar) {
    c.kind = Cell::Kind::continuation;
  } else {
    c.kind = Cell::Kind::glyph;
    c.chars[0] = p.ch;
    c.nchars = static_cast<std::uint8_t>(1 + p.nextra);
    for (std::size_t i = 0; i < p.nextra; ++i) c.chars[1 + i] = l.extra[extra_at + i];
  }
}

void Scrollback::row(std::size_t line, std::span<Cell> out) const {
  const std::size_t n = line < lines_.size() ? std::min(out.size(), lines_[line].cells.size()) : 0;
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(n), out.end(), Cell{});
  if (n == 0) return;
  const StoredLine& l = lines_[line];
  std::size_t extra_at = 0;
  for (std::size_t col = 0; col < n; ++col) {
    unpack(l, col, extra_at, out[col]);
    extra_at += l.cells[col].nextra;
  }
}

Cell Scrollback::cell(std::size_t line, int col) const {
  Cell out;
  if (line >= lines_.size() || col < 0) return out;
  const StoredLine& l = lines_[line];
  const auto at = static_cast<std::size_t>(col);
  if (at >= l.cells.size()) return out;
  std::size_t extra_at = 0;
  for (std::size_t c = 0; c < at; ++c) extra_at += l.cells[c].nextra;
  unpack(l, at, extra_at, out);
  return out;
}

}  // namespace backscroll::term
