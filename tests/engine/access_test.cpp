// Only the engine's own user can reach it (docs/security.md): the runtime directory is
// 0700, the socket and lock 0600 whatever the umask, the rings memfds of its uid; the engine
// refuses a runtime directory that is a symlink, belongs to someone else or is open to others; one
// engine per directory (a second exits with status 3); another user can neither connect nor map a
// ring, and a connection that does get through is refused by its peer credentials.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <sstream>
#include <string>

#include "shm/control_frame.hpp"
#include "shm/ring_reader.hpp"
#include "shm/ring_writer.hpp"
#include "tests/engine/engine_process.hpp"
#include "tests/engine/other_user.hpp"

namespace backscroll::testing {
namespace {

constexpr uid_t kNobody = kOtherUser;

mode_t mode_of(const std::filesystem::path& path, mode_t* type = nullptr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 07777;
  if (type) *type = st.st_mode & S_IFMT;
  return st.st_mode & 07777;
}

// connect() to the engine's socket; the errno, 0 on success (fd returned through `out`).
int try_connect(const Places& places, int* out = nullptr) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = places.socket_path().string();
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd);
    return err;
  }
  if (out) {
    *out = fd;
  } else {
    ::close(fd);
  }
  return 0;
}

void expect_owner_only_files(mode_t umask_value) {
  SCOPED_TRACE("umask " + std::to_string(umask_value));
  EngineProcess engine;
  EngineConfig config;
  config.umask = umask_value;
  ASSERT_TRUE(engine.start(config));
  engine.spawn("probe", {"sleep", "1000"});
  const Places& places = engine.places();
  mode_t type = 0;
  EXPECT_EQ(mode_of(places.runtime_dir, &type), 0700u);
  EXPECT_EQ(type, static_cast<mode_t>(S_IFDIR));
  EXPECT_EQ(mode_of(places.socket_path(), &type), 0600u);
  EXPECT_EQ(type, static_cast<mode_t>(S_IFSOCK));
  EXPECT_EQ(mode_of(places.lock_path(), &type), 0600u);
  EXPECT_EQ(type, static_cast<mode_t>(S_IFREG));
  EXPECT_EQ(engine.rings(), std::vector<std::string>{"probe"});
  const shm::RingAnnouncement ring = engine.ring_of("probe");
  for (const int fd : {ring.header_fd, ring.data_fd}) {
    struct stat st {};
    const std::string path = "/proc/" + std::to_string(engine.pid()) + "/fd/" + std::to_string(fd);
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_uid, ::geteuid());
  }
}

// Starts an engine on `runtime_dir` that must refuse it: non-zero exit, `message` in its log.
void expect_refusal(const std::filesystem::path& runtime_dir, std::string_view message) {
  EngineProcess engine;
  EngineConfig config;
  config.runtime_dir = runtime_dir;
  config.wait_ready = false;
  ASSERT_TRUE(engine.start(config));
  const auto status = engine.wait_exit();
  ASSERT_TRUE(status) << "the engine did not exit";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0) << "wait status " << *status;
  EXPECT_NE(engine.log().find(message), std::string::npos) << engine.log();
  EXPECT_FALSE(std::filesystem::exists(runtime_dir / "engine.sock"));
}

TEST(EngineAccess, FilesAreOwnerOnlyUnderAnOpenUmask) { expect_owner_only_files(0000); }

TEST(EngineAccess, FilesAreOwnerOnlyUnderATightUmask) { expect_owner_only_files(0077); }

TEST(EngineAccess, SymlinkAsTheRuntimeDirectoryIsRefused) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() / "real");
  ::chmod((dir.path() / "real").c_str(), 0700);
  std::filesystem::create_directory_symlink(dir.path() / "real", dir.path() / "rt");
  expect_refusal(dir.path() / "rt", "symbolic link");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "real" / "engine.lock"));
}

TEST(EngineAccess, RuntimeDirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to another uid";
  TempDir dir;
  const auto rt = dir.path() / "rt";
  ASSERT_EQ(::mkdir(rt.c_str(), 0700), 0);
  ASSERT_EQ(::chown(rt.c_str(), kNobody, kNobody), 0);
  expect_refusal(rt, "belongs to uid 65534");
}

