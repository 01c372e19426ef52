// backscrolld: read settings.yaml, parse the command line (flags win over the file), build the
// engine, run it in the foreground. Detaching is the caller's business (the CLI's autostart, or
// systemd).
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/settings.hpp"
#include "engine/settings_reload.hpp"
#include "engine/standby.hpp"

int main(int argc, char** argv) {
  using namespace backscroll;
  engine::EngineSettings settings;
  std::uint64_t ring_bytes = settings.actor.ring_bytes;
  std::uint64_t grace_ms = static_cast<std::uint64_t>(settings.actor.grace.count());
  std::uint64_t drain_ms = static_cast<std::uint64_t>(settings.actor.drain_window.count());
  bool verbose = false;

  CLI::App app{"backscrolld: the backscroll engine (one per user; runs in the foreground)",
               "backscrolld"};
  app.set_version_flag("--version", std::string("backscrolld ") + BACKSCROLL_VERSION,
                       "print the version and exit");
  app.add_option("--ring-bytes", ring_bytes,
                 "ring size per actor; 0 means the default 10485760, capped at 50000000 "
                 "(default: settings.yaml terminal_transcript.per_actor_bytes)")
      ->type_name("BYTES");
  app.add_option("--grace-ms", grace_ms, "stop: SIGKILL this long after SIGHUP")
      ->type_name("MS")
      ->capture_default_str();
  app.add_option("--drain-ms", drain_ms,
                 "after a program exits, read its PTY at most this long for late output")
      ->type_name("MS")
      ->capture_default_str();
  std::uint64_t release_ms = static_cast<std::uint64_t>(settings.release_idle_ring.count());
  app.add_option("--release-ms", release_ms,
                 "release a stopped actor's ring this long after its seal (its last 256 KiB stay "
                 "in the completed-session cache)")
      ->type_name("MS")
      ->capture_default_str();
  bool persist = false;
  app.add_flag("--persist", persist,
               "keep durable transcripts (as settings.yaml terminal_transcript.persist: true)");
  std::uint64_t first_cursor = 0;
  app.add_option("--first-cursor", first_cursor,
                 "test seam: new actors' cursors start here instead of 0 (the cursor space's far "
                 "end; docs/reliability.md)")
      ->type_name("CURSOR")
      ->group("");  // not in --help
  bool no_mirror = false;
  app.add_flag("--no-mirror", no_mirror,
               "run without the mirror thread (benchmarks): snapshots answer raw_replay");
  bool no_keyframes = false;
  app.add_flag("--no-keyframes", no_keyframes,
               "take no keyframes (benchmarks: their cost); a past screen is then rebuilt "
               "from the session's start")
      ->group("");  // not in --help
  std::string cgroups = "auto";
  app.add_option("--cgroups", cgroups,
                 "auto: each actor in a cgroup of its own where the engine's cgroup is delegated "
                 "to it; off: never (docs/architecture.md, \"Process trees\")")
      ->type_name("auto|off")
      ->check([](const std::string& v) {
        return v == "auto" || v == "off" ? std::string() : "must be auto or off";
      })
      ->capture_default_str();
  app.add_flag("-v,--verbose", verbose, "log debug lines");
  bool standby = false;
  app.add_flag("--standby", standby,
               "when another engine owns the runtime directory, wait beside it instead of "
               "exiting with status 3: become the engine when it exits; on SIGTERM, stop it "
               "(the systemd unit's way; docs/systemd.md)");
  CLI11_PARSE(app, argc, argv);

  if (verbose) engine::set_log_level(engine::LogLevel::debug);
  const Places places = Places::from_environment();
  const auto file = engine::load_settings(places.settings_path());
  if (!file) {
    std::fprintf(stderr, "backscrolld: %s\n", file.error().message.c_str());
    return 2;
  }
  settings.persist = file->persist || persist;
  settings.transcript.retain_bytes = file->per_actor_bytes;
  settings.snapshot_scrollback = engine::snapshot_scrollback_of(file->snapshot_scrollback_lines);
  settings.ring_bytes_from_flag = app.count("--ring-bytes") > 0;
  settings.persist_from_flag = persist;
  settings.actor.ring_bytes =
      engine::ring_bytes_of(settings.ring_bytes_from_flag ? ring_bytes : file->per_actor_bytes);
  settings.actor.grace = std::chrono::milliseconds(grace_ms);
  settings.actor.drain_window = std::chrono::milliseconds(drain_ms);
  settings.mirror = !no_mirror;
  settings.cgroups = cgroups == "auto";
  settings.keyframes = !no_keyframes;
  settings.actor.first_cursor = Cursor{first_cursor};
  settings.release_idle_ring = std::chrono::milliseconds(release_ms);
  settings.retention = engine::retention_of(file->retention_days);
  settings.memory_budget = file->memory_budget;
  settings.file_at_start = *file;
  settings.file_now = *file;

  for (;;) {
    auto engine = engine::Engine::create(places, settings);
    if (engine) return (*engine)->run();
    if (!standby || engine.error().code != Errc::already_running) {
      std::fprintf(stderr, "backscrolld: %s\n", engine.error().describe().c_str());
      return engine.error().code == Errc::already_running ? 3 : 1;
    }
    const auto ended = engine::stand_by(places);
    if (!ended) {
      std::fprintf(stderr, "backscrolld: %s\n", ended.error().describe().c_str());
      return 1;
    }
    if (*ended == engine::StandbyEnd::stopped) return 0;
    // The other engine is gone: claim the runtime directory (another may win it again).
  }
}
