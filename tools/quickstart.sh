#!/usr/bin/env bash
# The main job from a fresh checkout: installs the Debian packages (.ci/setup), builds, then
# attaches to a shell actor named "shell" (spawned on first use; the CLI starts the engine on
# its defaults if none runs). Detach with Ctrl-]; the shell keeps running in the engine.
# Each step says what it does and how long it may take, and the build shows its progress.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BACKSCROLL_BUILD_DIR:-$root/build}"
step() { printf '\nquickstart: %s\n' "$*"; }

step "1/3 Debian packages (the first time: several minutes of apt-get and npm; then instant)"
"$root/.ci/setup"
step "2/3 building backscroll and backscrolld in $build (the first time: a few minutes on 2 cores)"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$build" -j2 backscroll backscrolld
actor="${1:-shell}"
step "3/3 attaching to actor '$actor' (spawned now if it does not exist)"
cat <<NEXT
  Detach with Ctrl-]: '$actor' keeps running in the engine.
  Then: $build/bin/backscroll list   (and 'backscroll attach $actor' to come back)
NEXT
exec "$build/bin/backscroll" attach "$actor" --spawn