TEST(EngineAccess, RuntimeDirectoryOpenToOthersIsRefused) {
  for (const mode_t mode : {0755, 0770, 0701, 0707}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    const auto rt = dir.path() / "rt";
    ASSERT_EQ(::mkdir(rt.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(rt.c_str(), mode), 0);
    expect_refusal(rt, "has mode");
  }
}

// --standby (the systemd unit's): a second engine waits beside the first, changes nothing, and
// becomes the engine once the first exits; its actors kept running until then.
TEST(EngineAccess, AStandbyEngineTakesOverWhenTheFirstExits) {
  EngineProcess first;
  ASSERT_TRUE(first.start());
  first.spawn("keeper", {"sleep", "1000"});

  EngineProcess standby;
  EngineConfig config = EngineConfig::with({"--standby", "--grace-ms", "500", "--drain-ms", "300"});
  config.runtime_dir = first.places().runtime_dir;
  config.wait_ready = false;
  ASSERT_TRUE(standby.start(config));
  wait_until([&] { return standby.log().find("standing by") != std::string::npos; },
             "the standby engine to stand by");
  EXPECT_EQ(first.status("keeper").at("state"), "running");
  auto pong = first.connect().call("ping");
  ASSERT_TRUE(pong) << pong.error().describe();
  EXPECT_EQ(pong->header.value("pid", 0), first.pid()) << "the socket is still the first's";

  first.call("shutdown");
  ASSERT_TRUE(first.wait_exit());
  wait_until(
      [&] {
        auto client = control::ControlClient::connect(first.places());
        return client && client->peer_pid() == standby.pid();
      },
      "the standby engine to answer on the socket");
  EXPECT_NE(standby.log().find("taking over"), std::string::npos) << standby.log();
}

// Stopping the standby (SIGTERM, as `systemctl --user stop`) stops the engine it stood beside.
TEST(EngineAccess, StoppingAStandbyEngineStopsTheRunningOne) {
  EngineProcess first;
  ASSERT_TRUE(first.start());
  EngineProcess standby;
  EngineConfig config = EngineConfig::with({"--standby"});
  config.runtime_dir = first.places().runtime_dir;
  config.wait_ready = false;
  ASSERT_TRUE(standby.start(config));
  wait_until([&] { return standby.log().find("standing by") != std::string::npos; },
             "the standby engine to stand by");
  ASSERT_EQ(::kill(standby.pid(), SIGTERM), 0);
  const auto status = standby.wait_exit();
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  const auto first_status = first.wait_exit();
  ASSERT_TRUE(first_status) << "the running engine was not stopped";
  EXPECT_TRUE(WIFEXITED(*first_status) && WEXITSTATUS(*first_status) == 0);
}

TEST(EngineAccess, SecondEngineOnTheSameDirectoryExitsWithThreeWhileTheFirstServesOn) {
  EngineProcess first;
  ASSERT_TRUE(first.start());
  const Json spawned = first.spawn("keeper", {"sleep", "1000"});
  const auto rings = first.rings();

  EngineProcess second;
  EngineConfig config;
  config.runtime_dir = first.places().runtime_dir;
  config.wait_ready = false;
  ASSERT_TRUE(second.start(config));
  const auto status = second.wait_exit();
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 3) << "wait status " << *status;
  EXPECT_NE(second.log().find("already_running"), std::string::npos) << second.log();

  // The first engine's socket, rings and actor are untouched.
  auto fresh = first.connect();
  auto pong = fresh.call("ping");
  ASSERT_TRUE(pong) << pong.error().describe();
  EXPECT_EQ(pong->header.value("pid", 0), first.pid());
  EXPECT_EQ(first.rings(), rings);
  EXPECT_EQ(first.status("keeper").at("pid"), spawned.at("pid"));
  EXPECT_EQ(first.status("keeper").at("state"), "running");
  EXPECT_TRUE(shm::RingReader::open(first.places(), "keeper"));
}

