#include "engine/recorder/durable_recording.hpp"

#include <optional>
#include <string_view>

namespace backscroll::recorder {
namespace {

enum class RecordType : std::uint8_t { keyframe = 1, size_change = 2, event = 3, time_sample = 4 };

class Writer {
 public:
  explicit Writer(RecordType type) { out_.push_back(static_cast<char>(type)); }
  Writer& u(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  Writer& u64(std::uint64_t v) { return u(v, 8); }
  Writer& i64(std::int64_t v) { return u(static_cast<std::uint64_t>(v), 8); }
  Writer& u32(std::uint32_t v) { return u(v, 4); }
  Writer& u16(std::uint16_t v) { return u(v, 2); }
  Writer& bytes(std::string_view b) {
    out_.append(b);
    return *this;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads fields in order; any read past the end leaves it failed (and every later read 0).
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::uint64_t u(int bytes) {
    if (in_.size() < static_cast<std::size_t>(bytes)) {
      ok_ = false;
      in_ = {};
      return 0;
    }
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(in_[i]);
    in_.remove_prefix(static_cast<std::size_t>(bytes));
    return v;
  }
  std::uint64_t u64() { return u(8); }
  std::int64_t i64() { return static_cast<std::int64_t>(u(8)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(u(4)); }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u(2)); }
  std::string_view bytes(std::size_t n) {
    if (in_.size() < n) {
      ok_ = false;
      n = in_.size();
    }
    const std::string_view out = in_.substr(0, n);
    in_.remove_prefix(n);
    return out;
  }
  std::string_view rest() { return bytes(in_.size()); }
  bool ok() const noexcept { return ok_; }

 private:
  std::string_view in_;
  bool ok_ = true;
};

bool apply_record(Recording& r, std::string_view record) {
  if (record.empty()) return false;
  Reader in(record.substr(1));
  switch (static_cast<RecordType>(record[0])) {
    case RecordType::keyframe: {
      Keyframe k;
      k.cursor = Cursor{in.u64()};
      k.stretch = in.u64();
      k.cols = in.u16();
      k.rows = in.u16();
      k.sizes_applied = in.u64();
      k.time_ms = in.i64();
      k.history_lines = in.u32();
      k.snapshot = std::string(in.rest());
      if (!in.ok() || k.cols == 0 || k.rows == 0) return false;
      r.keyframes.add(std::move(k));
      return true;
    }
    case RecordType::size_change: {
      SizeChange c;
      c.seq = in.u64();
      c.cursor = Cursor{in.u64()};
      c.cols = in.u16();
      c.rows = in.u16();
      if (!in.ok() || c.seq == 0 || c.cols == 0 || c.rows == 0) return false;
      r.keyframes.restore_size_change(c);
      return true;
    }
    case RecordType::event: {
      TrackEvent e;
      e.seq = in.u64();
      e.cursor = Cursor{in.u64()};
      e.time_ms = in.i64();
      const std::optional<EventKind> kind = parse_event_kind(in.bytes(in.u(1)));
      const std::string_view fields = in.rest();
      if (!in.ok() || !kind || e.seq == 0) return false;
      e.kind = *kind;
      e.fields = control::Json::parse(fields, nullptr, false);
      if (!e.fields.is_object()) return false;
      r.events.restore(std::move(e));
      return true;
    }
    case RecordType::time_sample: {
      const std::int64_t time_ms = in.i64();
      const Cursor cursor{in.u64()};
      if (!in.ok()) return false;
      r.times.note(time_ms, cursor);
      return true;
    }
  }
  return false;
}

}  // namespace

std::string encode(const Keyframe& k) {
  return Writer(RecordType::keyframe)
      .u64(value(k.cursor))
      .u64(k.stretch)
      .u16(k.cols)
      .u16(k.rows)
      .u64(k.sizes_applied)
      .i64(k.time_ms)
      .u32(static_cast<std::uint32_t>(k.history_lines))
      .bytes(k.snapshot)
      .take();
}

std::string encode(const SizeChange& c) {
  return Writer(RecordType::size_change)
      .u64(c.seq)
      .u64(value(c.cursor))
      .u16(c.cols)
      .u16(c.rows)
      .take();
}

std::string encode(const TrackEvent& e) {
  const std::string_view kind = to_string(e.kind);
  return Writer(RecordType::event)
      .u64(e.seq)
      .u64(value(e.cursor))
      .i64(e.time_ms)
      .u(kind.size(), 1)
      .bytes(kind)
      .bytes(e.fields.dump(-1, ' ', false, control::Json::error_handler_t::replace))
      .take();
}

std::string encode(const TimeSample& s) {
  return Writer(RecordType::time_sample).i64(s.time_ms).u64(value(s.cursor)).take();
}

LoadReport load(Recording& recording, std::span<const std::string> records, Cursor oldest) {
  LoadReport report;
  for (const std::string& record : records) {
    if (apply_record(recording, record)) ++report.records;
    else ++report.unreadable;
  }
  recording.keyframes.drop_below(oldest);
  return report;
}

}  // namespace backscroll::recorder
