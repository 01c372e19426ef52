#include "tools/status_detector.hpp"

namespace backscroll::status {
namespace {

// The scanner's screen size only matters for scroll regions and margins, never for titles.
constexpr std::uint16_t kCols = 80;
constexpr std::uint16_t kRows = 24;
constexpr std::size_t kMaxClassified = 64;

}  // namespace

std::string_view to_string(StatusEventKind kind) noexcept {
  switch (kind) {
    case StatusEventKind::initial: return "initial";
    case StatusEventKind::resync: return "resync";
    case StatusEventKind::change: break;
  }
  return "change";
}

StatusDetector::StatusDetector(const StatusRules& rules, Cursor start, std::uint64_t bells_before)
    : rules_(&rules), scanner_(start, kCols, kRows), bells_before_(bells_before) {
  state_.bells = bells_before;
  state_.cursor = start;
}

// The scanner reports each title set and bell as it reads it (term::VtEvents): one grammar for
// the mirror and the detector. Events reach this detector only during a live scan(), never while
// restoring, and only for the length of the call, so a moved detector leaves nothing dangling.
void StatusDetector::scan(std::string_view bytes, std::int64_t now_ms) {
  if (bytes.empty()) return;
  if (restoring_) {
    scanner_.scan(bytes);  // only the final title and the count matter
    return;
  }
  state_.last_output_ms = now_ms;
  now_ms_ = now_ms;
  scanner_.set_events(this);
  scanner_.scan(bytes);
  scanner_.set_events(nullptr);
  state_.cursor = scanner_.position();
}

const ActorStatus& StatusDetector::finish_restore() {
  if (restoring_) {
    restoring_ = false;
    state_.title.assign(scanner_.title());
    const Classification c = classify(state_.title);
    state_.status = c.status;
    state_.agent = c.agent;
    state_.bells = bells_before_ + scanner_.bells();
    state_.cursor = scanner_.position();
  }
  return state_;
}

std::vector<StatusEvent> StatusDetector::take_changes() {
  std::vector<StatusEvent> out;
  out.swap(changes_);
  return out;
}

void StatusDetector::on_title(std::string_view title, Cursor after) noexcept {
  ActorStatus next = state_;
  next.title.assign(title);
  const Classification c = classify(next.title);
  next.status = c.status;
  next.agent = c.agent;
  report(std::move(next), after);
}

void StatusDetector::on_bell(Cursor after) noexcept {
  ActorStatus next = state_;
  next.bells = bells_before_ + scanner_.bells();
  report(std::move(next), after);
}

// A live event: one change when it changes what a change reports.
void StatusDetector::report(ActorStatus next, Cursor after) {
  next.cursor = after;
  next.last_output_ms = now_ms_;
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
