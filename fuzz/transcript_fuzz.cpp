// Fuzz target: a damaged transcript folder (engine/store/transcript_store.cpp). The input describes
// a transcript the harness writes through TranscriptStore (appends of given sizes and sessions,
// small segments), then damages its files in place, then opens and reads it. Whatever the
// damage, opening must not crash, and what the store then says must hold:
//   - every byte it serves at cursor c is the byte written at c (the stream is a function of
//     the cursor), through read() and read_folder();
//   - its gaps are sorted, disjoint, non-empty and lie within what it covers;
//   - a read inside a gap answers data_lost with that gap, never bytes;
//   - every cursor between oldest() and end() is served, lost, or expired (a cleared stretch);
//   - each annex record it gives back is one that was written (damage may drop, repeat or
//     reorder whole records, never alter one), and with no damage every record written comes
//     back in the order written (one annex record follows each append).
// Input layout: [0] segment size (1 KiB << b % 4) [1] appends (1 + b % 32), then per append
// u16 length (1 + n % 1500) and u8 (bit 0: a new session, bit 1: skip ahead as a clear does);
// then damage ops until the input ends: 0 poke(u8 file, u16 offset, u8 n, n bytes),
// 1 truncate(u8 file, u16 bytes off the end), 2 remove(u8 file), 3 zero(u8 file, u16 offset,
// u16 n), 4 copy(u8 file, u16 from, u16 to, u8 n): a block moved within a file (a misplaced
// write), 5 swap contents(u8 file, u8 file); files are the segments and annexes, by name.
// Run: transcript_fuzz -max_len=1024 fuzz/corpus/transcript
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/store/transcript_store.hpp"
#include "fuzz/fuzz_input.hpp"

