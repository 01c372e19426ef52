#!/usr/bin/env bash
# The main job from a fresh checkout: installs the Debian packages (.ci/setup), builds, then
# attaches to a shell actor named "shell" (spawned on first use; the CLI starts the engine on
# its defaults if none runs). Detach with Ctrl-]; the shell keeps running in the engine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BACKSCROLL_BUILD_DIR:-$root/build}"
"$root/.ci/setup"
if [ ! -x "$build/bin/backscroll" ] || [ ! -x "$build/bin/backscrolld" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$build" -j2 backscroll backscrolld >/dev/null
exec "$build/bin/backscroll" attach "${1:-shell}" --spawn
