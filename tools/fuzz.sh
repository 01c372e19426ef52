#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/*_fuzz.cpp) from their checked-in corpus and merges what they
# find into it. CI's short fixed-seed run (tools/test.sh) is a smoke test; this is the real run.
#
#   tools/fuzz.sh [--minutes N] [--jobs J] [TARGET...]
#
# TARGET: frame_decoder, ring_header, vt_scanner, mirror, transcript (default: all of them, one after the
# other). Each runs N minutes of wall time (default 10) in J processes (default 1): N x J
# CPU-minutes. New coverage is merged into fuzz/corpus/TARGET (minimized with -merge=1; commit
# it); a crash or contract break stops the target, leaves its input in build-fuzz/findings/ and
# makes the script exit 1: turn it into a regression test (docs/snapshot.md, "The mirror
# fuzzer") and add it to the corpus. Builds with clang in build-fuzz (ASan + UBSan).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BACKSCROLL_FUZZ_BUILD_DIR:-$root/build-fuzz}"
minutes=10
jobs=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1' (--minutes N, --jobs J, targets)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
source "$root/fuzz/targets.sh"
[ ${#targets[@]} -gt 0 ] || targets=("${fuzz_targets[@]}")
max_len() { fuzz_max_len "$1" || exit 2; }
for t in "${targets[@]}"; do max_len "$t" >/dev/null; done

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBACKSCROLL_FUZZ=ON -DBACKSCROLL_TESTS=OFF -DBACKSCROLL_BENCH=OFF >/dev/null
ninja -C "$build" -j2 $(printf '%s_fuzz ' "${targets[@]}")

mkdir -p "$build/findings"
status=0
for t in "${targets[@]}"; do
  corpus="$root/fuzz/corpus/$t"
  scratch=$(mktemp -d)
  seconds=$((minutes * 60))
  echo "fuzz.sh: $t for $minutes min x $jobs job(s), from $(ls "$corpus" | wc -l) corpus inputs"
  rm -f "$build/findings/$t-"*
  parallel=()
  [ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
  set +e
  (cd "$scratch" && "$build/bin/${t}_fuzz" -dict="$root/fuzz/$t.dict" -max_len="$(max_len "$t")" \
      -rss_limit_mb=2048 -max_total_time="$seconds" "${parallel[@]}" \
      -print_final_stats=1 -artifact_prefix="$build/findings/$t-" "$scratch" "$corpus" \
      > "$build/findings/$t.log" 2>&1)
  rc=$?
  set -e
  grep -h "stat::number_of_executed_units\|Done [0-9]* runs" "$build/findings/$t.log" "$scratch"/fuzz-*.log 2>/dev/null | tail -n "$jobs" || true
  # Keep what the run covered that the corpus did not, even after a finding: -merge=1 adds to
  # the corpus (its first folder) only the inputs that bring new coverage.
  before=$(ls "$corpus" | wc -l)
  "$build/bin/${t}_fuzz" -merge=1 -max_len="$(max_len "$t")" -rss_limit_mb=2048 "$corpus" \
      "$scratch" > "$build/findings/$t-merge.log" 2>&1 || true
  added=$(( $(ls "$corpus" | wc -l) - before ))
  rm -rf "$scratch"
  echo "fuzz.sh: $t: $added new corpus inputs"
  # A slow unit (over 10 s) is no finding by itself on a shared machine: it is timed again
  # alone, and only one that is still slow counts.
  for slow in "$build/findings/$t-slow-unit-"*; do
    [ -e "$slow" ] || continue
    start=$(date +%s)
    "$build/bin/${t}_fuzz" "$slow" > /dev/null 2>&1 || true
    if [ $(( $(date +%s) - start )) -lt 5 ]; then
      echo "fuzz.sh: $t: $(basename "$slow") ran in under 5 s alone (the machine was busy): not kept"
      rm -f "$slow"
    fi
  done
  if [ "$rc" -ne 0 ] || ls "$build/findings/$t-"* 2>/dev/null | grep -qv '\.log$'; then
    echo "fuzz.sh: $t FOUND something: see $build/findings/$t.log and $build/findings/$t-*" >&2
    status=1
  fi
done
exit $status
