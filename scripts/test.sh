#!/usr/bin/env bash
# The whole test suite: the native (x86_64) build, then the aarch64 and arm32 cross builds with
# their tests under qemu-user, each through ctest, including the install-and-consume test.
# Usage: scripts/test.sh [native|aarch64|arm]...   (default: all three)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" || exit 1

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(native aarch64 arm)

total_passed=0
total_failed=0
status=0
for target in "${targets[@]}"; do
  case "$target" in
    native) toolchain=() ;;
    aarch64) toolchain=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake") ;;
    arm) toolchain=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/arm-linux-gnueabihf.cmake") ;;
    *) echo "unknown target $target"; exit 2 ;;
  esac
  build="$root/build/test-$target"
  mkdir -p "$build"
  echo "=== $target: configure and build"
  if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${toolchain[@]}" >"$build.configure.log" 2>&1; then
    cat "$build.configure.log"; status=1; continue
  fi
  if ! cmake --build "$build" -j2 >"$build.build.log" 2>&1; then
    tail -50 "$build.build.log"; status=1; continue
  fi
  echo "=== $target: ctest"
  log="$build.ctest.log"
  (cd "$build" && ctest -j2 --timeout 300 --output-on-failure) 2>&1 | tee "$log" | grep -vE '^\s*(Start|[0-9]+/[0-9]+ Test)' 
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
  if [ -z "$summary" ]; then status=1; continue; fi
  failed=$(echo "$summary" | sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/')
  all=$(echo "$summary" | sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\2/')
  total_passed=$((total_passed + all - failed))
  total_failed=$((total_failed + failed))
  [ "$failed" -ne 0 ] && status=1
done
echo "$total_passed passed, $total_failed failed"
exit $status
