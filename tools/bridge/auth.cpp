#include "tools/bridge/auth.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace backscroll::bridge {

namespace {

bool looks_like_token(std::string_view text) {
  if (text.size() < 32 || text.size() > 256) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
          c == '_'))
      return false;
  }
  return true;
}

Result<std::string> read_token(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO in its place must not hang the start (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail_errno("open " + path.string(), errno);
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  std::string text(512, '\0');
  const ssize_t n = stat_ok && S_ISREG(st.st_mode) ? ::read(fd, text.data(), text.size()) : 0;
  const int err = errno;
  ::close(fd);
  if (!stat_ok || n < 0) return fail_errno("read " + path.string(), err);
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    return fail(Errc::permission_denied, path.string() + " is not a regular file of this user");
  }
  if ((st.st_mode & 077) != 0) {
    return fail(
        Errc::permission_denied,
        path.string() + " is readable by others (chmod 600 it, or remove it for a new token)");
  }
  text.resize(static_cast<std::size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  if (!looks_like_token(text)) {
    return fail(Errc::bad_request, path.string() +
                                       " does not hold a token (32 to 256 letters, digits, '-' or "
                                       "'_'); remove it for a new one");
  }
  return text;
}

}  // namespace

Result<std::string> load_or_create_token(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return read_token(path);
    return fail_errno("create " + path.string(), errno);
  }
  const std::string token = random_hex(32);
  const std::string line = token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                       ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!written) {
    ::unlink(path.c_str());
    return fail_errno("write " + path.string(), err);
  }
  return token;
}

bool same_secret(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

std::string TicketBook::issue(Clock::time_point now) {
  if (expiry_.size() >= kMaxOutstanding) forget_expired(now);
  if (expiry_.size() >= kMaxOutstanding) return {};
  std::string ticket = random_hex(24);
  expiry_.emplace(ticket, now + kLifetime);
  return ticket;
}

bool TicketBook::redeem(std::string_view ticket, Clock::time_point now) {
  const auto it = expiry_.find(std::string(ticket));
  if (it == expiry_.end()) return false;
  const bool fresh = now <= it->second;
  expiry_.erase(it);
  return fresh;
}

void TicketBook::forget_expired(Clock::time_point now) {
  std::erase_if(expiry_, [now](const auto& entry) { return entry.second < now; });
}

}  // namespace backscroll::bridge
