#!/usr/bin/env python3
# The benchmark report (issue 5): runs the end-to-end suite and writes, into --out,
#   report.md       the machine, the tables, each goal of issue 5 beside what was measured
#   results.json    everything measured (each benchmark's own JSON, merged)
#   flood.png       drain throughput per workload and configuration
#   snapshot.png    snapshot latency distributions
# It runs flood_suite (plain read() loop, backscroll, tmux on the same files), snapshot_bench,
# reader_bench and scale_bench (with a 10-minute soak), one after another, never two at once;
# each compares its configurations within the same run. Nothing is asserted: --quick (the ctest
# smoke test) only checks that every part runs and the files are written.
#
#   bench/report.py [--build DIR] [--out DIR] [--quick]
#
# Any python3 runs --help; a report needs matplotlib (Debian's python3-matplotlib: .ci/setup
# installs it, and tmux).
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Issue 5's goals that these benchmarks measure: (key in the report, words, check).
FLOOD_GOAL = 0.9          # backscroll / plain loop, plain-text floods
TMUX_GOAL = 3.0           # backscroll / tmux, plain-text floods
# Issue 20: the engine's CPU per MB over the plain reader's, by kind of output.
CPU_GOALS = {"log": 1.5, "build": 1.5, "color": 1.5, "utf8": 1.5, "tui": 2.5, "ncurses": 2.5}
SNAPSHOT_GOALS_MS = {     # p99
    "op_80x24_flooding": 1.0,
    "op_200x50_flooding": 20.0,
    "op_quiet_8_flooding": 2.0,
}


