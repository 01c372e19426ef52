#include "tools/status_detector.hpp"

namespace backscroll::status {
namespace {

// The scanner's screen size only matters for scroll regions and margins, never for titles.
constexpr std::uint16_t kCols = 80;
constexpr std::uint16_t kRows = 24;
constexpr std::size_t kMaxClassified = 64;

constexpr std::uint8_t kBel = 0x07;
constexpr std::uint8_t kCan = 0x18;
constexpr std::uint8_t kSub = 0x1a;
constexpr std::uint8_t kEsc = 0x1b;
constexpr std::uint8_t kDel = 0x7f;

// A byte the scanner acts on in every state (NUL, DEL and the C0 controls other than ESC, CAN
// and SUB are executed or ignored without changing the parser state).
bool significant(std::uint8_t b) noexcept { return b >= 0x20 && b != kDel; }

}  // namespace

std::string_view to_string(StatusEventKind kind) noexcept {
  switch (kind) {
    case StatusEventKind::initial:
      return "initial";
    case StatusEventKind::resync:
      return "resync";
    case StatusEventKind::change:
      break;
  }
  return "change";
}

// VtScanner reports the title and the bell count as totals after a scan() call, so a call that
// spans two title sets would hide the first. Live bytes are therefore scanned in pieces that end
// at every byte where the scanner may set the title or count a bell (docs/vt-scanner.md, "Title"
// and the departures list at the top of engine/term/vt_scanner.cpp):
//   - BEL: rings, or ends an OSC;
//   - the first significant byte (or ESC, CAN, SUB) after an ESC: ends an OSC as ST or as
//     "ESC followed by anything"; NUL, DEL and other C0 controls in between do not end it;
//   - 't' after a parameter byte (digit, ';' or ':'): may be CSI 23 t, the title-stack pop.
// Each piece thus holds at most one title set or bell, at its end. More cuts than needed only
// cost speed, never correctness; the tests compare with byte-by-byte scanning.
std::size_t StatusDetector::EventBoundaries::next_piece(std::string_view bytes) noexcept {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const std::uint8_t b = data[i];
    bool boundary = b == kBel;
    if (after_escape && (significant(b) || b == kEsc || b == kCan || b == kSub)) {
      boundary = true;
      after_escape = false;
    }
    if (b == 't' && ((last_significant >= '0' && last_significant <= '9') ||
                     last_significant == ';' || last_significant == ':')) {
      boundary = true;
    }
    if (b == kEsc) after_escape = true;
    if (significant(b)) last_significant = b;
    if (boundary) return i + 1;
  }
  return bytes.size();
}

// The state next_piece() would leave after all of `bytes`, from their tail: the history may end
// inside a sequence (an ESC just before the first live byte).
void StatusDetector::EventBoundaries::pass(std::string_view bytes) noexcept {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  bool escape_known = false;
  for (std::size_t i = bytes.size(); i > 0; --i) {
    const std::uint8_t b = data[i - 1];
    if (!escape_known && (significant(b) || b == kEsc || b == kCan || b == kSub)) {
      after_escape = b == kEsc;
      escape_known = true;
    }
    if (significant(b)) {
      last_significant = b;
      return;
    }
  }
}

StatusDetector::StatusDetector(const StatusRules& rules, Cursor start, std::uint64_t bells_before)
    : rules_(&rules), scanner_(start, kCols, kRows), bells_before_(bells_before) {
  state_.bells = bells_before;
  state_.cursor = start;
}

void StatusDetector::scan(std::string_view bytes, std::int64_t now_ms) {
  if (bytes.empty()) return;
  if (restoring_) {
    scanner_.scan(bytes);  // only the final title and the count matter: one call
    boundaries_.pass(bytes);
    return;
  }
  state_.last_output_ms = now_ms;
  while (!bytes.empty()) {
    const std::size_t n = boundaries_.next_piece(bytes);
    scanner_.scan(bytes.substr(0, n));
    bytes.remove_prefix(n);
    observe(now_ms);
  }
  state_.cursor = scanner_.position();
}

const ActorStatus& StatusDetector::finish_restore() {
  if (restoring_) {
    restoring_ = false;
    bells_seen_ = scanner_.bells();
    title_changes_seen_ = scanner_.title_changes();
    state_.title.assign(scanner_.title());
    const Classification c = classify(state_.title);
    state_.status = c.status;
    state_.agent = c.agent;
    state_.bells = bells_before_ + bells_seen_;
    state_.cursor = scanner_.position();
  }
  return state_;
}

std::vector<StatusEvent> StatusDetector::take_changes() {
  std::vector<StatusEvent> out;
  out.swap(changes_);
  return out;
}

void StatusDetector::observe(std::int64_t now_ms) {
  const std::uint64_t bells = scanner_.bells();
  const std::uint64_t titles = scanner_.title_changes();
  if (bells == bells_seen_ && titles == title_changes_seen_) return;
  ActorStatus next = state_;
  next.bells = bells_before_ + bells;
  if (titles != title_changes_seen_) {
    next.title.assign(scanner_.title());
    const Classification c = classify(next.title);
    next.status = c.status;
    next.agent = c.agent;
  }
  bells_seen_ = bells;
  title_changes_seen_ = titles;
  next.cursor = scanner_.position();
  next.last_output_ms = now_ms;
  if (!next.same_report(state_)) {
    changes_.push_back(StatusEvent{StatusEventKind::change, next, state_.status, 0});
  }
  state_ = std::move(next);
}

Classification StatusDetector::classify(const std::string& title) {
  if (const auto it = classified_.find(title); it != classified_.end()) return it->second;
  if (classified_.size() >= kMaxClassified) classified_.clear();
  Classification c = rules_->classify(title);
  classified_.emplace(title, c);
  return c;
}

}  // namespace backscroll::status
