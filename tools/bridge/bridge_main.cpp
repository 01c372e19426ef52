// backscroll-bridge: an HTTP + WebSocket server that lets a browser (a phone, a second laptop)
// watch and drive the engine's actors (docs/bridge.md). Output is read from the actors' shared
// rings; snapshots, attachments, input and resizes go through the engine's control socket.
//
//   backscroll-bridge [--listen 127.0.0.1] [--port 7682] [--token-file PATH] [--web-root DIR]
//                     [--allow-origin URL]... [--allow-host NAME]...
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "shm/places.hpp"
#include "tools/bridge/auth.hpp"
#include "tools/bridge/bridge.hpp"

namespace {

// The page's files: installed beside the binary (share/backscroll/web under the prefix), or in
// the build tree (bin/../share/backscroll/web, which CMake fills).
std::filesystem::path default_web_root() {
  const auto exe = std::filesystem::read_symlink("/proc/self/exe");
  return exe.parent_path().parent_path() / "share" / "backscroll" / "web";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace backscroll;
  bridge::BridgeOptions options;
  std::string token_file;
  std::string web_root;
  CLI::App app{
      "backscroll-bridge: the engine's actors in a browser, over WebSocket (docs/bridge.md)",
      "backscroll-bridge"};
  app.set_version_flag("--version", std::string("backscroll-bridge ") + BACKSCROLL_VERSION,
                       "print the version and exit");
  app.add_option("--listen", options.listen, "IP address or host name to listen on")
      ->type_name("ADDR")
      ->capture_default_str();
  app.add_option("--port", options.port, "TCP port (0: any free one)")
      ->type_name("PORT")
      ->capture_default_str();
  app.add_option("--token-file", token_file,
                 "the token (created 0600 if missing; default $BACKSCROLL_HOME/bridge.token)")
      ->type_name("FILE");
  app.add_option("--web-root", web_root,
                 "folder of the page's files (default: share/backscroll/web beside the binary)")
      ->type_name("DIR");
  app.add_option("--allow-origin", options.allow_origins,
                 "another origin whose pages may connect (repeatable; e.g. https://example.com)")
      ->type_name("ORIGIN")
      ->allow_extra_args(false);
  app.add_option("--allow-host", options.allow_hosts,
                 "a host name the bridge answers to besides localhost and IP addresses "
                 "(repeatable)")
      ->type_name("NAME")
      ->allow_extra_args(false);
  std::string rules_path;
  app.add_option("--rules", rules_path,
                 "a JSON rules file for agent status, tried before the built-in rules "
                 "(docs/status-detector.md)")
      ->type_name("FILE");
  CLI11_PARSE(app, argc, argv);

  std::optional<term::StatusRules> rules;
  if (!rules_path.empty()) {
    auto loaded = term::StatusRules::load(rules_path);
    if (!loaded) {
      std::fprintf(stderr, "backscroll-bridge: %s\n", loaded.error().describe().c_str());
      return 2;
    }
    rules = std::move(*loaded);
    options.rules = &*rules;
  }
  const Places places = Places::from_environment();
  const std::filesystem::path token_path =
      token_file.empty() ? places.state_dir / "bridge.token" : std::filesystem::path(token_file);
  auto token = bridge::load_or_create_token(token_path);
  if (!token) {
    std::fprintf(stderr, "backscroll-bridge: %s\n", token.error().describe().c_str());
    return 1;
  }
  options.web_root = web_root.empty() ? default_web_root() : std::filesystem::path(web_root);
  if (!std::filesystem::exists(options.web_root / "index.html")) {
    std::fprintf(
        stderr,
        "backscroll-bridge: io_error: no page in %s (build the project: the page's files are "
        "copied there; or pass --web-root)\n",
        options.web_root.c_str());
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);
  boost::asio::io_context io(1);
  // Before anything is announced: a SIGTERM right after the "listening" line is a clean stop.
  boost::asio::signal_set stop(io, SIGINT, SIGTERM);
  stop.async_wait([&io](boost::system::error_code, int) { io.stop(); });
  bridge::Bridge server(io, places, options, *token);
  if (auto ok = server.listen(); !ok) {
    std::fprintf(stderr, "backscroll-bridge: %s\n", ok.error().describe().c_str());
    return 1;
  }
  const std::string host =
      options.listen.find(':') != std::string::npos ? "[" + options.listen + "]" : options.listen;
  // The first line is for programs (tests read the port); the token goes in the URL's fragment,
  // which a browser never sends to a server.
  std::printf("listening on http://%s:%u/\n", host.c_str(), server.port());
  std::printf("open http://%s:%u/#token=%s\n", host.c_str(), server.port(), token->c_str());
  std::printf("token file: %s\n", token_path.c_str());
  std::fflush(stdout);
  // A handler that throws (a bug: client input is checked without exceptions) is reported and
  // the bridge goes on serving the others.
  for (;;) {
    try {
      io.run();
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "backscroll-bridge: internal: %s\n", e.what());
    }
  }
}
