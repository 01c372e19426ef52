#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy: bugprone-* and a few performance-* checks) over the sources the
# build compiles, in parallel, and exits 1 on any finding. Uses the compile commands of a build
# folder (default build/, made by tools/test.sh or any cmake run of this tree).
#
#   tools/lint.sh [--jobs J] [PATH_REGEX]
#
# PATH_REGEX narrows the files (default: every file of engine/, shm/, tools/, bench/, fuzz/;
# tests are left out: gtest macros trip bugprone checks by design). ~7 s of CPU per file.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BACKSCROLL_BUILD_DIR:-$root/build}"
jobs=2
filter="$root/(engine|shm|tools|bench|fuzz)/"
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "lint.sh: unknown option '$1' (--jobs J, PATH_REGEX)" >&2; exit 2 ;;
    *) filter="$1"; shift ;;
  esac
done
[ -f "$build/compile_commands.json" ] || {
  echo "lint.sh: no $build/compile_commands.json: build first (tools/test.sh or cmake)" >&2
  exit 2
}
command -v run-clang-tidy >/dev/null || { echo "lint.sh: run-clang-tidy not found (.ci/setup installs clang-tidy)" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run-clang-tidy -quiet -j "$jobs" -p "$build" "$filter" > "$log" 2>&1 || true
if grep -E "(warning|error): " "$log" | grep -v "warnings generated" | sort -u | tee /dev/stderr | grep -q .; then
  echo "lint.sh: findings above" >&2
  exit 1
fi
echo "lint.sh: clean ($(grep -c '^clang-tidy' "$log" || true) files)"
