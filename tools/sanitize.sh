#!/usr/bin/env bash
# The test suite under a sanitizer (docs/reliability.md, "Tools"): builds the whole tree with
# clang in build-<kind>/ and runs ctest there.
#   tools/sanitize.sh asan [ctest args...]   AddressSanitizer + UndefinedBehaviorSanitizer
#   tools/sanitize.sh tsan [ctest args...]   ThreadSanitizer
# Every report fails the test that caused it (halt_on_error). Suppressions, only for libraries
# and each with its reason, live in tools/sanitize/<kind>.supp. JOBS sets the build's
# parallelism (2).
set -euo pipefail
kind="${1:?usage: tools/sanitize.sh asan|tsan [ctest args...]}"
shift
root=$(cd "$(dirname "$0")/.." && pwd)
case "$kind" in
  asan) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" ;;
  tsan) flags="-fsanitize=thread -fno-omit-frame-pointer" ;;
  *) echo "sanitize.sh: unknown kind '$kind' (asan or tsan)" >&2; exit 2 ;;
esac
build="$root/build-$kind"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
  -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DBACKSCROLL_BENCH=OFF >/dev/null
ninja -C "$build" -j"${JOBS:-2}"
supp="$root/tools/sanitize/$kind.supp"
# handle_segv=0: tests whose child writes to a read-only mapping expect it to die by SIGSEGV.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:handle_segv=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:handle_segv=0${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
if [ -f "$supp" ]; then
  export LSAN_OPTIONS="suppressions=$supp"
  export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$supp"
fi
cd "$build"
ctest -j2 --output-on-failure --timeout 900 "$@"
