#!/usr/bin/env bash
# The systemd user unit the build configures (engine/systemd/backscrolld.service.in) passes
# `systemd-analyze verify` without a single warning (systemd only warns about a bad directive).
# With a build folder and cmake as $2 and $3, installs that build into a scratch prefix first and
# checks the installed unit instead (it must run <prefix>/bin/backscrolld).
# Exit 77 (ctest: skipped) where systemd-analyze is not installed.
set -uo pipefail
unit="$1"
if [ $# -ge 3 ]; then
  prefix=$(mktemp -d)
  trap 'rm -rf "$prefix"' EXIT
  "$3" --install "$2" --prefix "$prefix" >/dev/null || exit 1
  unit="$prefix/share/systemd/user/backscrolld.service"
  grep -qx "ExecStart=$prefix/bin/backscrolld --standby" "$unit" || { echo "ExecStart is not $prefix/bin/backscrolld --standby" >&2; exit 1; }
fi
if ! command -v systemd-analyze >/dev/null; then
  echo "skipped: systemd-analyze is not installed" >&2
  exit 77
fi
out=$(systemd-analyze verify "$unit" 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
  echo "systemd-analyze verify $unit (exit $rc):" >&2
  echo "$out" >&2
  exit 1
fi
grep -q '^ExecStart=/.*/backscrolld --standby$' "$unit" || { echo "no absolute ExecStart" >&2; exit 1; }
grep -q '^KillMode=mixed$' "$unit" || { echo "the engine must stop its actors itself" >&2; exit 1; }
echo "ok: $unit"
