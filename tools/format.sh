#!/usr/bin/env bash
# Formats every C++ file git tracks (*.cpp, *.hpp) with clang-format and the project's
# .clang-format. With --check it changes nothing: it lists the files that are not formatted and
# exits 1 (CI runs it, tools/test.sh). clang-format 14, as Debian 12 ships it: another version
# may format differently.
#
#   tools/format.sh [--check] [FILE...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=0
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1; shift ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "format.sh: unknown option '$1' (--check, files)" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
command -v clang-format >/dev/null || { echo "format.sh: clang-format not found (.ci/setup installs it)" >&2; exit 2; }
cd "$root"
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if [ "$check" -eq 0 ]; then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "format.sh: not formatted: $f (tools/format.sh formats it)" >&2
    bad=1
  fi
done
exit "$bad"
