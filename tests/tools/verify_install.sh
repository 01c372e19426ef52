#!/usr/bin/env bash
# tools/install.sh --no-build into a scratch prefix (ctest runs after the build; building here
# would race the tests that run beside it): the binaries, the man pages
# generated from --help (every command has its section in backscroll(1)), the docs, and the
# systemd unit pointing at the installed engine. $1: the build folder.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$1"
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "verify_install: $*" >&2; exit 1; }
out=$("$root/tools/install.sh" --prefix "$prefix" --build "$build" --no-build 2>&1) || fail "install.sh failed: $out"
echo "$out" | grep -q "is not on PATH" || fail "no PATH hint for a prefix off PATH: $out"
for f in bin/backscroll bin/backscrolld bin/backscroll-bridge; do
  [ -x "$prefix/$f" ] || fail "$f is missing"
done
"$prefix/bin/backscroll" --version | grep -Eq '^backscroll [0-9]+\.[0-9]+\.[0-9]+$' || fail "backscroll --version"
for f in share/man/man1/backscroll.1 share/man/man1/backscroll-bridge.1 share/man/man8/backscrolld.8 \
         share/doc/backscroll/cli.md share/doc/backscroll/README.md \
         share/systemd/user/backscrolld.service; do
  [ -s "$prefix/$f" ] || fail "$f is missing or empty"
done
grep -qx "ExecStart=$prefix/bin/backscrolld --standby" "$prefix/share/systemd/user/backscrolld.service" ||
  fail "the unit does not start $prefix/bin/backscrolld"
page="$prefix/share/man/man1/backscroll.1"
for command in $("$prefix/bin/backscroll" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NF>1 {print $1}'); do
  grep -qx ".SS $command" "$page" || fail "backscroll(1) has no section for '$command'"
done
grep -q 'env\\-clear' "$page" || fail "backscroll(1) lacks spawn's --env-clear"
if command -v groff >/dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff: $warnings"
  [ -z "$warnings" ] || fail "groff warns: $warnings"
fi
echo "ok: installed into $prefix"
