#include "tools/cli_line_range.hpp"

#include "tools/cli_args.hpp"

namespace backscroll::cli {
namespace {

std::optional<std::int64_t> parse_line_number(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  const auto magnitude = parse_u64(text);
  if (!magnitude || *magnitude == 0 || *magnitude > (std::uint64_t{1} << 62)) return std::nullopt;
  const auto n = static_cast<std::int64_t>(*magnitude);
  return negative ? -n : n;
}

}  // namespace

std::optional<LineRange> parse_line_range(std::string_view text) {
  const auto dots = text.find("..");
  if (dots == std::string_view::npos) {
    const auto n = parse_line_number(text);
    if (!n) return std::nullopt;
    return LineRange{n, n};
  }
  LineRange range;
  const std::string_view first = text.substr(0, dots);
  const std::string_view last = text.substr(dots + 2);
  if (first.empty() && last.empty()) return std::nullopt;
  if (!first.empty() && !(range.first = parse_line_number(first))) return std::nullopt;
  if (!last.empty() && !(range.last = parse_line_number(last))) return std::nullopt;
  if (range.first && range.last && (*range.first > 0) == (*range.last > 0) &&
      *range.last < *range.first) {
    return std::nullopt;
  }
  return range;
}

LineSelector::LineSelector(LineRange range) : range_(range) {}

bool LineSelector::streams() const {
  return range_.first.value_or(1) > 0 && range_.last.value_or(1) > 0;
}

bool LineSelector::done() const { return streams() && range_.last && number_ > *range_.last; }

bool LineSelector::selected(std::int64_t number, std::int64_t total) const {
  const auto resolve = [total](std::int64_t n) { return n > 0 ? n : total + 1 + n; };
  return number >= resolve(range_.first.value_or(1)) && number <= resolve(range_.last.value_or(-1));
}

void LineSelector::feed(std::string_view bytes, std::string& out) {
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    const std::string_view piece =
        bytes.substr(0, newline == std::string_view::npos ? bytes.size() : newline + 1);
    bytes.remove_prefix(piece.size());
    if (streams()) {
      if (number_ >= range_.first.value_or(1) && !done()) out.append(piece);
    } else {
      current_.append(piece);
    }
    if (piece.back() == '\n') line_complete(out);
  }
}

void LineSelector::line_complete(std::string& out) {
  const std::int64_t number = number_++;
  if (streams()) return;
  pending_.push_back({number, std::move(current_)});
  current_.clear();
  if (range_.first.value_or(1) < 0) {
    // Only the last |first| lines can be selected.
    if (pending_.size() > static_cast<std::size_t>(-*range_.first)) pending_.pop_front();
    return;
  }
  // A positive first and a negative last: a line with |last| lines after it is selected.
  if (pending_.front().number < range_.first.value_or(1)) {
    pending_.pop_front();
    return;
  }
  if (pending_.size() >= static_cast<std::size_t>(-*range_.last)) {
    out.append(pending_.front().text);
    pending_.pop_front();
  }
}

void LineSelector::finish(std::string& out) {
  if (streams()) return;
  std::int64_t total = number_ - 1;
  if (!current_.empty()) {
    pending_.push_back({number_, std::move(current_)});
    current_.clear();
    total = number_;
  }
  for (const Line& line : pending_) {
    if (selected(line.number, total)) out.append(line.text);
  }
  pending_.clear();
}

}  // namespace backscroll::cli