def run_json(argv, label):
    """Runs one benchmark that writes --json, echoing its table; returns the JSON."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        print(f"== {label}: {' '.join(argv)}", flush=True)
        subprocess.run(argv + ["--json", path], check=True)
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def command_output(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "compiler": command_output(["c++", "--version"]).splitlines()[0],
        "libvterm": command_output(["pkg-config", "--modversion", "vterm"]),
        "tmux": command_output(["tmux", "-V"]),
        "load_before": os.getloadavg()[0],
    }


def mark(ok):
    return "met" if ok else "**not met**"


def flood_table(flood):
    rows = ["| workload | configuration | MB/s (median) | rounds | ratio to plain | ratio to tmux |",
            "|---|---|---|---|---|---|"]
    order = ["plain", "backscroll", "no_keyframes", "no_mirror", "tmux"]
    for workload, w in flood["workloads"].items():
        for config in order:
            if config not in w:
                continue
            c = w[config]
            rounds = ", ".join(f"{x:.1f}" for x in c["mb_s"])
            tmux = f"{c['ratio_to_tmux']:.2f}" if "ratio_to_tmux" in c else "-"
            rows.append(f"| {workload} | {config} | {c['median']:.1f} | {rounds} | "
                        f"{c['ratio_to_plain']:.3f} | {tmux} |")
    return "\n".join(rows)


def snapshot_table(snap):
    rows = ["| case | p50 ms | p99 ms | max ms | fewest history lines drawn |", "|---|---|---|---|---|"]
    for key, v in snap.items():
        if not key.startswith("op_"):
            continue
        rows.append(f"| {key[3:]} | {v['p50_ms']:.3f} | {v['p99_ms']:.3f} | {v['max_ms']:.3f} | "
                    f"{v.get('fewest_history_lines', '-')} |")
    for key, v in snap.get("build", {}).items():
        rows.append(f"| build in process, {key} | {v['p50_ms']:.3f} | {v['p99_ms']:.3f} | "
                    f"{v['max_ms']:.3f} | {key.split('+')[1]} |")
    for key, where in (("screen_at", "in the ring"), ("screen_at_transcript", "in the transcript")):
        if key not in snap:
            continue
        v = snap[key]
        rows.append(f"| at a past cursor ({v['stream_bytes'] / 1e6:.0f} MB stream {where}, "
                    f"{v['keyframes']} keyframes, mean replay {v['mean_replayed_bytes'] / 1024:.0f} KiB) | "
                    f"{v['p50_ms']:.3f} | {v['p99_ms']:.3f} | {v['max_ms']:.3f} | - |")
    return "\n".join(rows)


def readers_table(readers):
    w = readers["wake_up_us"]
    cost = readers["readers_cost"]
    return "\n".join([
        "| reader | figure |", "|---|---|",
        f"| catch-up on a full 16 MiB ring, in place | {readers['catch_up_gb_s']['median']:.1f} GB/s |",
        f"| wake-up, commit to a sleeping reader process: p50 / p99 / max | "
        f"{w['p50']:.1f} / {w['p99']:.1f} / {w['max']:.1f} us |",
        f"| drain, 16 readers (8 stopped) / 1 reader, --no-mirror | {cost['ratio']:.3f} |",
    ])


def scale_table(scale):
    a, m, soak = scale["aggregate"], scale["idle_actor_kib"], scale["soak"]
    return "\n".join([
        "| scale | figure |", "|---|---|",
        f"| aggregate drain, 8 of 64 actors flooding / 8 plain loops | ratio {a['ratio']:.3f} |",
        f"| memory per idle actor: private / ring pages written | {m['private']:.0f} KiB / {m['ring_pages']:.0f} KiB |",
        f"| soak {soak['seconds']} s, 64 actors, 8 flooding ({soak['floods']} floods): bytes checked / lost "
        f"| {soak['bytes_checked'] / 2**20:.1f} MiB / {soak['bytes_lost']} |",
        f"| soak: private memory, first / last quarter (medians) / max; slope | {soak['early_mib']:.1f} / "
        f"{soak['late_mib']:.1f} / {max(soak['rss_anon_mib']):.1f} MiB; "
        f"{soak['slope_mib_per_minute']:+.3f} MiB per minute |",
    ] + [
        f"| soak: attach with snapshot, minute {m['minute']}: p50 / p99 / max of {m['samples']} | "
        f"{m['p50_ms']:.2f} / {m['p99_ms']:.2f} / {m['max_ms']:.2f} ms |"
        for m in soak["attach_per_minute"]
    ])


def goals_table(flood, snap, readers, scale):
    rows = ["| goal (issue 5 where no other is named) | measured | |", "|---|---|---|"]

    def goal(what, measured, ok):
        rows.append(f"| {what} | {measured} | {mark(ok)} |")

    for workload in ("log", "build"):
        w = flood["workloads"].get(workload)
        if not w:
            continue
        ratio = w["backscroll"]["ratio_to_plain"]
        goal(f"flood, {workload}: backscroll >= {FLOOD_GOAL} x plain loop", f"{ratio:.3f}",
             ratio >= FLOOD_GOAL)
        if "ratio_to_tmux" in w["backscroll"]:
            t = w["backscroll"]["ratio_to_tmux"]
            goal(f"flood, {workload}: backscroll >= {TMUX_GOAL} x tmux", f"{t:.2f}", t >= TMUX_GOAL)
    for workload, w in flood["workloads"].items():
        limit = CPU_GOALS.get(workload)
        if limit is None or "engine_cpu_to_plain_reader" not in w:
            continue
        ratio = w["engine_cpu_to_plain_reader"]
        # Each round beside how much slower the slowest CPU ran a fixed loop than the fastest
        # (bench/cpu_speed.hpp): on a shared host a round on unlevel CPUs reads with it.
        rounds = ", ".join(f"{r:.2f}x (CPUs {c:.2f})" for r, c in
                           zip(w.get("engine_cpu_to_plain_reader_per_round", []),
                               w.get("slowest_cpu_per_round", [])))
        goal(f"flood, {workload}: engine CPU per MB <= {limit:g} x the plain reader's (issue 20)",
             f"{ratio:.2f}x" + (f" (rounds: {rounds})" if rounds else ""), ratio <= limit)
    for workload, w in flood["workloads"].items():
        if "no_keyframes" in w:
            cost = 1 - w["backscroll"]["median"] / w["no_keyframes"]["median"]
            goal(f"flood, {workload}: keyframes cost the drain <= 3% (issue 18)",
                 f"{100 * cost:+.1f}%", cost <= 0.03)
    for key, where in (("screen_at", "ring"), ("screen_at_transcript", "transcript")):
        if snap.get(key):
            p99 = snap[key]["p99_ms"]
            goal(f"snapshot at a past cursor of a {snap[key]['stream_bytes'] / 1e6:.0f} MB {where}: "
                 "p99 <= 50 ms (issue 18)", f"{p99:.3f} ms", p99 <= 50)
    for workload, what in (("tui", "TUI redraws"), ("ncurses", "ncurses redraws")):
        w = flood["workloads"].get(workload)
        if w and "ratio_to_tmux" in w["backscroll"]:
            t = w["backscroll"]["ratio_to_tmux"]
            goal(f"flood, {what}: backscroll >= tmux", f"{t:.2f}", t >= 1.0)
    for key, limit in SNAPSHOT_GOALS_MS.items():
        if key in snap:
            p99 = snap[key]["p99_ms"]
            goal(f"snapshot {key[3:]}: p99 <= {limit:g} ms", f"{p99:.3f} ms", p99 <= limit)
    gbps = readers["catch_up_gb_s"]["median"]
    goal("reader catch-up >= 5 GB/s", f"{gbps:.1f} GB/s", gbps >= 5)
    p99 = readers["wake_up_us"]["p99"]
    goal("reader wake-up p99 <= 20 us", f"{p99:.1f} us", p99 <= 20)
    ratio = readers["readers_cost"]["ratio"]
    goal("16 readers cost the drain <= 5%", f"ratio {ratio:.3f}", ratio >= 0.95)
    agg = scale["aggregate"]["ratio"]
    goal("64 actors, 8 flooding: aggregate >= 0.9 x 8 plain loops", f"{agg:.3f}", agg >= 0.9)
    private = scale["idle_actor_kib"]["private"]
    goal("idle actor: memory beyond its ring <= 1 MiB", f"{private:.0f} KiB", private <= 1024)
    slope = scale["soak"]["slope_mib_per_minute"]
    goal(f"RSS flat over the soak ({scale['soak']['seconds']} s): slope within 0.1 MiB per minute",
         f"{slope:+.3f} MiB per minute (last quarter {scale['soak']['growth_mib']:+.2f} MiB over the first)",
         abs(slope) <= 0.1)
    lost = scale["soak"]["bytes_lost"]
    goal("soak: no byte lost (every flood checked by an shm reader)", f"{lost} bytes", lost == 0)
    return "\n".join(rows)


def pyplot():
    """matplotlib's pyplot, imported only when a report is drawn (--help needs none)."""
    try:
        import matplotlib
    except ImportError:
        sys.exit("report.py: the plots need matplotlib: apt-get install python3-matplotlib "
                 "(or pip install matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_flood(flood, path):
    plt = pyplot()
    order = ["plain", "backscroll", "no_mirror", "tmux"]
    workloads = list(flood["workloads"])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / len(order)
    for i, config in enumerate(order):
        values = [flood["workloads"][w].get(config, {}).get("median", 0) for w in workloads]
        xs = [x + (i - (len(order) - 1) / 2) * width for x in range(len(workloads))]
        bars = ax.bar(xs, values, width, label=config)
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_ylabel("MB/s drained (median)")
    ax.set_title(f"PTY flood, {flood['bytes'] >> 20} MiB per workload, cooked 80x24 PTY")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_snapshots(snap, path):
    plt = pyplot()
    cases = [k for k in snap if k.startswith("op_") and snap[k].get("samples_ms")]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for key in cases:
        xs = sorted(snap[key]["samples_ms"])
        ys = [(i + 1) / len(xs) for i in range(len(xs))]
        ax.step(xs, ys, where="post", label=key[3:])
    ax.set_xscale("log")
    ax.set_xlabel("snapshot op, request to reply (ms, log scale)")
    ax.set_ylabel("fraction of requests")
    ax.set_title("Snapshot latency distribution")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(
        description="backscroll benchmark report: runs flood_suite (plain read() loop, "
        "backscroll, tmux on the same files), snapshot_bench, reader_bench and scale_bench one "
        "after another and writes report.md, results.json, flood.png and snapshot.png.",
        epilog="A full report takes about 21 minutes on 2 cores (scale_bench soaks for 10); "
        "--quick about 1 minute. Run it on an otherwise idle machine: the figures are ratios "
        "within one run, but a busy machine widens their spread. See docs/performance.md.")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), metavar="DIR",
                        help="the CMake build directory holding bin/flood_suite and the other "
                        "benchmarks (default: %(default)s)")
    parser.add_argument("--out", default="bench-report", metavar="DIR",
                        help="where the report files go, created if needed (default: "
                        "%(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and one round: checks that every part runs (the "
                        "ctest smoke test); its figures mean nothing")
    args = parser.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    os.makedirs(args.out, exist_ok=True)

    results = {"machine": machine(), "quick": args.quick}
    flood_args = ["--bytes", str(4 << 20), "--rounds", "1"] if args.quick else \
                 ["--bytes", str(128 << 20), "--rounds", "3",
                  "--workloads", "log,build,color,utf8,tui,ncurses"]
    results["flood"] = run_json([os.path.join(bin_dir, "flood_suite")] + flood_args, "flood suite")
    snap_args = ["--quick"] if args.quick else []
    results["snapshot"] = run_json([os.path.join(bin_dir, "snapshot_bench")] + snap_args,
                                   "snapshot latency")
    results["readers"] = run_json([os.path.join(bin_dir, "reader_bench")] + snap_args, "readers")
    results["scale"] = run_json([os.path.join(bin_dir, "scale_bench")] + snap_args, "scale")

    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    plot_flood(results["flood"], os.path.join(args.out, "flood.png"))
    plot_snapshots(results["snapshot"], os.path.join(args.out, "snapshot.png"))

    m = results["machine"]
    report = f"""# backscroll benchmark report{' (quick mode: sizes too small to mean anything)' if args.quick else ''}

Machine: {m['cores']} cores ({m['cpu']}), {m['memory_gib']} GiB, Linux {m['kernel']}, {m['compiler']},
libvterm {m['libvterm']}, {m['tmux']}; {m['date']}, load average {m['load_before']:.2f} before the run.

## Goals

{goals_table(results['flood'], results['snapshot'], results['readers'], results['scale'])}

## Flood

Each workload is a file `cat` prints on a cooked 80x24 PTY; configurations alternate within a
round: `plain` (blocking read() loop), `backscroll` (as shipped, durable transcript on, two shm
readers), `no_keyframes` (the same with --no-keyframes: what keyframes cost), `no_mirror`
(--no-mirror, one reader), `tmux` (detached session).

{flood_table(results['flood'])}

![flood](flood.png)

## Snapshots

{snapshot_table(results['snapshot'])}

![snapshot latency](snapshot.png)

## Readers

{readers_table(results['readers'])}

## Scale

{scale_table(results['scale'])}
"""
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(report)
    print(f"report written to {os.path.abspath(args.out)}/report.md")


if __name__ == "__main__":
    sys.exit(main())
