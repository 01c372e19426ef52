#include "tests/engine/crash_image.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>

namespace backscroll::testing {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kSector = 512;

std::optional<std::uint64_t> inode_of(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_ino);
}

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What a disk may hold of a file whose synced contents were `synced` and whose contents are now
// `now`: sectors equal in both are kept; any other sector is the synced one, the new one or
// zeros; the length is anywhere between the two.
std::string mix(const std::string& synced, const std::string& now, std::mt19937_64& gen) {
  const std::size_t lo = std::min(synced.size(), now.size());
  const std::size_t hi = std::max(synced.size(), now.size());
  const std::size_t length = lo + (hi > lo ? gen() % (hi - lo + 1) : 0);
  std::string out(length, '\0');
  for (std::size_t at = 0; at < length; at += kSector) {
    const std::size_t n = std::min(kSector, length - at);
    const auto sector = [&](const std::string& s) {
      std::string part = at < s.size() ? s.substr(at, n) : std::string();
      part.resize(n, '\0');
      return part;
    };
    const std::string a = sector(synced), b = sector(now);
    const bool synced_whole = at + n <= synced.size();
    if (a == b && synced_whole) {
      out.replace(at, n, a);
      continue;
    }
    switch (gen() % 3) {
      case 0: out.replace(at, n, a); break;
      case 1: out.replace(at, n, b); break;
      default: break;  // zeros
    }
  }
  return out;
}

}  // namespace

bool CrashRecorder::before(store::IoOp op, const fs::path& path) {
  std::unique_lock lock(mutex_);
  if (released_) return true;  // the engine is gone: nothing reaches the disk any more
  if (++operations_ != freeze_at_) {
    // The file's inode number may be reused once it is gone; durable names keep their copy.
    if (op == store::IoOp::remove) {
      if (const auto inode = inode_of(path)) {
        synced_.erase(*inode);
        for (auto& [folder, names] : durable_names_) {
          for (auto& [name, durable] : names) {
            if (durable.inode == *inode) durable.inode = 0;  // no longer any existing file
          }
        }
      }
    }
    return false;
  }
  frozen_ = true;
  changed_.notify_all();
  changed_.wait(lock, [&] { return released_; });
  return true;
}

void CrashRecorder::after(store::IoOp op, const fs::path& path) {
  std::lock_guard lock(mutex_);
  if (op == store::IoOp::sync) {
    const auto inode = inode_of(path);
    if (!inode) return;
    synced_[*inode] = contents(path);
    for (auto& [folder, names] : durable_names_) {
      for (auto& [name, durable] : names) {
        if (durable.inode == *inode) durable.synced = synced_[*inode];
      }
    }
  } else if (op == store::IoOp::folder_sync) {
    auto& names = durable_names_[path];
    names.clear();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      const auto inode = inode_of(entry.path());
      if (!inode) continue;
      const auto s = synced_.find(*inode);
      names[entry.path().filename()] = {*inode, s == synced_.end() ? std::string() : s->second};
    }
  }
}

bool CrashRecorder::frozen() {
  std::lock_guard lock(mutex_);
  return frozen_;
}

void CrashRecorder::release() {
  std::lock_guard lock(mutex_);
  released_ = true;
  changed_.notify_all();
}

void CrashRecorder::write_image(const fs::path& folder, const fs::path& to, std::mt19937_64& gen) {
  std::lock_guard lock(mutex_);
  fs::create_directories(to);
  std::map<std::string, Inode> now;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (const auto inode = inode_of(entry.path())) now[entry.path().filename()] = *inode;
  }
  const auto& durable = durable_names_[folder];
  std::set<std::string> names;
  for (const auto& [name, d] : durable) names.insert(name);
  for (const auto& [name, inode] : now) names.insert(name);
  const auto synced = [&](Inode inode) {
    const auto s = synced_.find(inode);
    return s == synced_.end() ? std::string() : s->second;
  };
  for (const std::string& name : names) {
    const auto d = durable.find(name);
    const auto n = now.find(name);
    std::optional<std::string> image;
    const bool same_file = d != durable.end() && n != now.end() && d->second.inode == n->second;
    if (same_file) {
      image = mix(synced(n->second), contents(folder / name), gen);
    } else if (gen() % 2 == 0) {
      // The name's change since the last folder fsync (created, removed, renamed over) did not
      // reach the disk: the durable file, if any, with what its last sync made durable.
      if (d != durable.end()) image = d->second.synced;
    } else if (n != now.end()) {
      image = mix(synced(n->second), contents(folder / name), gen);
    }
    if (image) std::ofstream(to / name, std::ios::binary) << *image;
  }
}

}  // namespace backscroll::testing
