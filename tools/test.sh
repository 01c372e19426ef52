#!/usr/bin/env bash
# The whole test suite from a fresh checkout: installs the Debian packages (.ci/setup), builds
# everything with warnings as errors, runs ctest, then a short deterministic run of the mirror
# fuzzer. .ci/run calls exactly this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BACKSCROLL_BUILD_DIR:-$root/build}"
"$root/.ci/setup"
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

# A short run of the mirror fuzzer (fuzz/mirror_fuzz.cpp: the snapshot round trip on arbitrary
# output; docs/snapshot.md, "Tests") from the checked-in corpus, in its own clang build folder.
# A fixed seed and run count keep it deterministic: the same inputs on every run of a commit.
# New inputs go to a scratch folder; a finding fails the run and is written to $fuzz_build.
# BACKSCROLL_FUZZ_RUNS sets the number of inputs (0 skips it), BACKSCROLL_FUZZ_SEED the seed.
fuzz_runs="${BACKSCROLL_FUZZ_RUNS:-3000}"
if [ "$fuzz_runs" -gt 0 ]; then
  fuzz_build="$build-mirror-fuzz"
  CC=clang CXX=clang++ cmake -S "$root" -B "$fuzz_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBACKSCROLL_FUZZ=ON -DBACKSCROLL_TESTS=OFF -DBACKSCROLL_BENCH=OFF >/dev/null
  ninja -C "$fuzz_build" -j2 mirror_fuzz
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  "$fuzz_build/bin/mirror_fuzz" -dict="$root/fuzz/mirror.dict" -max_len=4096 -rss_limit_mb=2048 \
    -seed="${BACKSCROLL_FUZZ_SEED:-1}" -runs="$fuzz_runs" -print_final_stats=1 \
    -artifact_prefix="$fuzz_build/" "$scratch" "$root/fuzz/corpus/mirror"
fi
