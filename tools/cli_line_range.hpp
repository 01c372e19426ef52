// `history --lines A..B`: a range of lines of a byte stream, selected while the stream passes
// (docs/cli.md). Lines are numbered from 1; a negative number counts back from the last line
// (-1 is the last); either bound may be left out (`..20`, `-50..`); a line ends after its '\n',
// and a last line without one counts too. A range of positive numbers streams; a negative
// bound keeps only the lines whose fate waits on the end (|bound| of them), never the stream.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace backscroll::cli {

struct LineRange {
  std::optional<std::int64_t> first;  // nullopt: from line 1
  std::optional<std::int64_t> last;   // nullopt: to the last line
};

// "A..B", "A..", "..B" or "N" (that line alone); A and B are non-zero decimals, maybe negative,
// and B is not before A when both have the same sign. nullopt when malformed.
std::optional<LineRange> parse_line_range(std::string_view text);

class LineSelector {
 public:
  explicit LineSelector(LineRange range);

  // Appends to `out` what of `bytes` is known to be selected.
  void feed(std::string_view bytes, std::string& out);
  // The stream ended: appends the rest of the selection.
  void finish(std::string& out);
  // Nothing more can be selected (past a positive last line): the caller may stop reading.
  bool done() const;

 private:
  struct Line {
    std::int64_t number;
    std::string text;
  };
  bool streams() const;
  void line_complete(std::string& out);
  bool selected(std::int64_t number, std::int64_t total) const;

  LineRange range_;
  std::int64_t number_ = 1;   // the line the next byte belongs to
  std::string current_;       // that line's bytes so far (buffered mode)
  std::deque<Line> pending_;  // complete lines whose fate waits on the total (buffered mode)
};

}  // namespace backscroll::cli
