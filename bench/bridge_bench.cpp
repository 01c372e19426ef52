// bench/bridge_bench: what the bridge (docs/bridge.md) delivers and costs (issue 6).
//
//   bridge_bench [--bytes N] [--rounds R] [--clients C] [--history-bytes H] [--opens K] [--json
//   FILE]
//
// 1. Flood: an actor prints N bytes (flood_writer) while C WebSocket clients watch it through
//    backscroll-bridge, each acknowledging every 64 KiB as the page does. Per client: bytes per
//    second received and how many catch-ups it needed (a client that falls behind is caught up
//    by a resume or a snapshot, never by queueing). The drain: from the flood's start until an
//    shm reader read the sealed session to its end, with the clients attached and with none,
//    alternating in one run; the ratio of medians is what the clients cost the drain.
// 2. First screen: an actor with H bytes of history; from opening a WebSocket to holding a
//    complete screen (hello, the snapshot, the ring's bytes after it, `replayed`), K times:
//    p50 / p99 / max, and the bytes sent against the H a raw replay would send.
// Also the CPU time the bridge process and the clients (this process) used per MB delivered to
// the clients: here all of them share the engine's 2 cores, which a phone's client does not.
// Timings are printed, never asserted.
#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/engine_under_test.hpp"
#include "bench/flood_drain.hpp"
#include "bench/stats.hpp"
#include "bench/thread_cpu.hpp"
#include "tools/bridge/client/bridge_client.hpp"

