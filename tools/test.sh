#!/usr/bin/env bash
# The whole test suite from a fresh checkout: installs the Debian packages (.ci/setup), checks
# the formatting (tools/format.sh --check), builds everything with warnings as errors, runs
# ctest, then a short deterministic run of every fuzz target. .ci/run calls exactly this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BACKSCROLL_BUILD_DIR:-$root/build}"
"$root/.ci/setup"
# Formatting first: a few seconds, and a failure says which files before a long build.
"$root/tools/format.sh" --check
# Line tables only (-g1): backtraces keep file and line, and the build is ~25% faster than with
# full debug information (CI's 20-minute budget on 2 cores; most of it is this build).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBACKSCROLL_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
ninja -C "$build" -j2
cd "$build"
# rapidcheck properties draw fresh cases on every run by default. Here the seed comes from the
# commit, so a run of a commit is repeatable (a failure reproduces with the same RC_PARAMS) and
# each commit still explores new cases. RC_PARAMS from the caller wins.
if [ -z "${RC_PARAMS:-}" ]; then
  commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo 1)
  export RC_PARAMS="seed=$((16#$commit))"
fi
echo "test.sh: RC_PARAMS=$RC_PARAMS"
ctest -j2 --output-on-failure --timeout 300

# A short run of every fuzz target (fuzz/*_fuzz.cpp; docs/reliability.md, "Tools") from its
# checked-in corpus, in one clang build folder: the corpus, then BACKSCROLL_FUZZ_NEW new inputs
# (default 200; 0 skips the runs). A fixed seed keeps it deterministic: the same inputs on every
# run of a commit (BACKSCROLL_FUZZ_SEED sets it). New inputs go to a scratch folder; a finding
# fails the run and is written to $fuzz_build. Two lanes, one per core. The mirror target's
# corpus replay is the longest run (15-20 ms an input under ASan, ~4,200 inputs): 85% of
# its corpus run in one lane, the rest in the other after all the other targets.
fuzz_new="${BACKSCROLL_FUZZ_NEW:-200}"
if [ "$fuzz_new" -gt 0 ]; then
  source "$root/fuzz/targets.sh"
  fuzz_build="$build-fuzz"
  CC=clang CXX=clang++ cmake -S "$root" -B "$fuzz_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBACKSCROLL_FUZZ=ON -DBACKSCROLL_TESTS=OFF -DBACKSCROLL_BENCH=OFF >/dev/null
  ninja -C "$fuzz_build" -j2 $(printf '%s_fuzz ' "${fuzz_targets[@]}")
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  # fuzz_one TARGET [CORPUS [RUN-NAME]]: CORPUS defaults to fuzz/corpus/TARGET.
  fuzz_one() {
    local t="$1" corpus="${2:-$root/fuzz/corpus/$1}" name="${3:-$1}"
    local runs=$(( $(ls "$corpus" | wc -l) + fuzz_new ))
    mkdir -p "$scratch/$name"
    if "$fuzz_build/bin/${t}_fuzz" -dict="$root/fuzz/$t.dict" -max_len="$(fuzz_max_len "$t")" \
        -rss_limit_mb=2048 -seed="${BACKSCROLL_FUZZ_SEED:-1}" -runs="$runs" -print_final_stats=1 \
        -artifact_prefix="$fuzz_build/$name-" "$scratch/$name" "$corpus" > "$scratch/$name.log" 2>&1; then
      echo "test.sh: fuzz $name: $(grep -h '^Done' "$scratch/$name.log")"
    else
      cat "$scratch/$name.log"
      echo "test.sh: fuzz $name FOUND something: $fuzz_build/$name-*" >&2
      return 1
    fi
  }
  mkdir -p "$scratch/mirror-corpus-1" "$scratch/mirror-corpus-2"
  mirror_files=("$root"/fuzz/corpus/mirror/*)
  split=$(( ${#mirror_files[@]} * 17 / 20 ))
  cp -- "${mirror_files[@]:0:split}" "$scratch/mirror-corpus-1/"
  cp -- "${mirror_files[@]:split}" "$scratch/mirror-corpus-2/"
  fuzz_one mirror "$scratch/mirror-corpus-1" mirror-1 & mirror_lane=$!
  others=0
  for t in "${fuzz_targets[@]}"; do
    [ "$t" = mirror ] || fuzz_one "$t" || others=1
  done
  fuzz_one mirror "$scratch/mirror-corpus-2" mirror-2 || others=1
  mirror=0
  wait "$mirror_lane" || mirror=1
  [ "$others" -eq 0 ] && [ "$mirror" -eq 0 ]
fi
