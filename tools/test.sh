#!/usr/bin/env bash
# The whole test suite from a fresh checkout: installs the Debian packages (.ci/setup), builds
# everything with warnings as errors, runs ctest. .ci/run calls exactly this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BACKSCROLL_BUILD_DIR:-$root/build}"
"$root/.ci/setup"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBACKSCROLL_WERROR=ON >/dev/null
ninja -C "$build" -j2
cd "$build"
ctest -j2 --output-on-failure --timeout 300
