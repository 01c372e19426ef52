#include "engine/transcript_writer.hpp"
#include "engine/eventfd_signal.hpp"
#include "engine/worker_loop.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <deque>

namespace backscroll::engine {

// One actor's transcript. Writer thread only.
struct TranscriptWriter::Slot {
  WriterActorId id = 0;
  std::unique_ptr<shm::RingReader> ring;
  std::shared_ptr<InternalConsumer> consumer;
  std::unique_ptr<store::TranscriptStore> store;  // null once given up (archive_error)
  std::uint64_t epoch = 0;
  std::uint64_t session = 0;
  Cursor position{0};      // the next byte to append
  std::deque<Mark> marks;  // in stream order (the io thread's order)
  // The ring's committed cursor, loaded before this round's commands were drained: every mark
  // at or before it is in `marks` (MirrorThread's rule, docs/memory-ordering.md).
  Cursor limit{0};
  // The cursor lease: what the lease file holds (opened at the first write), and whether the
  // session it leases runs (between its session mark and its seal).
  std::optional<store::LeaseFile> lease_file;
  store::CursorLease lease;
  bool session_running = false;
  // Since when bytes the writer still needs are gone from the ring with no clear mark queued
  // to explain it (the mark follows the clear by microseconds; a lap would never be explained).
  std::optional<std::chrono::steady_clock::time_point> lost_since;
  Cursor position_at_sleep{0};  // `position` when the thread last went to sleep
};

TranscriptWriter::TranscriptWriter(int notify_fd) : notify_fd_(notify_fd) {
  thread_ = std::thread([this] { run(); });
}

TranscriptWriter::~TranscriptWriter() {
  send(std::monostate{});
  thread_.join();
}

void TranscriptWriter::send(Command command) {
  commands_.enqueue(std::move(command));
  wake_.wake();
}

void TranscriptWriter::add_actor(WriterActorId id, shm::RingReader ring,
                                 std::shared_ptr<InternalConsumer> consumer,
                                 store::TranscriptStore store, std::uint64_t epoch,
                                 std::uint64_t session) {
  send(Add{id, std::make_unique<shm::RingReader>(std::move(ring)), std::move(consumer),
           std::make_unique<store::TranscriptStore>(std::move(store)), epoch, session});
}
void TranscriptWriter::remove_actor(WriterActorId id, std::filesystem::path erase) {
  send(Remove{id, std::move(erase)});
}
void TranscriptWriter::new_session(WriterActorId id, Cursor at, std::uint64_t session) {
  send(Mark{id, Mark::Kind::session, at, session});
}
void TranscriptWriter::clear(WriterActorId id, Cursor at) {
  send(Mark{id, Mark::Kind::clear, at, 0});
}
void TranscriptWriter::save_record(WriterActorId id, Cursor at, std::string text) {
  send(Mark{id, Mark::Kind::record, at, 0, std::move(text)});
}
void TranscriptWriter::annex(WriterActorId id, Cursor at, std::string record) {
  send(Mark{id, Mark::Kind::annex, at, 0, std::move(record)});
}
void TranscriptWriter::seal(WriterActorId id, Cursor end, std::uint64_t token) {
  send(Mark{id, Mark::Kind::seal, end, token});
}

void TranscriptWriter::run() {
  ::pthread_setname_np(::pthread_self(), "bs-writer");  // for top, perf and the benchmarks
  run_worker(
      wake_, slots_, [this] { return drain_commands(); },
      [this](Slot& slot) { return pump(slot, kBatchBytes); }, [this] { return has_work(); },
      [this] {
        const auto now = std::chrono::steady_clock::now();
        const int tick = streaming_tick_ms(now);
        streaming_ = now - last_append_ < kStreamingWindow;
        return streaming_ ? WorkerSleep{tick, false} : WorkerSleep{};
      });
  finish();
}

int TranscriptWriter::streaming_tick_ms(std::chrono::steady_clock::time_point now) {
  const double elapsed_ms = std::chrono::duration<double, std::milli>(now - last_sleep_).count();
  last_sleep_ = now;
  return paced_tick_ms(
      slots_, kStreamingTickMs, elapsed_ms,
      [](Slot& slot) {
        const std::uint64_t came = slot.position - slot.position_at_sleep;
        slot.position_at_sleep = slot.position;
        return came;
      },
      [](const Slot& slot) { return slot.ring->capacity() / 4; });
}

void TranscriptWriter::finish() {
  for (auto& slot : slots_) {
    slot->limit = slot->ring->committed();
    while (pump(*slot, kBatchBytes)) {
    }
    if (slot->store) {
      if (auto r = slot->store->sync(); !r) give_up(*slot, r.error().describe());
    }
  }
}

bool TranscriptWriter::drain_commands() {
  Command command;
  while (commands_.try_dequeue(command)) {
    if (std::holds_alternative<std::monostate>(command)) return false;
    if (auto* add = std::get_if<Add>(&command)) {
      auto slot = std::make_unique<Slot>();
      slot->id = add->id;
      slot->ring = std::move(add->ring);
      slot->consumer = std::move(add->consumer);
      slot->store = std::move(add->store);
      slot->epoch = add->epoch;
      slot->session = add->session;
      slot->position = slot->consumer->position();
      slot->position_at_sleep = slot->position;
      slot->limit = slot->position;  // its committed cursor is loaded next round
      slot->lease =
          store::CursorLease{slot->position, false};  // the first session's reaches past it
      slots_.push_back(std::move(slot));
      continue;
    }
    const WriterActorId id = std::holds_alternative<Remove>(command) ? std::get<Remove>(command).id
                                                                     : std::get<Mark>(command).id;
    auto it =
        std::find_if(slots_.begin(), slots_.end(), [id](const auto& s) { return s->id == id; });
    if (it == slots_.end()) {
      // A seal for an actor the writer does not keep (never added, or removed): not durable.
      if (auto* m = std::get_if<Mark>(&command); m && m->kind == Mark::Kind::seal)
        emit(WriterEvent{WriterEvent::Kind::sealed, id, m->value, false, {}});
      continue;
    }
    if (const auto* remove = std::get_if<Remove>(&command)) {
      (*it)->consumer->detach();
      slots_.erase(it);  // closes the store's files
      if (!remove->erase.empty()) {
        if (auto r = store::TranscriptStore::remove_folder(remove->erase); !r) {
          emit(WriterEvent{WriterEvent::Kind::archive_error, id, 0, false, r.error().describe()});
        }
      }
    } else {
      (*it)->marks.push_back(std::get<Mark>(command));
    }
  }
  return true;
}

bool TranscriptWriter::apply_due_marks(Slot& slot) {
  bool applied = false;
  // A clear applies as soon as it is next: the bytes before it are gone from the stream.
  while (!slot.marks.empty() &&
         (slot.marks.front().kind == Mark::Kind::clear || slot.marks.front().at <= slot.position)) {
    const Mark m = std::move(slot.marks.front());
    slot.marks.pop_front();
    applied = true;
    switch (m.kind) {
      case Mark::Kind::session:
        slot.session = m.value;
        slot.session_running = true;
        if (slot.store) extend_lease(slot, max(m.at, slot.ring->committed()));
        break;
      case Mark::Kind::clear:
        slot.position = std::max(slot.position, m.at);
        if (slot.store) {
          if (auto r = slot.store->clear(); !r) give_up(slot, r.error().describe());
        }
        break;
      case Mark::Kind::record:
        if (slot.store) {
          if (auto r = slot.store->save_record(m.text); !r) give_up(slot, r.error().describe());
        }
        break;
      case Mark::Kind::annex:
        if (slot.store) {
          if (auto r = slot.store->append_annex(m.at, m.text); !r) {
            give_up(slot, r.error().describe());
          }
        }
        break;
      case Mark::Kind::seal: {
        bool durable = false;
        if (slot.store) {
          if (auto r = slot.store->sync(); r) durable = true;
          else give_up(slot, r.error().describe());
        }
        // Nothing was committed past the seal, and the next session commits nothing before its
        // own open lease is durable: a restart may continue exactly here.
        slot.session_running = false;
        if (slot.store && !write_lease(slot, store::CursorLease{m.at, false})) durable = false;
        // The gate hears of the appended bytes no later than the io thread of the seal.
        if (slot.store) slot.consumer->advance_to(slot.position);
        emit(WriterEvent{WriterEvent::Kind::sealed, slot.id, m.value, durable, {}});
        break;
      }
    }
  }
  return applied;
}

// Appends at most `budget` bytes of the slot's ring, applying marks at their cursors.
bool TranscriptWriter::pump(Slot& slot, std::size_t budget) {
  // `again`: a mark applied, a lease or a give-up, or bytes left past the budget. Appending
  // every byte up to `limit` alone is not: the bytes committed meanwhile wait for the next
  // tick while streaming, so a flood is appended in a few large records per tick rather than
  // one (two syscalls) per PTY read.
  bool again = false;
  if (lease_due(slot, slot.ring->committed()) && !extend_lease(slot, slot.ring->committed())) {
    return true;
  }
  for (;;) {
    again |= apply_due_marks(slot);
    if (!slot.store) {
      // Given up: nothing is appended any more; marks are answered as they come.
      while (!slot.marks.empty()) {
        slot.position = std::max(slot.position, slot.marks.front().at);
        again |= apply_due_marks(slot);
      }
      return again;
    }
    Cursor end = slot.limit;
    if (!slot.marks.empty()) end = std::min(end, slot.marks.front().at);
    if (slot.position >= end) break;
    if (budget == 0) {
      again = true;
      break;
    }

    auto view =
        slot.ring->read(slot.position, std::min<std::uint64_t>(budget, end - slot.position));
    if (!view && view.error().code == Errc::cursor_expired) {
      if (skip_to_clear(slot)) continue;
      if (!waited_too_long(slot)) break;
    }
    if (!view) {
      give_up(slot,
              "the ring lost bytes before the transcript had them: " + view.error().describe());
      return true;
    }
    if (view->empty()) break;
    for (auto part : {view->first, view->second}) {
      if (part.empty()) continue;
      const auto chars = std::span(reinterpret_cast<const char*>(part.data()), part.size());
      if (auto r = slot.store->append(slot.position, slot.epoch, slot.session, chars); !r) {
        give_up(slot, r.error().describe());
        return true;
      }
      slot.position = slot.position + part.size();
    }
    if (!slot.ring->intact(view->from)) {
      // The bytes just appended may be torn: only a clear (which deletes them) explains it.
      if (skip_to_clear(slot)) continue;
      if (!waited_too_long(slot)) break;
      give_up(slot, "the ring was overwritten while the transcript copied it");
      return true;
    }
    slot.lost_since.reset();
    budget -= std::min(budget, view->size());
    last_append_ = std::chrono::steady_clock::now();
  }
  slot.consumer->advance_to(slot.position);
  return again;
}

bool TranscriptWriter::skip_to_clear(Slot& slot) {
  const auto clear = std::find_if(slot.marks.begin(), slot.marks.end(),
                                  [](const Mark& m) { return m.kind == Mark::Kind::clear; });
  if (clear == slot.marks.end()) return false;
  // The marks before it apply at their cursors, as if the cleared bytes had been appended.
  std::size_t left = static_cast<std::size_t>(clear - slot.marks.begin()) + 1;
  while (left > 0) {
    const std::size_t before = slot.marks.size();
    if (slot.marks.front().kind != Mark::Kind::clear) {
      slot.position = std::max(slot.position, slot.marks.front().at);
    }
    apply_due_marks(slot);
    left -= std::min(left, before - slot.marks.size());
  }
  slot.lost_since.reset();
  return true;
}

bool TranscriptWriter::waited_too_long(Slot& slot) {
  const auto now = std::chrono::steady_clock::now();
  if (!slot.lost_since) slot.lost_since = now;
  return now - *slot.lost_since > kClearMarkWait;
}

bool TranscriptWriter::write_lease(Slot& slot, store::CursorLease lease) {
  if (!slot.lease_file) {
    auto file = store::LeaseFile::open(slot.store->folder(), slot.store->options().faults);
    if (!file) {
      give_up(slot, file.error().describe());
      return false;
    }
    slot.lease_file = std::move(*file);
  }
  if (auto r = slot.lease_file->write(lease); !r) {
    give_up(slot, r.error().describe());
    return false;
  }
  slot.lease = lease;
  return true;
}

bool TranscriptWriter::lease_due(const Slot& slot, Cursor committed) {
  const std::uint64_t half = lease_bytes(slot.ring->capacity()) / 2;
  return slot.store && slot.session_running && slot.lease.limit < kCursorEnd &&
         advance_capped(committed, half) >= slot.lease.limit;
}

bool TranscriptWriter::extend_lease(Slot& slot, Cursor committed) {
  const Cursor limit =
      max(slot.lease.limit, advance_capped(committed, lease_bytes(slot.ring->capacity())));
  if (!write_lease(slot, store::CursorLease{limit, true})) return false;
  WriterEvent e;
  e.kind = WriterEvent::Kind::lease;
  e.id = slot.id;
  e.session = slot.session;
  e.lease = limit;
  emit(std::move(e));
  return true;
}

void TranscriptWriter::give_up(Slot& slot, const std::string& why) {
  if (!slot.store) return;
  const Cursor archived_to = slot.store->end();
  slot.store.reset();
  slot.consumer->detach();  // the actor no longer waits for its transcript
  emit(WriterEvent{WriterEvent::Kind::archive_error, slot.id, 0, false, why, archived_to});
}

void TranscriptWriter::emit(WriterEvent e) {
  events_.enqueue(std::move(e));
  signal_eventfd(notify_fd_);
}

bool TranscriptWriter::has_work() {
  if (commands_.size_approx() > 0) return true;
  for (const auto& slot : slots_) {
    if (!slot->marks.empty()) return true;
    const Cursor committed = slot->ring->committed();
    // While streaming, new bytes wait for the tick (sleep's timeout).
    if (!streaming_ && slot->store && committed > slot->position) return true;
    if (lease_due(*slot, committed)) return true;
  }
  return false;
}

}  // namespace backscroll::engine
