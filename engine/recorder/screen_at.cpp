#include "engine/recorder/screen_at.hpp"

#include <algorithm>

namespace backscroll::recorder {
namespace {

// Bytes fed between two looks ahead.
constexpr std::uint64_t kFeedBytes = 64 * 1024;

}  // namespace

term::MirrorSnapshot screen_at(const ScreenAt& request) {
  const Keyframe& keyframe = *request.keyframe;
  // A keyframe draws its history at its own width; the mirror kept each line as wide as it was
  // written. Wider than that later, the replay would show those lines cut: declared, not guessed
  // (the mirror thread takes a keyframe after every resize, so only a resize it could not take
  // one at leads here).
  const bool widens = std::any_of(request.changes.begin(), request.changes.end(),
                                  [&](const SizeChange& c) { return c.cols > keyframe.cols; });
  if (widens && keyframe.history_lines > 0) {
    term::MirrorSnapshot out;
    out.cursor = keyframe.cursor + request.bytes.size();
    out.snapshot.cols = request.changes.back().cols;
    out.snapshot.rows = request.changes.back().rows;
    out.snapshot.fallback_reason = "widened_since_keyframe";
    return out;
  }
  // The scratch mirror's positions: the keyframe's bytes first, then the stream's, so stream
  // cursor c is position base + (c - keyframe.cursor).
  const std::uint64_t base = keyframe.snapshot.size();
  // History past what the answer draws is never seen: the scratch mirror keeps no more, so its
  // look ahead jumps over every stretch of scrolling text older than that (Mirror::skip_ahead,
  // exact), as the live mirror does during a flood.
  term::ScrollbackLimits limits = request.limits;
  limits.max_lines =
      std::max<std::size_t>(1, std::min(limits.max_lines, request.options.scrollback_lines));
  term::Mirror mirror(Cursor{0}, keyframe.cols, keyframe.rows, limits);
  mirror.feed(keyframe.snapshot);
  const std::string_view bytes = request.bytes;
  std::uint64_t fed = 0;  // stream bytes parsed or jumped over
  const auto feed_to = [&](std::uint64_t limit) {
    while (fed < limit) {
      const std::optional<Cursor> from = mirror.look_ahead_from();
      if (from && *from >= Cursor{base} && *from < Cursor{base + limit}) {
        const std::uint64_t at = *from - Cursor{base};
        mirror.look_ahead(bytes.substr(at, limit - at));
        if (mirror.skip_ahead()) {
          fed = mirror.position() - Cursor{base};
          continue;
        }
      }
      const std::uint64_t n = std::min<std::uint64_t>(limit - fed, kFeedBytes);
      mirror.feed(bytes.substr(fed, n));
      fed += n;
    }
  };
  for (const SizeChange& change : request.changes) {
    feed_to(std::min<std::uint64_t>(
        change.cursor > keyframe.cursor ? change.cursor - keyframe.cursor : 0, bytes.size()));
    mirror.resize(change.cols, change.rows);
  }
  feed_to(bytes.size());
  term::MirrorSnapshot out = mirror.snapshot(request.options);
  // As a live snapshot, it is tagged with the last clean position: before a sequence the stream
  // stops inside (the bytes from there on are replayed after it).
  out.cursor = keyframe.cursor + (std::max(out.cursor, Cursor{base}) - Cursor{base});
  return out;
}

}  // namespace backscroll::recorder
