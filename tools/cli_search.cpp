#include "tools/cli_search.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/term/plain_lines.hpp"
#include "tools/cli_output.hpp"
#include "tools/cli_pattern.hpp"
#include "tools/cli_ring_follower.hpp"

namespace backscroll::cli {
namespace {

using control::Json;

// grep's exit codes: a line matched, none did, something went wrong.
constexpr int kMatched = 0;
constexpr int kNoMatch = 1;
constexpr int kTrouble = 2;

// Raw bytes asked of the engine per `history` call.
constexpr std::uint64_t kPageBytes = 4u << 20;
// Progress on stderr (a terminal only) once the range is at least this large, every this much.
constexpr std::uint64_t kProgressBytes = 64u << 20;

// A line as printed: its cursors and text.
struct Line {
  Cursor begin;
  Cursor end;
  std::string text;
};

// Prints matches with their context, grep style (or one JSON object per match).
class Printer {
 public:
  explicit Printer(const SearchArgs& args) : args_(args) {}

  void line(const term::PlainLines& lines, const term::PlainLine& l,
            std::optional<std::pair<std::size_t, std::size_t>> match) {
    // Copied only when it may be printed: a match, or context around one.
    if (!match && args_.context == 0) return;
    Line copy{l.begin, l.end, std::string(lines.text_of(l))};
    if (match) {
      ++matches_;
      flush();  // a match inside the one before's after-context: that one ends here
      if (!args_.json && printed_any_ && args_.context > 0 && !adjacent(copy.begin)) {
        std::fputs("--\n", stdout);
      }
      pending_ = Pending{std::move(copy), *match, {before_.begin(), before_.end()}, {}};
      before_.clear();
      if (args_.context == 0) flush();
      return;
    }
    if (pending_ && pending_->after.size() < args_.context) {
      pending_->after.push_back(std::move(copy));
      if (pending_->after.size() == args_.context) flush();
      return;
    }
    before_.push_back(std::move(copy));
    if (before_.size() > args_.context) before_.pop_front();
  }
  void finish() { flush(); }
  std::size_t matches() const noexcept { return matches_; }

 private:
  struct Pending {
    Line line;
    std::pair<std::size_t, std::size_t> match;
    std::vector<Line> before;
    std::vector<Line> after;
  };
  bool adjacent(Cursor begin) const {
    const Cursor first = before_.empty() ? begin : before_.front().begin;
    return first <= last_end_;
  }
  void flush() {
    if (!pending_) return;
    Pending& p = *pending_;
    if (args_.json) {
      const auto lines = [](const std::vector<Line>& v) {
        Json out = Json::array();
        for (const Line& l : v) {
          out.push_back({{"cursor", value(l.begin)}, {"end", value(l.end)}, {"line", l.text}});
        }
        return out;
      };
      Json out{{"actor", args_.actor},
               {"cursor", value(p.line.begin)},
               {"end", value(p.line.end)},
               {"line", p.line.text},
               {"match", {{"start", p.match.first}, {"end", p.match.second}}}};
      if (args_.context > 0) {
        out["before"] = lines(p.before);
        out["after"] = lines(p.after);
      }
      const std::string text = out.dump(-1, ' ', false, Json::error_handler_t::replace);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
    } else {
      for (const Line& l : p.before) print(l, '-');
      print(p.line, ':');
      for (const Line& l : p.after) print(l, '-');
    }
    last_end_ = p.after.empty() ? p.line.end : p.after.back().end;
    printed_any_ = true;
    pending_.reset();
  }
  static void print(const Line& l, char separator) {
    std::printf("%llu%c", static_cast<unsigned long long>(value(l.begin)), separator);
    std::fwrite(l.text.data(), 1, l.text.size(), stdout);
    std::fputc('\n', stdout);
  }

