#!/usr/bin/env bash
# Installs backscroll: builds what is missing, then `cmake --install` into PREFIX:
#   PREFIX/bin/{backscroll,backscrolld,backscroll-bridge}
#   PREFIX/share/man/man1/{backscroll,backscroll-bridge}.1, man8/backscrolld.8 (from --help)
#   PREFIX/share/systemd/user/backscrolld.service (ExecStart=PREFIX/bin/backscrolld)
#   PREFIX/share/backscroll/web (the bridge's page), PREFIX/share/doc/backscroll (docs/)
#
#   tools/install.sh [--prefix DIR] [--build DIR] [--no-build]
#
# PREFIX defaults to /usr/local as root, else ~/.local (no root needed). --no-build installs
# what the build folder holds as it is. The Debian packages
# must be there already (.ci/setup, or tools/quickstart.sh, installs them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BACKSCROLL_BUILD_DIR:-$root/build}"
if [ "$(id -u)" -eq 0 ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
build_first=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --no-build) build_first=0; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option '$1' (--prefix DIR, --build DIR)" >&2; exit 2 ;;
  esac
done
prefix=$(mkdir -p "$prefix" && cd "$prefix" && pwd)

if [ "$build_first" -eq 1 ]; then
  echo "install.sh: building in $build (the first time: a few minutes on 2 cores)"
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  targets=(backscroll backscrolld backscroll-bridge man)
  ninja -C "$build" -t targets all 2>/dev/null | grep -q '^bridge_web:' && targets+=(bridge_web)
  ninja -C "$build" -j2 "${targets[@]}"
fi
echo "install.sh: installing into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null

echo "install.sh: done."
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "  $prefix/bin is not on PATH: add  export PATH=\"$prefix/bin:\$PATH\"  to ~/.profile" ;;
esac
man_dir="$prefix/share/man"
case ":$(manpath 2>/dev/null || true):" in
  *":$man_dir:"*) ;;
  *) echo "  man pages: man -l $man_dir/man1/backscroll.1 (or add $man_dir to MANPATH)" ;;
esac
echo "  as a service: cp $prefix/share/systemd/user/backscrolld.service ~/.config/systemd/user/ &&"
echo "                systemctl --user enable --now backscrolld   (docs/systemd.md)"
