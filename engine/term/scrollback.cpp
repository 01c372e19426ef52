#include "engine/term/scrollback.hpp"

#include <algorithm>
#include <cstring>

namespace backscroll::term {

namespace {

// The ring's first size: a quiet actor's history and a replay's mirror stay small.
constexpr std::size_t kFirstRingWords = 16 * 1024;

// A cell as two 64-bit words, for tests of several of its fields at once; masks are made the
// same way from a cell of masks, so the words' order in memory does not matter.
struct CellWords {
  std::uint64_t a;
  std::uint64_t b;
};
inline CellWords words_of(const GridCell& g) {
  CellWords w;
  std::memcpy(&w, &g, sizeof w);
  return w;
}
static_assert(sizeof(CellWords) == sizeof(GridCell));

#if defined(__SSE2__)
inline __m128i load_cell(const GridCell& g) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(&g));
}
inline __m128i load_cell(const CellWords& w) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(&w));
}
inline bool all_zero(__m128i v) {
  return _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) == 0xffff;
}
#endif

}  // namespace

// The hot path of a scrolling flood: one call per line scrolled off, no allocation once the ring
// and the scratch vectors have grown. Invariant: a stored line is what libvterm 0.1.4's
// vterm_screen_get_cell reports of the row, up to its last cell that is not pristine (erased,
// default pen, not on a DECDWL/DECDHL line).
//
// A cell is tested as two 64-bit words, not four fields: it is pristine when its words, without
// the protected bit and with the reverse bit as shown, are zero; a run of one pen ends where its
// words without the character and the protected bit change. Where SSE2 is there, four cells are
// tested at once, in both loops: a scrolling flood's lines are mostly long runs of one pen, and
// these loops were half of the mirror's parse of one (docs/profiles/scrollback-ring.md).
void Scrollback::push(std::span<const GridCell> row, bool reverse_video,
                      const std::vector<std::u32string>& clusters, std::size_t zero_from) {
  ++pushed_;
  const std::uint32_t flip = reverse_video ? attr::kReverse : 0;
  auto shown_attrs = [flip](const GridCell& g) { return (g.attrs & ~attr::kProtected) ^ flip; };
  const GridCell shown_mask{~0u, ~0u, ~0u, ~attr::kProtected};
  const GridCell flipped_bits{0, 0, 0, flip};
  const GridCell pen_mask{0, ~0u, ~0u, ~attr::kProtected};
  const CellWords shown = words_of(shown_mask);
  const CellWords flipped = words_of(flipped_bits);
  const CellWords pen = words_of(pen_mask);
  const GridCell* const cells = row.data();
  std::size_t used = reverse_video ? row.size() : std::min(row.size(), zero_from);
#if defined(__SSE2__)
  const __m128i shown4 = load_cell(shown_mask);
  const __m128i flipped4 = load_cell(flipped_bits);
  while (used >= 4) {
    // (cell & shown) ^ flipped == (cell ^ flipped) & shown: the flipped bit is a shown one.
    const GridCell* p = cells + used - 4;
    const __m128i shown_bits =
        _mm_and_si128(_mm_or_si128(_mm_or_si128(_mm_xor_si128(load_cell(p[0]), flipped4),
                                                _mm_xor_si128(load_cell(p[1]), flipped4)),
                                   _mm_or_si128(_mm_xor_si128(load_cell(p[2]), flipped4),
                                                _mm_xor_si128(load_cell(p[3]), flipped4))),
                      shown4);
    if (!all_zero(shown_bits)) break;
    used -= 4;
  }
#endif
  while (used > 0) {
    const CellWords w = words_of(cells[used - 1]);
    if ((((w.a & shown.a) ^ flipped.a) | ((w.b & shown.b) ^ flipped.b)) != 0) break;
    --used;
  }
  // The runs, the first characters and the combining characters, read in one pass over the row.
  // At most one run per cell: room for all of them, written in place.
  if (runs_scratch_.size() < used * kRunWords) runs_scratch_.resize(row.size() * kRunWords);
  char32_t* runs_out = runs_scratch_.data();
  counts_scratch_.clear();
  extra_scratch_.clear();
  if (chars_scratch_.size() < used) chars_scratch_.resize(row.size());
  char32_t* const chars = chars_scratch_.data();
  CellWords run{};  // the words of the cell that started the current run
  auto take = [&](std::size_t c) __attribute__((always_inline)) {
    const GridCell& g = cells[c];
    const CellWords w = words_of(g);
    chars[c] = g.ch;
    if (c == 0 || (((w.a ^ run.a) & pen.a) | ((w.b ^ run.b) & pen.b)) != 0) {
      run = w;
      runs_out[0] = static_cast<char32_t>(c);
      runs_out[1] = shown_attrs(g);
      runs_out[2] = g.fg;
      runs_out[3] = g.bg;
      runs_out += kRunWords;
    }
    if (!is_cluster(g)) return;
    // The characters after the first (combining), at most as many as a Cell shows; the first
    // is stored with the cells.
    if (counts_scratch_.empty()) counts_scratch_.resize(count_words(used) * 4);
    const std::u32string& cluster = clusters[cluster_index(g)];
    const std::size_t n = std::min<std::size_t>(cluster.size(), Cell::kMaxChars) - 1;
    chars[c] = cluster.front();
    extra_scratch_.insert(extra_scratch_.end(), cluster.begin() + 1, cluster.begin() + 1 + n);
    counts_scratch_[c] = static_cast<std::uint8_t>(n);
  };
  std::size_t c = 0;
  if (used > 0) take(c++);
#if defined(__SSE2__)
  const __m128i pen4 = load_cell(pen_mask);
  const __m128i all_ones = _mm_set1_epi32(-1);
  for (; c + 4 <= used; c += 4) {
    // Four cells in the run's pen, none a glyph of several characters: only their characters.
    const GridCell* p = cells + c;
    const __m128i a = load_cell(p[0]);
    const __m128i b = load_cell(p[1]);
    const __m128i d = load_cell(p[2]);
    const __m128i e = load_cell(p[3]);
    const __m128i first = load_cell(run);
    const __m128i changed =
        _mm_and_si128(_mm_or_si128(_mm_or_si128(_mm_xor_si128(a, first), _mm_xor_si128(b, first)),
                                   _mm_or_si128(_mm_xor_si128(d, first), _mm_xor_si128(e, first))),
                      pen4);
    // Characters 0-3 in one vector: (a.ch, b.ch, a.fg, b.fg), (d.ch, e.ch, ...), then the lows.
    const __m128i ch4 = _mm_unpacklo_epi64(_mm_unpacklo_epi32(a, b), _mm_unpacklo_epi32(d, e));
    // kClusterTag set and not kContinuationChar: a cluster (is_cluster).
    const int tagged = _mm_movemask_ps(_mm_castsi128_ps(ch4));
    const int continuation = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(ch4, all_ones)));
    if (all_zero(changed) && (tagged & ~continuation) == 0) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(chars + c), ch4);
      continue;
    }
    for (std::size_t k = c; k < c + 4; ++k) take(k);
  }
