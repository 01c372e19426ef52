#include "tools/cli_capture.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "engine/term/mirror.hpp"
#include "tools/cli_output.hpp"

namespace backscroll::cli {
namespace {

using control::Json;

constexpr std::size_t kMaxHistoryLines = 10'000;  // the engine's bound per snapshot

// A line number as capture takes it; nullopt for "-".
std::optional<long long> line_number(const std::string& text) {
  if (text == "-") return std::nullopt;
  long long n = 0;
  std::from_chars(text.data(), text.data() + text.size(), n);
  return n;
}

}  // namespace

Result<CapturedScreen> capture_screen(const EngineTarget& engine, const std::string& actor,
                                      std::size_t history_lines, bool sgr, const PastPoint& past) {
  auto client = engine.connect();
  if (!client) return tl::unexpected(client.error());
  Json request{{"actor", actor},
               {"formats", Json::array({"snapshot_v1"})},
               {"scrollback", std::min(history_lines, kMaxHistoryLines)}};
  past.add_to(request);
  auto answer = client->call("snapshot", std::move(request));
  if (!answer) return tl::unexpected(answer.error());
  const Json& h = answer->header;
  if (h.value("format", "") != "snapshot_v1") {
    // The engine's raw_replay: it cannot reproduce that screen exactly (docs/snapshot.md,
    // "Fallbacks"); the raw output is still there.
    return fail(Errc::data_lost, "no exact screen of '" + actor + "' there (" +
                                     h.value("reason", std::string("?")) +
                                     "); `backscroll tail` writes its raw output");
  }
  term::ScrollbackLimits limits;
  limits.max_lines = kMaxHistoryLines;
  term::Mirror mirror(Cursor{0}, h.value("cols", std::uint16_t{80}),
                      h.value("rows", std::uint16_t{24}), limits);
  mirror.feed(answer->payload);
  return CapturedScreen{term::screen_lines(mirror.screen(), h.value("scrollback_lines", 0u), sgr),
                        Cursor{h.value("cursor", std::uint64_t{0})}};
}

int run_capture(const EngineTarget& engine, const CaptureArgs& args) {
  const auto start = args.start.empty() ? std::optional<long long>(0) : line_number(args.start);
  const auto end = args.end.empty() ? std::nullopt : line_number(args.end);
  // History lines needed: from the start line (or all of them) on.
  std::size_t history = 0;
  if (!start) history = kMaxHistoryLines;
  else if (*start < 0) history = static_cast<std::size_t>(-*start);
  auto captured = capture_screen(engine, args.actor, history, args.sgr, args.past);
  if (!captured) return report(captured.error());
  const term::ScreenLines& lines = captured->lines;
  const auto held = static_cast<long long>(lines.history.size());
  const auto rows = static_cast<long long>(lines.screen.size());
  // Numbered from -held (the oldest history line) to rows - 1, clamped as tmux does.
  const long long first = std::clamp(start.value_or(-held), -held, rows - 1);
  const long long last = std::clamp(end.value_or(rows - 1), -held, rows - 1);
  std::string out;
  for (long long n = first; n <= last; ++n) {
    out += n < 0 ? lines.history[static_cast<std::size_t>(held + n)]
                 : lines.screen[static_cast<std::size_t>(n)];
    out += '\n';
  }
  if (auto w = write_all(STDOUT_FILENO, out); !w) return report(w.error());
  return kExitOk;
}

}  // namespace backscroll::cli
