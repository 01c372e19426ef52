#include "tools/cli_top.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <map>
#include <string>

#include <fmt/format.h>

#include "tools/cli_output.hpp"
#include "tools/cli_raw_terminal.hpp"

namespace backscroll::cli {
namespace {

using control::Json;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) { g_stop = 1; }

// 0 B, 512 B, 12.3 KiB, 4.5 MiB, 2.0 GiB.
std::string size_text(double bytes) {
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1024.0 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024);
  if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024));
}

std::string number_text(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return "-";
  return size_text(it->get<double>());
}

std::uint64_t number(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

// One frame from a status reply: each actor's figures, its output rate from the frame before.
struct TopFrame {
  Json view;         // what --json prints
  std::string text;  // the tables
};

class TopView {
 public:
  TopFrame frame(const Json& reply) {
    const auto now = Clock::now();
    const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    Json actors = Json::array();
    Table table({"NAME", "STATE", "OUT/S", "COMMITTED", "MIRROR LAG", "WRITER LAG", "READERS",
                 "MEMORY USED", "RESERVED"});
    Table readers({"READER", "PID", "ACTOR", "LAG", "BEHIND", "REPORTED"});
    bool any_reader = false;
    std::map<std::string, Sample> seen;
    for (const Json& a : reply.value("actors", Json::array())) {
      const std::string name = a.value("name", "");
      const std::uint64_t committed = number(a, "committed");
      Json rate = nullptr;
      if (const auto before = samples_.find(name); before != samples_.end()) {
        const double seconds = std::chrono::duration<double>(now - before->second.at).count();
        if (seconds > 0 && committed >= before->second.committed)
          rate = std::round(static_cast<double>(committed - before->second.committed) / seconds);
      }
      seen[name] = {committed, now};
      const Json memory = a.value("memory", Json::object());
      const Json used = memory.value("used", Json::object());
      const Json reserved = memory.value("reserved", Json::object());
      const Json listed = a.value("readers", Json::array());
      actors.push_back({{"name", name},
                        {"state", a.value("state", "")},
                        {"committed", committed},
                        {"bytes_per_s", rate},
                        {"mirror_lag", a.value("mirror_lag", Json(nullptr))},
                        {"transcript_lag", a.value("transcript_lag", Json(nullptr))},
                        {"memory",
                         {{"used", used.value("total", Json(nullptr))},
                          {"reserved", reserved.value("total", Json(nullptr))}}},
                        {"readers", listed}});
      table.add({name, a.value("state", ""),
                 rate.is_null() ? "-" : size_text(rate.get<double>()) + "/s",
                 std::to_string(committed), number_text(a, "mirror_lag"),
                 number_text(a, "transcript_lag"), std::to_string(listed.size()),
                 number_text(used, "total"), number_text(reserved, "total")});
      for (const Json& r : listed) {
        any_reader = true;
        const Json lag_ms = r.value("lag_ms", Json(nullptr));
        const std::int64_t reported = r.value("reported_ms", std::int64_t{0});
        readers.add(
            {r.value("name", ""), std::to_string(r.value("pid", 0)), name,
             number_text(r, "lag_bytes"),
             lag_ms.is_number() ? fmt::format("{:.1f} s", lag_ms.get<double>() / 1000) : "-",
             fmt::format(
                 "{:.1f} s ago",
                 static_cast<double>(std::max<std::int64_t>(0, now_ms - reported)) / 1000)});
      }
    }
    samples_ = std::move(seen);
    const Json memory = reply.value("memory", Json::object());
    std::time_t wall = std::time(nullptr);
    char clock[16] = "";
    std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&wall));
    TopFrame out;
    out.view = {{"time_ms", now_ms}, {"memory", memory}, {"actors", std::move(actors)}};
    const std::size_t count = out.view["actors"].size();
    out.text = fmt::format("backscroll top  {}  {} actor{}  memory: {} reserved of {}, {} used\n\n",
                           clock, count, count == 1 ? "" : "s", number_text(memory, "reserved"),
                           number_text(memory, "budget"), number_text(memory, "used")) +
               table.render();
    if (any_reader) out.text += "\n" + readers.render();
    return out;
  }

 private:
  struct Sample {
    std::uint64_t committed = 0;
    Clock::time_point at;
  };
  std::map<std::string, Sample> samples_;
};

// Waits `seconds` or until a key (q quits) or a signal; false when it is time to stop.
bool wait_between_frames(double seconds, bool keys) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (!g_stop) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return true;
    pollfd in{STDIN_FILENO, POLLIN, 0};
    const int ready = ::poll(&in, keys ? 1 : 0, static_cast<int>(left.count()));
    if (ready > 0 && keys) {
      char key = 0;
      if (::read(STDIN_FILENO, &key, 1) == 1 && (key == 'q' || key == 'Q' || key == 3))
        return false;
    }
  }
  return false;
}

}  // namespace

int run_top(const EngineTarget& engine, const TopArgs& args) {
  if (!(args.delay_seconds >= kMinTopDelaySeconds)) {
    return report_usage("top: -d must be at least " + fmt::format("{}", kMinTopDelaySeconds));
  }
  if (args.frames && *args.frames < 1) return report_usage("top: -n must be at least 1");
  auto client = engine.connect();
  if (!client) return report(client.error());

  struct sigaction stop {};
  stop.sa_handler = on_stop_signal;  // no SA_RESTART: poll returns at once
  for (const int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &stop, nullptr);

  // On a terminal: drawn in place on the alternate screen, keys read raw (q quits).
  const bool live = !args.json && ::isatty(STDOUT_FILENO);
  RawTerminal keys(STDIN_FILENO);
  if (live && ::isatty(STDIN_FILENO)) (void)keys.enter();
  if (live) (void)write_all(STDOUT_FILENO, "\x1b[?1049h\x1b[?25l");
  const auto restore = [&] {
    if (live) (void)write_all(STDOUT_FILENO, "\x1b[?25h\x1b[?1049l");
    keys.leave();
  };

  TopView view;
  int status = kExitOk;
  for (int shown = 0; !g_stop; ++shown) {
    auto reply = client->call("status");
    if (!reply) {
      restore();
      return report(reply.error());
    }
    const TopFrame frame = view.frame(reply->header);
    std::string out;
    if (args.json) {
      out = frame.view.dump() + "\n";
    } else if (live) {
      // Rows end with CR LF: the terminal may be raw.
      out = "\x1b[H\x1b[2J";
      for (const char c : frame.text) {
        if (c == '\n') out += '\r';
        out += c;
      }
    } else {
      out = (shown > 0 ? "\n" : "") + frame.text;
    }
    if (auto w = write_all(STDOUT_FILENO, out); !w) {
      status = report(w.error());
      break;
    }
    if (args.frames && shown + 1 >= *args.frames) break;
    if (!wait_between_frames(args.delay_seconds, keys.active())) break;
  }
  restore();
  return status;
}

}  // namespace backscroll::cli