#endif
  for (; c < used; ++c) take(c);
  const auto runs = static_cast<std::size_t>(runs_out - runs_scratch_.data()) / kRunWords;
  const std::size_t extra = extra_scratch_.size();
  const std::size_t n = used + runs * kRunWords + (extra > 0 ? count_words(used) + extra : 0);
  LineRecord* line = place(n);
  if (line == nullptr) return;
  line->cols = static_cast<int>(row.size());
  line->cells = static_cast<std::uint32_t>(used);
  line->runs = static_cast<std::uint32_t>(runs);
  line->extra = static_cast<std::uint32_t>(extra);
  if (used == 0) return;
  char32_t* out = std::copy_n(chars, used, &ring_[line->at % capacity_]);
  out = std::copy_n(runs_scratch_.data(), runs * kRunWords, out);
  if (extra == 0) return;
  std::memcpy(out, counts_scratch_.data(), counts_scratch_.size());
  std::copy(extra_scratch_.begin(), extra_scratch_.end(), out + count_words(used));
}

Scrollback::LineRecord* Scrollback::place(std::size_t n) {
  if (limits_.max_lines == 0 || n * sizeof(char32_t) + sizeof(LineRecord) > limits_.max_bytes) {
    drop_all();
    return nullptr;
  }
  while (lines_.size() >= limits_.max_lines) drop_oldest();
  for (;;) {
    const std::size_t capacity = capacity_;
    std::uint64_t at = head_;
    if (capacity > 0 && at % capacity + n > capacity) at += capacity - at % capacity;
    const std::uint64_t used_after = at + n - tail_;
    const bool fits_ring = used_after <= capacity;
    const bool fits_bytes =
        used_after * sizeof(char32_t) + (lines_.size() + 1) * sizeof(LineRecord) <=
        limits_.max_bytes;
    if (fits_ring && fits_bytes) {
      lines_.push_back({head_, at, 0, 0, 0, 0});
      head_ = at + n;
      return &lines_.back();
    }
    if (!fits_ring && capacity < max_words()) {
      const std::size_t live = static_cast<std::size_t>(head_ - tail_);
      const std::size_t grown =
          std::min(max_words(), std::max({2 * capacity, kFirstRingWords, live + n}));
      if (head_ <= capacity && grown <= ring_.size()) {
        capacity_ = grown;  // nothing wrapped: every position p is below both, p % grown == p
      } else {
        relayout(grown);
      }
      continue;
    }
    if (lines_.empty()) return nullptr;  // unreachable: a line alone fits both bounds (above)
    drop_oldest();
  }
}