TEST(EngineAccess, AnotherUserCanNeitherConnectNorMapARing) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  EngineProcess engine;
  ASSERT_TRUE(engine.start());
  engine.spawn("secret", {"sh", "-c", "echo classified; exec sleep 1000"});
  engine.wait_output("secret", "classified");
  const shm::RingAnnouncement announced = engine.ring_of("secret");
  const Places places = engine.places();

  const std::string report = as_other_user([&]() -> std::string {
    std::string problems;
    if (const int err = try_connect(places); err != EACCES) {
      problems += "connect: expected EACCES, got " + std::string(std::strerror(err)) + "; ";
    }
    // RingReader::open asks the engine first: the socket is closed to this user...
    if (auto mine = shm::RingReader::open(places, "secret");
        mine || mine.error().code != Errc::permission_denied) {
      problems += "RingReader::open: expected permission_denied, got " +
                  (mine ? std::string("a ring") : mine.error().describe()) + "; ";
    }
    // ...and even knowing the announcement (it cannot), the ring cannot be mapped: the kernel
    // keeps another user out of the engine's descriptors.
    auto reader = shm::RingReader::open_announced(announced);
    if (reader) {
      problems += "RingReader::open_announced succeeded; ";
    } else if (reader.error().code != Errc::permission_denied) {
      problems += "RingReader::open_announced: " + reader.error().describe() + "; ";
    }
    const std::string path = "/proc/" + std::to_string(announced.engine_pid) + "/fd/" +
                             std::to_string(announced.data_fd);
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd >= 0 || errno != EACCES) problems += "open of " + path + " was not EACCES; ";
    return problems;
  });
  EXPECT_EQ(report, "");
  EXPECT_TRUE(engine.connect().call("ping"));
}

// Another user makes a valid ring, kept alive by a process of theirs, for an actor this user's
// engine does not have, holding a title change and an OSC 52 write. A reader asks the engine,
// which has no such actor: no_such_actor. Announced by hand, it is refused by the kernel.
TEST(EngineAccess, ARingAnotherUserMakesIsNeverOpened) {
  if (!can_act_as_another_user()) GTEST_SKIP() << "needs root to act as another user";
  EngineProcess engine;
  ASSERT_TRUE(engine.start());
  int numbers[2];
  ASSERT_EQ(::pipe(numbers), 0);
  const OtherUserProcess planter([&]() -> std::string {
    auto ring = shm::RingWriter::create({"evil", 1, shm::kMinCapacity, Cursor{0}});
    if (!ring) return "plant: " + ring.error().describe();
    const std::string payload = "\x1b]0;PWNED\x07\x1b]52;c;cm0gLXJmIH4K\x07";
    ring->append(std::as_bytes(std::span(payload)));
    static std::optional<shm::RingWriter> keep;  // mapped while the planter lives
    keep.emplace(std::move(*ring));
    const shm::RingAnnouncement a = keep->announcement();
    const std::string fds =
        std::to_string(a.header_fd) + " " + std::to_string(a.data_fd) + " " + a.nonce;
    const bool sent =
        ::write(numbers[1], fds.data(), fds.size()) == static_cast<ssize_t>(fds.size());
    return sent ? "" : "write";
  });
  ASSERT_EQ(planter.report(), "");
  auto reader = shm::RingReader::open(engine.places(), "evil");
  ASSERT_FALSE(reader.has_value()) << "another user's ring was opened";
  EXPECT_EQ(reader.error().code, Errc::no_such_actor) << reader.error().describe();

  ::close(numbers[1]);
  char text[128] = {};
  const ssize_t n = ::read(numbers[0], text, sizeof text - 1);
  ::close(numbers[0]);
  ASSERT_GT(n, 0);
  int header_fd = -1;
  int data_fd = -1;
  std::string nonce;
  std::istringstream(text) >> header_fd >> data_fd >> nonce;
  auto announced = shm::RingReader::open_announced(
      {"evil", planter.pid(), header_fd, data_fd, nonce, shm::kMinCapacity});
  ASSERT_FALSE(announced.has_value());
  // The kernel stops an ordinary reader; root (which runs this test) may open any descriptor and
  // is stopped by the owner check.
  EXPECT_TRUE(announced.error().code == Errc::permission_denied ||
              (announced.error().code == Errc::bad_segment &&
               announced.error().message.find("belongs to uid 65534") != std::string::npos))
      << announced.error().describe();
}

