#!/usr/bin/env bash
# The whole test suite: the native (x86_64) build, then the aarch64 and arm32 cross builds with
# their tests under qemu-user, each through ctest, including the install-and-consume test; then
# the libFuzzer targets for a bounded time each (STACKWALK_FUZZ_SECONDS, default 60).
# Usage: scripts/test.sh [native|aarch64|arm|fuzz]...   (default: all four)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" || exit 1

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(native aarch64 arm fuzz)
fuzz_seconds="${STACKWALK_FUZZ_SECONDS:-60}"

total_passed=0
total_failed=0
status=0
run_fuzzers() {
  local build="$root/build/test-fuzz"
  mkdir -p "$build"
  echo "=== fuzz: configure and build (clang, ASan+UBSan+libFuzzer)"
  if ! cmake -S "$root" -B "$build" -DSTACKWALK_BUILD_FUZZERS=ON -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ >"$build.configure.log" 2>&1 ||
     ! cmake --build "$build" -j2 >"$build.build.log" 2>&1; then
    tail -50 "$build.configure.log" "$build.build.log"
    total_failed=$((total_failed + 1)); status=1; return
  fi
  for corpus in "$root"/tests/fuzz/corpus/*/; do
    local name; name=$(basename "$corpus")
    local fuzzer="$build/tests/fuzz/${name}_fuzz"
    local work; work=$(mktemp -d)
    cp -r "$corpus"/. "$work"/
    echo "=== fuzz: ${name}_fuzz for ${fuzz_seconds}s from $(ls "$corpus" | wc -l) seeds"
    if (cd "$work" && "$fuzzer" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -timeout=10 \
          -print_final_stats=1 "$work" >"$build.$name.log" 2>&1); then
      grep -E "^stat::number_of_executed_units" "$build.$name.log" | sed "s/^/  ${name}_fuzz /"
      total_passed=$((total_passed + 1))
    else
      tail -40 "$build.$name.log"
      cp "$work"/crash-* "$work"/timeout-* "$work"/oom-* "$build"/ 2>/dev/null
      echo "  ${name}_fuzz FAILED (reproducer kept in $build)"
      total_failed=$((total_failed + 1)); status=1
    fi
    rm -rf "$work"
  done
}

for target in "${targets[@]}"; do
  if [ "$target" = fuzz ]; then run_fuzzers; continue; fi
  case "$target" in
    native) toolchain=() ;;
    aarch64) toolchain=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake") ;;
    arm) toolchain=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/arm-linux-gnueabihf.cmake") ;;
    *) echo "unknown target $target (native, aarch64, arm or fuzz)"; exit 2 ;;
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
