#include "engine/recorder/screen_at.hpp"

#include <algorithm>

namespace backscroll::recorder {
namespace {

// Bytes fed between two looks ahead.
constexpr std::uint64_t kFeedBytes = 64 * 1024;

}  // namespace

bool widens_history(const Keyframe& keyframe, std::span<const SizeChange> changes) noexcept {
  return keyframe.history_lines > 0 &&
         std::any_of(changes.begin(), changes.end(),
                     [&](const SizeChange& c) { return c.cols > keyframe.cols; });
}

std::unique_ptr<term::Mirror> replay(const ScreenAt& request) {
  const Keyframe& keyframe = *request.keyframe;
  if (widens_history(keyframe, request.changes)) return nullptr;
  const std::uint64_t base = keyframe.snapshot.size();
  auto owned =
      std::make_unique<term::Mirror>(Cursor{0}, keyframe.cols, keyframe.rows, request.limits);
  term::Mirror& mirror = *owned;
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
  return owned;
}

std::unique_ptr<term::Mirror> resume(const ScreenAt& request, Cursor at) {
  // The replay keeps a keyframe's depth of history, as a restore without bytes to replay does,
  // so the look ahead jumps over what scrolls past it (a crash in a flood leaves up to 16 MiB);
  // the live bound applies from `at` on.
  ScreenAt bounded = request;
  bounded.limits.max_lines = std::min(request.limits.max_lines, kKeyframeHistoryLines);
  std::unique_ptr<term::Mirror> mirror = replay(bounded);
  if (!mirror) return nullptr;
  const Cursor base{request.keyframe->snapshot.size()};
  const Cursor clean = mirror->scanner().clean_position();
  if (clean != mirror->position()) {
    bounded.bytes = request.bytes.substr(0, std::max(clean, base) - base);
    mirror = replay(bounded);
  }
  mirror->settle();
  if (!mirror->restart_at(at)) return nullptr;
  mirror->set_history_limits(request.limits);
  return mirror;
}

term::MirrorSnapshot screen_at(const ScreenAt& request) {
  const Keyframe& keyframe = *request.keyframe;
  // History past what the answer draws is never seen: the scratch mirror keeps no more, so its
  // look ahead jumps over every stretch of scrolling text older than that (Mirror::skip_ahead,
  // exact), as the live mirror does during a flood.
  ScreenAt scratch = request;
  scratch.limits.max_lines = std::max<std::size_t>(
      1, std::min(request.limits.max_lines, request.options.scrollback_lines));
  const std::unique_ptr<term::Mirror> mirror = replay(scratch);
  if (!mirror) {
    // Declared, not guessed (the mirror thread takes a keyframe after every resize, so only a
    // resize it could not take one at leads here).
    term::MirrorSnapshot out;
    out.cursor = keyframe.cursor + request.bytes.size();
    out.snapshot.cols = request.changes.back().cols;
    out.snapshot.rows = request.changes.back().rows;
    out.snapshot.fallback_reason = "widened_since_keyframe";
    return out;
  }
  term::MirrorSnapshot out = mirror->snapshot(request.options);
  // As a live snapshot, it is tagged with the last clean position: before a sequence the stream
  // stops inside (the bytes from there on are replayed after it).
  const Cursor base{keyframe.snapshot.size()};
  out.cursor = keyframe.cursor + (std::max(out.cursor, base) - base);
  return out;
}

}  // namespace backscroll::recorder
