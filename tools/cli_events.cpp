#include "tools/cli_events.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "tools/cli_output.hpp"
#include "tools/cli_time.hpp"

namespace backscroll::cli {
namespace {

using control::Json;

constexpr std::uint64_t kPageEvents = 1000;
constexpr std::chrono::milliseconds kFollowSlice{1000};

std::string field_text(const Json& event, const char* key) {
  const auto it = event.find(key);
  if (it == event.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string details(const Json& e) {
  const std::string kind = e.value("kind", "");
  if (kind == "spawn") {
    std::vector<std::string> argv;
    for (const Json& a : e.value("argv", Json::array())) {
      if (a.is_string()) argv.push_back(a.get<std::string>());
    }
    return "session " + field_text(e, "session") + " pid " + field_text(e, "pid") + " " +
           field_text(e, "cols") + "x" + field_text(e, "rows") + " in " + field_text(e, "cwd") +
           ": " + shell_join(argv) + (e.value("argv_truncated", false) ? " ..." : "");
  }
  if (kind == "resize" || kind == "keyframe") {
    return field_text(e, "cols") + "x" + field_text(e, "rows");
  }
  if (kind == "title") return shell_quote(e.value("title", ""));
  if (kind == "bell" || kind == "dropped") return "x" + field_text(e, "count");
  if (kind == "command_end") return "exit status " + field_text(e, "exit_status");
  if (kind == "status") {
    return field_text(e, "previous") + " -> " + field_text(e, "status") +
           (e.contains("agent") && e["agent"].is_string() ? " (" + field_text(e, "agent") + ")"
                                                          : "");
  }
  if (kind == "exit") {
    const std::int64_t signal = e.value("term_signal", 0);
    return "session " + field_text(e, "session") +
           (signal > 0 ? " killed by signal " + std::to_string(signal)
                       : " exit code " + field_text(e, "exit_code"));
  }
  if (kind == "seal") {
    return "session " + field_text(e, "session") +
           (e.value("durable", false) ? " (synced to disk)" : "");
  }
  return {};
}

Result<void> print(const Json& event, bool json) {
  return write_all(STDOUT_FILENO, (json ? event.dump() : describe_event(event)) + "\n");
}

}  // namespace

std::string describe_event(const Json& event) {
  std::string line = format_time(event.value("time_ms", std::int64_t{0})) + "  " +
                     field_text(event, "cursor") + "  " + field_text(event, "kind");
  const std::string more = details(event);
  if (!more.empty()) line += "  " + more;
  return line;
}

int run_events(const EngineTarget& engine, const EventsArgs& args) {
  auto client = engine.connect();
  if (!client) return report(client.error());
  // Subscribed before the first page: an event recorded while the pages are read comes as a
  // frame, and its seq tells whether a page held it already.
  if (args.follow) {
    if (auto r = client->call("subscribe"); !r) return report(r.error());
  }
  Json query{{"actor", args.actor}, {"limit", kPageEvents}};
  if (args.from) query["from"] = value(*args.from);
  if (args.since_ms) query["since_ms"] = *args.since_ms;
  if (!args.kinds.empty()) query["kinds"] = args.kinds;
  std::uint64_t last_seq = 0;
  for (;;) {
    auto page = client->call("events", query);
    if (!page) return report(page.error());
    const Json& h = page->header;
    last_seq = std::max(last_seq, h.value("last_seq", std::uint64_t{0}));
    const Json events = h.value("events", Json::array());
    for (const Json& e : events) {
      if (auto w = print(e, args.json); !w) return report(w.error());
    }
    if (!h.value("more", false) || events.empty()) break;
    // Several events may share the last cursor: the next page starts at it and passes over
    // the ones printed (`skip` counts matching events from `from`).
    const std::uint64_t cursor = events.back().value("cursor", std::uint64_t{0});
    std::uint64_t printed_at_cursor = 0;
    for (const Json& e : events) {
      if (e.value("cursor", std::uint64_t{0}) == cursor) ++printed_at_cursor;
    }
    const bool same_cursor = query.value("from", std::uint64_t{0}) == cursor;
    query["skip"] = (same_cursor ? query.value("skip", std::uint64_t{0}) : 0) + printed_at_cursor;
    query["from"] = cursor;
  }
  if (!args.follow) return kExitOk;

  for (;;) {
    auto frame = client->next_event(kFollowSlice);
    if (!frame) return report(frame.error());
    if (!*frame) continue;
    const Json& e = (*frame)->header;
    if (e.value("actor", "") != args.actor) continue;
    const std::string kind = e.value("event", "");
    if (kind == "deleted") return kExitOk;
    if (kind != "track" || e.value("seq", std::uint64_t{0}) <= last_seq) continue;
    if (!args.kinds.empty() &&
        std::find(args.kinds.begin(), args.kinds.end(), e.value("kind", "")) == args.kinds.end()) {
      continue;
    }
    Json event = e;
    event.erase("event");
    if (auto w = print(event, args.json); !w) return report(w.error());
  }
}

}  // namespace backscroll::cli