namespace {

using namespace backscroll;
using bench::Clock;
using Json = nlohmann::json;

struct ClientResult {
  std::uint64_t bytes = 0;
  double seconds = 0;
  int catch_ups = 0;  // after the first
};

// One watching client until the session's `exit`: counts output bytes, acks every 64 KiB.
ClientResult watch(testing::WsClient& client, std::uint64_t cursor, Clock::time_point start) {
  ClientResult r;
  std::uint64_t acked = cursor;
  bool catching_up = false;
  for (;;) {
    auto m = client.next(std::chrono::seconds(120));
    if (!m) break;
    if (!m->text) {
      r.bytes += m->data.size();
      if (!catching_up) cursor += m->data.size();
      if (!catching_up && cursor - acked >= 64 * 1024) {
        client.send({{"type", "ack"}, {"cursor", cursor}});
        acked = cursor;
      }
      continue;
    }
    const Json j = m->json();
    const std::string type = j.value("type", "");
    if (type == "snapshot" || type == "resume") {
      catching_up = true;
      ++r.catch_ups;
    } else if (type == "replayed") {
      catching_up = false;
      cursor = acked = j["cursor"].get<std::uint64_t>();
      client.send({{"type", "ack"}, {"cursor", cursor}});
    } else if (type == "exit") {
      break;
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

// One flood of `bytes` with `clients` WebSocket clients attached: the drain's seconds, and each
// client's result.
std::pair<double, std::vector<ClientResult>> flood_round(bench::EngineUnderTest& engine,
                                                         testing::BridgeProcess& bridge,
                                                         const std::string& actor,
                                                         std::uint64_t bytes, int clients) {
  const std::string writer = (bench::bin_dir() / "flood_writer").string();
  const auto spawned = engine.call(
      "spawn", {{"actor", actor},
                {"argv", {"sh", "-c", "read x; exec '" + writer + "' " + std::to_string(bytes)}}});
  const std::uint64_t session = spawned.header["session"].get<std::uint64_t>();
  std::vector<std::unique_ptr<testing::WsClient>> sockets;
  std::vector<std::uint64_t> cursors;
  for (int i = 0; i < clients; ++i) {
    sockets.push_back(std::make_unique<testing::WsClient>(
        bridge.port(), "ticket=" + bridge.ticket() + "&actor=" + actor + "&role=viewer"));
    cursors.push_back(testing::read_catch_up(*sockets.back()).replayed);
  }
  const Cursor from{engine.call("status", {{"actor", actor}})
                        .header["actors"][0]["committed"]
                        .get<std::uint64_t>()};
  std::vector<ClientResult> results(static_cast<std::size_t>(clients));
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(clients));
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      results[static_cast<std::size_t>(i)] =
          watch(*sockets[static_cast<std::size_t>(i)], cursors[static_cast<std::size_t>(i)], start);
    });
  }
  if (auto sent = engine.client().call("input", {{"actor", actor}}, "go\r"); !sent)
    bench::fail(sent.error());
  bench::drain_session(engine.places(), actor, session, from);
  const double drain = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& t : threads) t.join();
  (void)engine.call("delete", {{"actor", actor}});
  return {drain, results};
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t bytes = 64ull << 20;
  int rounds = 3;
  int clients = 16;
  std::uint64_t history_bytes = 10ull << 20;
  int opens = 20;
  std::string json_path;
  CLI::App app{
      "backscroll-bridge: a flood watched by WebSocket clients, and the time to a first screen"};
  app.add_option("--bytes", bytes, "bytes of each flood")->capture_default_str();
  app.add_option("--rounds", rounds, "floods per configuration (alternating)")
      ->capture_default_str();
  app.add_option("--clients", clients, "WebSocket clients watching the flood")
      ->capture_default_str();
  app.add_option("--history-bytes", history_bytes, "history of the first-screen actor")
      ->capture_default_str();
  app.add_option("--opens", opens, "first-screen samples")->capture_default_str();
  app.add_option("--json", json_path, "also write the results as JSON here");
  CLI11_PARSE(app, argc, argv);

  bench::EngineUnderTest engine(
      {"--ring-bytes", std::to_string(std::max<std::uint64_t>(history_bytes * 2, 16ull << 20))});
  testing::BridgeProcess bridge(engine.places());
  Json out = {{"bytes", bytes}, {"clients", clients}};

  // 1. Flood, alternating: no clients, then `clients` clients.
  std::vector<double> alone, watched, per_client, bridge_ms_per_mb, clients_ms_per_mb;
  int catch_ups = 0;
  const auto cpu_of = [](pid_t pid) {
    double total = 0;
    for (const auto& [name, seconds] : bench::thread_cpu_seconds(pid)) total += seconds;
    return total;
  };
  for (int r = 0; r < rounds; ++r) {
    const double a = flood_round(engine, bridge, "flood-a" + std::to_string(r), bytes, 0).first;
    const double bridge_before = cpu_of(bridge.pid()), self_before = cpu_of(::getpid());
    const auto [w, results] =
        flood_round(engine, bridge, "flood-w" + std::to_string(r), bytes, clients);
    std::uint64_t delivered = 0;
    for (const auto& c : results) delivered += c.bytes;
    const double mb = static_cast<double>(delivered) / 1e6;
    bridge_ms_per_mb.push_back((cpu_of(bridge.pid()) - bridge_before) * 1e3 / mb);
    clients_ms_per_mb.push_back((cpu_of(::getpid()) - self_before) * 1e3 / mb);
    alone.push_back(static_cast<double>(bytes) / a / 1e6);
    watched.push_back(static_cast<double>(bytes) / w / 1e6);
    for (const auto& c : results) {
      per_client.push_back(static_cast<double>(c.bytes) / c.seconds / 1e6);
      catch_ups += c.catch_ups;
    }
    std::fprintf(stderr, "round %d: drain %.1f MB/s alone, %.1f MB/s with %d clients\n", r,
                 alone.back(), watched.back(), clients);
  }
  const auto pc = bench::percentiles(per_client);
  std::printf("| measure | value |\n|---|---|\n");
  std::printf("| drain, no clients (median of %d) | %.1f MB/s |\n", rounds, bench::median(alone));
  std::printf("| drain, %d WebSocket clients | %.1f MB/s |\n", clients, bench::median(watched));
  std::printf("| drain ratio (clients / none) | %.3f |\n",
              bench::median(watched) / bench::median(alone));
  std::printf("| per client received: p50 / min | %.1f / %.1f MB/s |\n", pc.p50,
              *std::min_element(per_client.begin(), per_client.end()));
  std::printf("| CPU per MB delivered: bridge / the %d clients (this process) | %.2f / %.2f ms |\n",
              clients, bench::median(bridge_ms_per_mb), bench::median(clients_ms_per_mb));
  std::printf("| catch-ups per client per flood (fell behind) | %.2f |\n",
              static_cast<double>(catch_ups) / static_cast<double>(per_client.size()));
  out["drain_mb_s"] = {{"alone", alone},
                       {"watched", watched},
                       {"ratio", bench::median(watched) / bench::median(alone)}};
  out["client_mb_s"] = per_client;
  out["catch_ups"] = catch_ups;
  out["cpu_ms_per_mb_delivered"] = {{"bridge", bridge_ms_per_mb}, {"clients", clients_ms_per_mb}};

  // 2. First screen of an actor with history_bytes of history.
  const std::string writer = (bench::bin_dir() / "flood_writer").string();
  engine.call(
      "spawn",
      {{"actor", "history"},
       {"argv",
        {"sh", "-c", "'" + writer + "' " + std::to_string(history_bytes) + "; exec sleep 600"}}});
  for (;;) {
    const auto st = engine.call("status", {{"actor", "history"}}).header["actors"][0];
    if (st["committed"].get<std::uint64_t>() >= history_bytes) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the mirror parses the rest
  std::vector<double> ms;
  std::uint64_t sent = 0;
  for (int i = 0; i < opens; ++i) {
    const std::string ticket = bridge.ticket();
    const auto start = Clock::now();
    testing::WsClient client(bridge.port(), "ticket=" + ticket + "&actor=history");
    const testing::CatchUp c = testing::read_catch_up(client);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    sent = c.bytes.size();
  }
  const auto p = bench::percentiles(ms);
  std::printf("| first screen, %.0f MB of history: p50 / p99 / max | %.2f / %.2f / %.2f ms |\n",
              static_cast<double>(history_bytes) / 1e6, p.p50, p.p99, p.max);
  std::printf("| bytes sent for it (a raw replay: %llu) | %llu |\n",
              static_cast<unsigned long long>(history_bytes),
              static_cast<unsigned long long>(sent));
  out["first_screen_ms"] = {
      {"p50", p.p50}, {"p99", p.p99}, {"max", p.max}, {"samples", ms}, {"bytes", sent}};
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}