namespace {

using namespace backscroll;
using store::TranscriptGap;
using store::TranscriptStore;
namespace fs = std::filesystem;

[[noreturn]] void violated() { __builtin_trap(); }

// The stream: byte c is a hash of c, so any byte served at the wrong cursor shows.
char stream_byte(std::uint64_t c) {
  std::uint64_t x = c * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 29;
  return static_cast<char>(x * 0xBF58476D1CE4E5B9ULL >> 56);
}

using Input = fuzzing::FuzzInput;

void remove_folder();

const fs::path& folder() {
  // tmpfs when there is one: the target writes and lists a folder thousands of times a second.
  static const fs::path dir =
      (fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path()) /
      ("bs-transcript-fuzz-" + std::to_string(::getpid()));
  static const bool cleaned_at_exit = std::atexit(remove_folder) == 0;
  (void)cleaned_at_exit;
  return dir;
}

void remove_folder() {
  std::error_code ec;
  fs::remove_all(folder(), ec);
}

// The annex record written after append `k`: k, then bytes that depend on k only.
std::string annex_record(std::uint32_t k) {
  std::string r(4 + (k * 37) % 300, '\0');
  for (int i = 0; i < 4; ++i) r[static_cast<std::size_t>(i)] = static_cast<char>(k >> (8 * i));
  for (std::size_t i = 4; i < r.size(); ++i) r[i] = stream_byte(k * 1000 + i);
  return r;
}

// Which append's record `r` is; -1 when it is none that was written.
std::int64_t annex_index(const std::string& r) {
  if (r.size() < 4) return -1;
  std::uint32_t k = 0;
  for (int i = 3; i >= 0; --i)
    k = k << 8 | static_cast<unsigned char>(r[static_cast<std::size_t>(i)]);
  return k < 64 && r == annex_record(k) ? k : -1;
}

std::vector<fs::path> segment_files() {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder(), ec)) {
    if (e.path().extension() == ".seg" || e.path().extension() == ".rec") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

void damage(Input& in) {
  const std::uint8_t op = in.u8() % 6;
  const auto files = segment_files();
  if (files.empty()) return;
  const fs::path& file = files[in.u8() % files.size()];
  std::string bytes = read_file(file);
  switch (op) {
    case 0: {
      const std::size_t offset = static_cast<std::size_t>(in.take(2));
      const std::size_t n = in.u8() % 16;
      for (std::size_t i = 0; i < n; ++i) {
        const char b = static_cast<char>(in.u8());
        if (!bytes.empty()) bytes[(offset + i) % bytes.size()] = b;
      }
      break;
    }
    case 1: bytes.resize(bytes.size() - std::min<std::size_t>(bytes.size(), in.take(2))); break;
    case 2: fs::remove(file); return;
    case 3: {
      const std::size_t offset = static_cast<std::size_t>(in.take(2));
      const std::size_t n = static_cast<std::size_t>(in.take(2));
      for (std::size_t i = offset; i < std::min(bytes.size(), offset + n); ++i) bytes[i] = '\0';
      break;
    }
    case 4: {
      const std::size_t from = static_cast<std::size_t>(in.take(2));
      const std::size_t to = static_cast<std::size_t>(in.take(2));
      const std::size_t n = in.u8();
      for (std::size_t i = 0; i < n && from + i < bytes.size() && to + i < bytes.size(); ++i) {
        bytes[to + i] = bytes[from + i];
      }
      break;
    }
    default: {
      const fs::path& other = files[in.u8() % files.size()];
      const std::string theirs = read_file(other);
      write_file(other, bytes);
      bytes = theirs;
      break;
    }
  }
  write_file(file, bytes);
}

void check(const TranscriptStore& t) {
  const auto& gaps = t.damaged();
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    if (!(gaps[i].from < gaps[i].to)) violated();
    if (i > 0 && gaps[i].from < gaps[i - 1].to) violated();
    if (gaps[i].from < t.oldest() || gaps[i].to > t.end()) violated();
  }
  std::vector<char> buf(4096);
  Cursor at = t.oldest();
  int steps = 0;
  while (at < t.end() && ++steps < 100'000) {
    auto n = t.read(at, buf);
    auto m = TranscriptStore::read_folder(folder(), at, t.end(), buf);
    if (n.has_value() != m.has_value()) violated();
    if (n) {
      if (*n == 0 || *n != *m) violated();
      for (std::size_t i = 0; i < *n; ++i) {
        if (buf[i] != stream_byte(value(at) + i)) violated();
      }
      at = at + *n;
      continue;
    }
    const Error& e = n.error();
    if (e.code != m.error().code) violated();
    if (!e.cursor || Cursor{*e.cursor} <= at) {
      // cursor_expired past the last segment's records: nothing further is held.
      if (e.code == Errc::cursor_expired) break;
      violated();
    }
    if (e.code == Errc::data_lost) {
      if (!e.from || Cursor{*e.from} > at) violated();
    } else if (e.code != Errc::cursor_expired) {
      violated();
    }
    at = Cursor{*e.cursor};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  // The folder stays (a new one costs an fsync of its parent); its files go.
  std::error_code ec;
  fs::create_directories(folder(), ec);
  for (const auto& e : fs::directory_iterator(folder(), ec)) fs::remove(e.path(), ec);
  const std::uint64_t segment = 1024u << (in.u8() % 4);
  const int appends = 1 + in.u8() % 32;
  {
    auto t = TranscriptStore::open(folder(), {1u << 30, segment});
    if (!t) return 0;  // the temporary folder is unusable: nothing to learn
    std::uint64_t at = 0;
    std::uint64_t session = 1;
    std::string bytes;
    for (int i = 0; i < appends; ++i) {
      const std::size_t n = 1 + static_cast<std::size_t>(in.take(2) % 1500);
      const std::uint8_t how = in.u8();
      if (how & 1) ++session;
      if (how & 2) at += 1 + n;  // a clear: the bytes between are never kept
      bytes.resize(n);
      for (std::size_t k = 0; k < n; ++k) bytes[k] = stream_byte(at + k);
      if (!t->append(Cursor{at}, 1, session, bytes)) return 0;
      at += n;
      if (!t->append_annex(Cursor{at}, annex_record(static_cast<std::uint32_t>(i)))) return 0;
    }
  }
  const bool damaged = !in.done();
  for (int ops = 0; !in.done() && ops < 32; ++ops) damage(in);
  for (int pass = 0; pass < 2;
       ++pass) {  // the first open may cut a torn tail; the second sees the cut
    auto t = TranscriptStore::open(folder(), {1u << 30, segment});
    if (!t) {
      if (t.error().code != Errc::io_error) {
        fprintf(stderr, "ERR %s\n", t.error().describe().c_str());
        violated();
      }  // overlapping segments: refused
      return 0;
    }
    check(*t);
    const std::vector<std::string> records = t->take_annex();
    for (std::size_t i = 0; i < records.size(); ++i) {
      const std::int64_t k = annex_index(records[i]);
      if (k < 0) violated();                                          // never written
      if (!damaged && k != static_cast<std::int64_t>(i)) violated();  // lost or out of order
    }
    if (!damaged &&
        (records.size() != static_cast<std::size_t>(appends) || t->annex_damaged() != 0)) {
      violated();
    }
  }
  return 0;
}
