#include "engine/snapshot_request.hpp"

#include <algorithm>
#include <string>

#include "engine/request_fields.hpp"

namespace backscroll::engine {

using control::Json;

Result<SnapshotAsk> parse_snapshot_ask(const Json& request, std::uint64_t scrollback) {
  SnapshotAsk ask;
  ask.id = request.contains("id") ? request["id"] : Json(nullptr);
  auto lines = uint_field(request, "scrollback", scrollback);
  if (!lines) return tl::unexpected(lines.error());
  if (*lines > kMaxSnapshotScrollback) {
    return fail(Errc::too_large,
                "\"scrollback\" exceeds " + std::to_string(kMaxSnapshotScrollback));
  }
  ask.options.scrollback_lines = *lines;
  if (const auto canvas = request.find("canvas"); canvas != request.end()) {
    if (*canvas == "alternate") {
      ask.options.canvas = term::SnapshotCanvas::alternate;
    } else if (*canvas != "fresh") {
      return fail(Errc::bad_request, "\"canvas\" must be \"fresh\" or \"alternate\"");
    }
  }
  if (const auto timing = request.find("timing"); timing != request.end()) {
    if (!timing->is_boolean()) return fail(Errc::bad_request, "\"timing\" must be a boolean");
    ask.timing = timing->get<bool>();
  }
  if (const auto formats = request.find("formats"); formats != request.end()) {
    if (!formats->is_array()) return fail(Errc::bad_request, "\"formats\" must be an array");
    if (std::find(formats->begin(), formats->end(), Json("snapshot_v1")) == formats->end()) {
      ask.raw_reason = "client";
    }
  }
  return ask;
}

bool asks_for_past(const Json& request) {
  for (const char* key : {"at", "at_event", "at_time_ms"}) {
    if (const auto it = request.find(key); it != request.end() && !it->is_null()) return true;
  }
  return false;
}

Json snapshot_v1_fields(std::uint64_t epoch, const term::MirrorSnapshot& taken) {
  const term::Snapshot& snap = taken.snapshot;
  return Json{{"epoch", hex64(epoch)},
              {"cols", snap.cols},
              {"rows", snap.rows},
              {"format", "snapshot_v1"},
              {"cursor", value(taken.cursor)},
              {"bytes", snap.bytes.size()},
              {"scrollback_lines", snap.scrollback_lines}};
}

}  // namespace backscroll::engine
