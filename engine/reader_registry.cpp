#include "engine/reader_registry.hpp"

#include <algorithm>

namespace backscroll::engine {

Result<void> ReaderRegistry::report(ConnectionId connection, const AnnouncedReader& reader) {
  const std::string& name = reader.name;
  if (name.empty() || name.size() > kMaxNameBytes) {
    return fail(Errc::bad_request,
                "\"name\" must be 1 to " + std::to_string(kMaxNameBytes) + " bytes");
  }
  if (std::any_of(name.begin(), name.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return fail(Errc::bad_request, "\"name\" holds a control character");
  }
  Key key{connection, reader.actor, name};
  if (const auto it = entries_.find(key); it != entries_.end()) {
    it->second.cursor = reader.cursor;
    it->second.reported_ms = reader.reported_ms;
    return {};
  }
  const auto mine = std::count_if(entries_.begin(), entries_.end(),
                                  [&](const auto& e) { return e.first.connection == connection; });
  if (static_cast<std::size_t>(mine) >= kMaxPerConnection) {
    return fail(Errc::too_large, "this connection already announced " +
                                     std::to_string(kMaxPerConnection) + " readers");
  }
  if (entries_.size() >= kMaxEntries) {
    return fail(Errc::too_large,
                "the engine already knows " + std::to_string(kMaxEntries) + " readers");
  }
  AnnouncedReader entry = reader;
  entry.since_ms = reader.reported_ms;
  entries_.emplace(std::move(key), std::move(entry));
  return {};
}

void ReaderRegistry::drop_connection(ConnectionId connection) {
  std::erase_if(entries_, [connection](const auto& e) { return e.first.connection == connection; });
}

void ReaderRegistry::drop_actor(const std::string& actor) {
  std::erase_if(entries_, [&actor](const auto& e) { return e.first.actor == actor; });
}

std::vector<AnnouncedReader> ReaderRegistry::of_actor(const std::string& actor) const {
  std::vector<AnnouncedReader> out;
  for (const auto& [key, reader] : entries_) {
    if (key.actor == actor) out.push_back(reader);
  }
  std::stable_sort(out.begin(), out.end(), [](const AnnouncedReader& a, const AnnouncedReader& b) {
    return a.since_ms < b.since_ms;
  });
  return out;
}

}  // namespace backscroll::engine