void Scrollback::relayout(std::size_t capacity) {
  // From 2 MiB on (where HugePageArray asks for huge pages) the array is made as large as the
  // bound at once and grows in place, only capacity_: on a virtual machine every fresh page
  // costs a fault and a shadow entry, and copying into a fresh array at each doubling touched
  // twice the memory. Below, small arrays, which the allocator reuses.
  const bool large = capacity * sizeof(char32_t) >= HugePageArray<char32_t>::kHugePage;
  HugePageArray<char32_t> fresh(large ? std::max(capacity, max_words()) : capacity);
  std::uint64_t at = 0;
  for (LineRecord& line : lines_) {
    const std::size_t n = line_words(line);
    if (n > 0) std::copy_n(words(line), n, &fresh[at]);
    line.start = line.at = at;
    at += n;
  }
  ring_ = std::move(fresh);
  capacity_ = capacity;
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
  capacity_ = 0;
  head_ = tail_ = 0;
}

void Scrollback::set_limits(ScrollbackLimits limits) {
  limits_ = limits;
  while (!lines_.empty() && (lines_.size() > limits_.max_lines || bytes() > limits_.max_bytes))
    drop_oldest();
  if (lines_.empty()) {
    drop_all();
  } else if (ring_.size() > max_words()) {
    relayout(std::min(capacity_, max_words()));
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

Scrollback::StoredLine Scrollback::view(const LineRecord& l) const {
  StoredLine v;
  if (l.cells == 0) return v;
  v.chars_ = words(l);
  v.cells_ = l.cells;
  v.runs_ = v.chars_ + l.cells;
  v.runs_count_ = l.runs;
  if (l.extra > 0) v.counts_ = reinterpret_cast<const std::uint8_t*>(v.runs_ + l.runs * kRunWords);
  for (std::size_t r = 0; r < l.runs; ++r)
    v.line_sized_ = v.line_sized_ || (v.runs_[r * kRunWords + 1] & attr::kLineMask) != 0;
  v.select_run(0);
  return v;
}

Scrollback::StoredLine Scrollback::stored_line(std::size_t line) const {
  return line < lines_.size() ? view(lines_[line]) : StoredLine();
}

std::size_t Scrollback::StoredLine::near_run(std::size_t i) const noexcept {
  auto start = [this](std::size_t r) { return static_cast<std::size_t>(runs_[r * kRunWords]); };
  auto holds = [&](std::size_t r) {
    return start(r) <= i && (r + 1 == runs_count_ || i < start(r + 1));
  };
  if (i >= run_end_ && run_index_ + 1 < runs_count_ && holds(run_index_ + 1)) return run_index_ + 1;
  if (i < run_begin_ && run_index_ > 0 && holds(run_index_ - 1)) return run_index_ - 1;
  // The last run starting at or before i (run 0 starts at cell 0).
  std::size_t lo = 0;
  std::size_t hi = runs_count_;
  while (hi - lo > 1) {
    const std::size_t mid = (lo + hi) / 2;
    if (start(mid) <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

void Scrollback::StoredLine::select_run(std::size_t r) const noexcept {
  run_index_ = r;
  run_begin_ = runs_[r * kRunWords];
  run_end_ = r + 1 < runs_count_ ? runs_[(r + 1) * kRunWords] : cells_;
}

bool Scrollback::StoredLine::same_pen_apart(std::size_t i, std::size_t j) const noexcept {
  // A reader compares each cell with the first of the stretch it draws (j), then reads that
  // one's pen: j's run is the one kept selected.
  const char32_t* b = run(j);
  const char32_t* a = i - run_begin_ < run_end_ - run_begin_ ? b : runs_ + near_run(i) * kRunWords;
  return a == b || (((a[1] ^ b[1]) & attr::kPenMask) == 0 && a[2] == b[2] && a[3] == b[3]);
}

void Scrollback::row(std::size_t line, std::span<Cell> out) const {
  const std::size_t n = stored_cells(line, out);
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(n), out.end(), Cell{});
}

// Cell `col` of `v`, in the pen of `run`; `extra` points at its combining characters, if any,
// and is moved past them.
void Scrollback::unpack(const StoredLine& v, std::size_t col, const char32_t* run,
                        const char32_t*& extra, Cell& c) {
  const char32_t ch = v.chars_[col];
  c.pen = pen_of(run[1], run[2], run[3]);
  c.dwl = (run[1] & attr::kDwl) != 0;
  c.dhl = static_cast<std::uint8_t>(run[1] >> attr::kDhlShift & 3u);
  c.width = static_cast<std::uint8_t>(v.width(col));
  c.nchars = 0;  // every field is set: `c` may hold another cell
  if (ch == 0) {
    c.kind = Cell::Kind::erased;
  } else if (ch == kContinuationChar) {
    c.kind = Cell::Kind::continuation;
  } else {
    c.kind = Cell::Kind::glyph;
    c.chars[0] = ch;
    const std::uint8_t more = v.counts_ != nullptr ? v.counts_[col] : 0;
    c.nchars = static_cast<std::uint8_t>(1 + more);
    std::copy_n(extra, more, c.chars.begin() + 1);
    extra += more;
  }
}

std::size_t Scrollback::stored_cells(std::size_t line, std::span<Cell> out) const {
  if (line >= lines_.size()) return 0;
  const LineRecord& l = lines_[line];
  const std::size_t n = std::min<std::size_t>(out.size(), l.cells);
  if (n == 0) return 0;
  const StoredLine v = view(l);
  const char32_t* extra = v.extra();
  for (std::size_t col = 0; col < n; ++col) unpack(v, col, v.run(col), extra, out[col]);
  return n;
}

Cell Scrollback::cell(std::size_t line, int col) const {
  Cell out;
  if (line >= lines_.size() || col < 0) return out;
  const auto at = static_cast<std::size_t>(col);
  if (at >= lines_[line].cells) return out;
  const StoredLine v = view(lines_[line]);
  const char32_t* extra = v.extra();
  if (v.counts_ != nullptr)
    for (std::size_t c = 0; c < at; ++c) extra += v.counts_[c];
  unpack(v, at, v.run(at), extra, out);
  return out;
}

}  // namespace backscroll::term
