#!/usr/bin/env bash
# The whole test suite: the native (x86_64) build, then the aarch64 and arm32 cross builds with
# their tests under qemu-user (and their crash's snapshot unwound by the native stackwalk-dump),
# each through ctest, including the install-and-consume test; the native suite again under
# ASan+UBSan and under TSan; then the libFuzzer targets for a bounded
# time each (STACKWALK_FUZZ_SECONDS, default 60; scripts/fuzz.sh runs them longer).
# Usage: scripts/test.sh [native|aarch64|arm|asan|tsan|fuzz]...   (default: all six)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" || exit 1

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(native aarch64 arm asan tsan fuzz)
fuzz_seconds="${STACKWALK_FUZZ_SECONDS:-60}"

total_passed=0
total_failed=0
status=0
run_fuzzers() {
  local log="$root/build/test-fuzz.summary.log"
  mkdir -p "$root/build"
  "$root/scripts/fuzz.sh" "$fuzz_seconds" 2>&1 | tee "$log"
  local summary
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
  if [ -z "$summary" ]; then total_failed=$((total_failed + 1)); status=1; return; fi
  local p f
  p=$(echo "$summary" | sed -E 's/^([0-9]+) passed.*/\1/')
  f=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed$/\1/')
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  [ "$f" -ne 0 ] && status=1
}

# The native stackwalk-dump, which the cross stages' snapshot_crossarch_test runs on the snapshot
# of a crash under qemu-user (an aarch64 or arm32 crash unwound on the host): configured and
# built here if the native stage has not (ccache makes it cheap when it has). Prints its path.
host_dump() {
  local build="$root/build/test-native"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.configure.log" 2>&1 || return 1
  fi
  cmake --build "$build" -j2 --target stackwalk-dump >"$build.host-dump.log" 2>&1 || return 1
  echo "$build/stackwalk-dump"
}

# The in-process leak checks (left out of the sanitizer runs, see asan below; a check there also
# reads the sanitizer's own large mappings, for minutes under ASan).
inprocess_checks='LeakcheckModes.InProcess(HooksOnly|StartAndStop|Session)|LeakcheckChecks.InProcess'

for target in "${targets[@]}"; do
  if [ "$target" = fuzz ]; then run_fuzzers; continue; fi
  run_env=()
  ctest_args=()
  case "$target" in
    native) toolchain=() ;;
    aarch64|arm)
      triple=aarch64-linux-gnu
      [ "$target" = arm ] && triple=arm-linux-gnueabihf
      mkdir -p "$root/build"
      if ! dump="$(host_dump)"; then
        echo "=== $target: the native stackwalk-dump (for snapshot_crossarch_test) did not build:"
        tail -30 "$root/build/test-native.host-dump.log" "$root/build/test-native.configure.log" 2>/dev/null
        status=1; continue
      fi
      toolchain=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/$triple.cmake"
                 -DSTACKWALK_HOST_DUMP="$dump") ;;
    # The native suite instrumented; a sanitizer's report fails the test that triggered it. The
    # crash handler's tests need the fatal signals left to the handler they install.
    asan) toolchain=(-DSTACKWALK_SANITIZE=address,undefined -DSTACKWALK_BUILD_BENCHMARKS=OFF
                     -DSTACKWALK_BUILD_EXAMPLES=OFF)
          run_env=(ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigill=0:handle_sigfpe=0:detect_leaks=1
                   UBSAN_OPTIONS=print_stacktrace=1)
          # A leak check stops every other thread; inside a sanitizer's process one may hold the
          # sanitizer runtime's own locks, which the checking thread's instrumented code then waits
          # for: the in-process checks are tested in the native build (as the preloaded checker is).
          ctest_args=(-E "$inprocess_checks") ;;
    tsan) toolchain=(-DSTACKWALK_SANITIZE=thread -DSTACKWALK_BUILD_BENCHMARKS=OFF
                     -DSTACKWALK_BUILD_EXAMPLES=OFF)
          run_env=(TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp)
          # TSan delivers asynchronous signals at its own points and takes fatal ones itself, and
          # a child forked from its threads hangs on the first signal: the signal, profiling, fork
          # and crash tests (the snapshot tests' fixture is a crash too; ASan's run has them) and
          # the peers' comparison (nongnu libunwind crashes in TSan's mutex hooks at thread exit)
          # are left out.
          # The leak check's signal method parks threads with a signal TSan would hold back until
          # they next enter the runtime (a spinning or blocked thread never parks).
          ctest_args=(-E "Signal|Profiling|Stress.Fork|crash_handler_test|crash_report_test|crash_c_api_test|snapshot_write_test|snapshot_dump_test|snapshot_dump_nopie_test|snapshot_threads_test|differential_test|StopWorld.*/signal|$inprocess_checks") ;;
    *) echo "unknown target $target (native, aarch64, arm, asan, tsan or fuzz)"; exit 2 ;;
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
  (cd "$build" && env "${run_env[@]}" ctest -j2 --timeout 300 --output-on-failure "${ctest_args[@]}") 2>&1 | tee "$log" | grep -vE '^\s*(Start|[0-9]+/[0-9]+ Test)' 
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