  const SearchArgs& args_;
  std::deque<Line> before_;
  std::optional<Pending> pending_;
  Cursor last_end_{0};
  bool printed_any_ = false;
  std::size_t matches_ = 0;
};

// Matches every completed line of `lines` (one report per line), in order.
void match_lines(Pattern& pattern, const term::PlainLines& lines, Printer& printer,
                 const SearchArgs& args) {
  const std::string_view text = lines.text();
  const std::vector<term::PlainLine>& all = lines.lines();
  std::size_t next = 0;  // the first line not reported yet
  while (next < all.size()) {
    if (args.max_count && printer.matches() >= *args.max_count) {
      // Only the after-context of the last match is still wanted.
      for (; next < all.size(); ++next) printer.line(lines, all[next], std::nullopt);
      return;
    }
    // One search over the rest of the page's text finds the next matching line.
    const auto found = pattern.find(text, all[next].offset, text.size());
    const std::size_t at = found ? found->first : text.size();
    // The line holding the match start (lines before it did not match).
    auto it = std::upper_bound(
        all.begin() + static_cast<std::ptrdiff_t>(next), all.end(), at,
        [](std::size_t offset, const term::PlainLine& l) { return offset < l.offset; });
    const std::size_t hit = found ? static_cast<std::size_t>(it - all.begin()) - 1 : all.size();
    for (; next < hit; ++next) printer.line(lines, all[next], std::nullopt);
    if (!found) return;
    const term::PlainLine& l = all[hit];
    std::optional<std::pair<std::size_t, std::size_t>> in_line;
    if (found->second <= l.offset + l.length) {
      in_line = std::pair(found->first - l.offset, found->second - l.offset);
    } else if (auto again = pattern.find(text, l.offset, l.offset + l.length)) {
      // The match ran past the line's end (a pattern that matches '\n'): the line alone.
      in_line = std::pair(again->first - l.offset, again->second - l.offset);
    }
    printer.line(lines, l, in_line);
    next = hit + 1;
  }
}

std::optional<std::uint64_t> committed_of(control::ControlClient& client, const std::string& actor,
                                          Error& error) {
  auto status = client.call("status", {{"actor", actor}});
  if (!status) {
    error = status.error();
    return std::nullopt;
  }
  const Json actors = status->header.value("actors", Json::array());
  return actors.empty() ? 0 : actors.front().value("committed", std::uint64_t{0});
}

}  // namespace

int run_search(const EngineTarget& engine, const SearchArgs& args) {
  const auto trouble = [](const Error& e) {
    report(e);
    return kTrouble;
  };
  if (args.from && args.to && *args.to < *args.from) {
    return report_usage("search: --to is before --from");
  }
  auto pattern = Pattern::compile(args.pattern, args.ignore_case);
  if (!pattern) return report_usage("search: " + pattern.error().message);
  auto client = engine.connect();
  if (!client) return trouble(client.error());
  Error error;
  const auto committed = committed_of(*client, args.actor, error);
  if (!committed) return trouble(error);
  const Cursor to = args.to ? *args.to : Cursor{*committed};
  if (value(to) > *committed) {
    return trouble(Error{Errc::cursor_in_future,
                         "cursor " + std::to_string(value(to)) + " is past the committed cursor " +
                             std::to_string(*committed),
                         *committed});
  }
  Cursor from = args.from.value_or(Cursor{0});
  const bool progress = ::isatty(2) && to - std::min(from, to) >= kProgressBytes;
  const Cursor first = from;
  std::uint64_t next_progress = kProgressBytes;
  term::PlainLines lines(from);
  Printer printer(args);
  // Bytes still in the ring are read from shared memory (copied out, then confirmed: never
  // torn); older ones (the completed-session cache, the transcript) through `history`.
  auto ring = open_ring(engine.places, args.actor);
  std::string page;
  while (from < to) {
    const std::uint64_t want = std::min<std::uint64_t>(kPageBytes, to - from);
    Cursor next = from;
    if (ring && from >= ring->oldest()) {
      page.resize(want);
      if (auto end = ring->copy(from, std::as_writable_bytes(std::span(page)))) next = *end;
    }
    if (next > from) {
      page.resize(next - from);
    } else {
      auto r = client->call(
          "history",
          {{"actor", args.actor}, {"from", value(from)}, {"to", value(to)}, {"max_bytes", want}});
      if (!r) {
        const Error& e = r.error();
        // Not retained (before the oldest byte kept, or a cleared stretch) or damaged: the
        // search goes on from the next byte that is; a line never spans the hole.
        const bool skip = (e.code == Errc::cursor_expired || e.code == Errc::data_lost) &&
                          e.cursor && Cursor{*e.cursor} > from;
        if (!skip) return trouble(e);
        if (e.code == Errc::data_lost || args.from) warn("search: skipped " + e.message);
        lines.finish();
        match_lines(**pattern, lines, printer, args);
        from = min(Cursor{*e.cursor}, to);
        lines = term::PlainLines(from);
        continue;
      }
      const auto end = r->header.find("to");
      if (end == r->header.end() || !end->is_number_unsigned() ||
          Cursor{end->get<std::uint64_t>()} <= from) {
        break;
      }
      next = Cursor{end->get<std::uint64_t>()};
      page = std::move(r->payload);
    }
    lines.feed(page);
    match_lines(**pattern, lines, printer, args);
    lines.clear();
    from = next;
    if (progress && from - first >= next_progress) {
      std::fprintf(stderr, "\rsearch: %llu of %llu MB",
                   static_cast<unsigned long long>((from - first) >> 20),
                   static_cast<unsigned long long>((to - first) >> 20));
      next_progress += kProgressBytes;
    }
    if (args.max_count && printer.matches() >= *args.max_count) break;
  }
  lines.finish();
  match_lines(**pattern, lines, printer, args);
  printer.finish();
  if (progress) std::fputs("\r\x1b[K", stderr);
  std::fflush(stdout);
  return printer.matches() > 0 ? kMatched : kNoMatch;
}

}  // namespace backscroll::cli
