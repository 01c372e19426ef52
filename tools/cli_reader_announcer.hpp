// ReaderAnnouncer: a CLI reader of a ring (tail -f) saying who it is and how far it has read
// (the engine's `reader` op, docs/protocol.md), so `status` and `backscroll top` show it and
// its lag. At most one report per kInterval, none per byte; best effort: when no engine
// answers, answers late (kReplyTimeout) or refuses, the reader reads on and tries again a while
// later. It never starts an engine.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "shm/control_client.hpp"
#include "shm/cursor.hpp"
#include "shm/places.hpp"

namespace backscroll::cli {

class ReaderAnnouncer {
 public:
  static constexpr std::chrono::seconds kInterval{1};
  // How long a report waits for the engine's answer.
  static constexpr std::chrono::milliseconds kReplyTimeout{250};

  ReaderAnnouncer(Places places, std::string actor, std::string name)
      : places_(std::move(places)), actor_(std::move(actor)), name_(std::move(name)) {}

  // Reports `cursor` if the last report is kInterval old (or none was made yet).
  void report(Cursor cursor);

 private:
  Places places_;
  std::string actor_;
  std::string name_;
  std::optional<control::ControlClient> client_;
  std::optional<std::chrono::steady_clock::time_point> last_;
};

}  // namespace backscroll::cli