// The engine is every reader's root of trust, so a reader talks only to an engine of its own
// user: a socket another user serves in the runtime folder is refused before any request.
TEST(EngineAccess, AReaderRefusesAnEngineSocketServedByAnotherUser) {
  if (!can_act_as_another_user()) GTEST_SKIP() << "needs root to act as another user";
  TempDir dir;
  const auto rt = dir.path() / "rt";
  ASSERT_EQ(::mkdir(rt.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(rt.c_str(), 0777), 0);
  const Places places = Places::at(rt);
  const OtherUserProcess impostor([&]() -> std::string {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = places.socket_path().string();
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return "bind";
    if (::chmod(path.c_str(), 0666) != 0) return "chmod";
    if (::listen(fd, 8) != 0) return "listen";
    return "";  // the process stays alive, listening, until the test ends
  });
  ASSERT_EQ(impostor.report(), "");

  auto client = control::ControlClient::connect(places);
  ASSERT_FALSE(client.has_value()) << "connected to another user's socket";
  EXPECT_EQ(client.error().code, Errc::permission_denied);
  EXPECT_NE(client.error().message.find("runs as uid 65534"), std::string::npos)
      << client.error().describe();
  auto reader = shm::RingReader::open(places, "anything");
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code, Errc::permission_denied);
}

TEST(EngineAccess, PeerCredentialsRefuseAnotherUserWhoReachesTheSocket) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  EngineProcess engine;
  ASSERT_TRUE(engine.start());
  // Open the door the folder's mode normally keeps shut, to reach the second lock (SO_PEERCRED).
  const Places places = engine.places();
  const auto parent = places.runtime_dir.parent_path();  // the fixture's mkdtemp folder, 0700
  ASSERT_EQ(::chmod(parent.c_str(), 0711), 0);
  ASSERT_EQ(::chmod(places.runtime_dir.c_str(), 0711), 0);
  ASSERT_EQ(::chmod(places.socket_path().c_str(), 0666), 0);

  const std::string report = as_other_user([&]() -> std::string {
    int fd = -1;
    if (const int err = try_connect(places, &fd); err != 0) {
      return "connect failed: " + std::string(std::strerror(err));
    }
    timeval tv{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const std::string spawn = control::encode_frame(
        {{"op", "spawn"}, {"id", 1}, {"actor", "intruder"}, {"argv", {"sleep", "1000"}}});
    [[maybe_unused]] const ssize_t sent = ::send(fd, spawn.data(), spawn.size(), MSG_NOSIGNAL);
    control::FrameDecoder decoder;
    std::string problems;
    int frames = 0;
    for (;;) {
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n < 0 && errno != ECONNRESET) return "recv: " + std::string(std::strerror(errno));
      if (n <= 0) break;
      decoder.feed({buf, static_cast<std::size_t>(n)});
      while (auto frame = decoder.next()) {
        if (!*frame) break;
        ++frames;
        auto error = control::error_from_response((*frame)->header);
        if (!error || error->code != Errc::permission_denied) {
          problems += "unexpected frame " + (*frame)->header.dump() + "; ";
        }
      }
    }
    ::close(fd);
    if (frames != 1) problems += "expected one refusal frame, got " + std::to_string(frames);
    return problems;
  });
  ::chmod(places.socket_path().c_str(), 0600);
  ::chmod(places.runtime_dir.c_str(), 0700);
  ::chmod(parent.c_str(), 0700);
  EXPECT_EQ(report, "");
  EXPECT_EQ(engine.call("list").header.at("actors").size(), 0u) << "the intruder's spawn ran";
  EXPECT_NE(engine.log().find("refused a control connection from uid 65534"), std::string::npos);
}

}  // namespace
}  // namespace backscroll::testing
