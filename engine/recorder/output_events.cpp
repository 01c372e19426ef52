#include "engine/recorder/output_events.hpp"

#include <algorithm>

namespace backscroll::recorder {

using control::Json;

template <typename Fields>
void OutputEvents::emit(EventKind kind, Cursor cursor, Fields&& fields) {
  if (kind != EventKind::bell) end_bell_run();  // the bells came first
  if (!take_token()) {
    ++dropped_;
    dropped_at_ = cursor;
    return;
  }
  if (dropped_ > 0) {
    ready_.push_back({EventKind::dropped, dropped_at_, now_ms_, {{"count", dropped_}}});
    dropped_ = 0;
  }
  ready_.push_back({kind, cursor, now_ms_, fields()});
}

void OutputEvents::reset() noexcept {
  end_bell_run();
  ++state_version_;
  state_.title.clear();
  state_.status = term::AgentStatus::unknown;
  state_.agent.clear();
}

void OutputEvents::take(std::vector<OutputEvent>& out, std::int64_t now_ms) {
  now_ms_ = std::max(now_ms_, now_ms);
  if (bell_run_ && now_ms_ - bell_run_->started_ms >= kBellWindowMs) end_bell_run();
  if (dropped_ > 0 && take_token()) {  // the count, once the bucket allows one more
    ready_.push_back({EventKind::dropped, dropped_at_, now_ms_, {{"count", dropped_}}});
    dropped_ = 0;
  }
  for (OutputEvent& e : ready_) out.push_back(std::move(e));
  ready_.clear();
}

void OutputEvents::on_title(std::string_view title, Cursor after) noexcept {
  if (title == state_.title) return;  // set to the text it had: not a change
  state_.title.assign(title);
  ++state_version_;
  emit(EventKind::title, after, [this] { return Json{{"title", state_.title}}; });
  const term::Classification c = classify(state_.title);
  if (c.status != state_.status) {
    emit(EventKind::status, after, [&] {
      return Json{{"status", term::to_string(c.status)},
                  {"previous", term::to_string(state_.status)},
                  {"agent", c.agent.empty() ? Json(nullptr) : Json(c.agent)}};
    });
  }
  state_.status = c.status;
  state_.agent = c.agent;
}

void OutputEvents::on_bell(Cursor after) noexcept {
  ++state_.bells;
  ++state_version_;
  if (bell_run_) {
    ++bell_run_->count;
    bell_run_->last = after;
  } else if (last_bell_ms_ && now_ms_ - *last_bell_ms_ < kBellWindowMs) {
    bell_run_ = BellRun{after, after, 1, now_ms_};
  } else {
    emit(EventKind::bell, after, [] { return Json{{"count", 1}}; });
    last_bell_ms_ = now_ms_;
  }
}

void OutputEvents::on_shell_mark(char mark, std::optional<int> exit_status, Cursor after) noexcept {
  switch (mark) {
    case 'A': emit(EventKind::prompt, after, [] { return Json::object(); }); break;
    case 'C': emit(EventKind::command_start, after, [] { return Json::object(); }); break;
    case 'D':
      emit(EventKind::command_end, after, [exit_status] {
        return Json{{"exit_status", exit_status ? Json(*exit_status) : Json(nullptr)}};
      });
      break;
    default: break;  // B: the prompt ends; the command line is not an event
  }
}

void OutputEvents::end_bell_run() {
  if (!bell_run_) return;
  const BellRun run = *bell_run_;
  bell_run_.reset();
  emit(EventKind::bell, run.first, [&run] {
    return Json{{"count", run.count}, {"last", value(run.last)}};
  });
  last_bell_ms_ = now_ms_;
}

bool OutputEvents::take_token() noexcept {
  if (now_ms_ > refilled_ms_) {
    tokens_ = std::min<double>(
        kBurst, tokens_ + static_cast<double>(now_ms_ - refilled_ms_) * kPerSecond / 1000.0);
    refilled_ms_ = now_ms_;
  }
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

term::Classification OutputEvents::classify(const std::string& title) {
  if (const auto it = classified_.find(title); it != classified_.end()) return it->second;
  if (classified_.size() >= kClassifiedTitles) classified_.clear();
  return classified_.emplace(title, rules_->classify(title)).first->second;
}

}  // namespace backscroll::recorder
