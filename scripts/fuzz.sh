#!/usr/bin/env bash
# Runs the libFuzzer targets (ASan + UBSan, built with clang in build/test-fuzz), each for a bounded
# time, from the seeds in tests/fuzz/corpus/<name>/ (one directory per target <name>_fuzz).
#
# Usage: scripts/fuzz.sh [SECONDS] [NAME...]
#   SECONDS  how long each fuzzer runs (default 3600: the long run; CI's test.sh passes 60)
#   NAME     only these targets (default: every corpus directory)
# Environment:
#   STACKWALK_FUZZ_JOBS    fuzzers run at once (default 1; each uses one core)
#   STACKWALK_FUZZ_KEEP    a directory where each target's grown corpus is kept across runs
#                          (default: a temporary copy of the seeds, removed after the run)
# Prints, per target, its executions, executions per second, the corpus it ended with and what it
# found; a finding (crash, timeout, out of memory) is copied to build/test-fuzz/ and fails the run.
# The last line is "N passed, N failed", N counting fuzz targets.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-3600}"
shift || true
names=("$@")
jobs="${STACKWALK_FUZZ_JOBS:-1}"
build="$root/build/test-fuzz"

if [ ${#names[@]} -eq 0 ]; then
  for corpus in "$root"/tests/fuzz/corpus/*/; do names+=("$(basename "$corpus")"); done
fi

mkdir -p "$build"
echo "=== fuzz: configure and build (clang, ASan+UBSan+libFuzzer)"
if ! cmake -S "$root" -B "$build" -DSTACKWALK_BUILD_FUZZERS=ON -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ >"$build.configure.log" 2>&1 ||
   ! cmake --build "$build" -j2 >"$build.build.log" 2>&1; then
  tail -50 "$build.configure.log" "$build.build.log"
  echo "0 passed, ${#names[@]} failed"
  exit 1
fi

# One target: fuzz for $seconds, then print its result line and leave a status file.
fuzz_one() {
  local name="$1"
  local fuzzer="$build/tests/fuzz/${name}_fuzz"
  local log="$build.$name.log"
  local work artifacts
  if [ -n "${STACKWALK_FUZZ_KEEP:-}" ]; then
    work="$STACKWALK_FUZZ_KEEP/$name"
    mkdir -p "$work"
  else
    work=$(mktemp -d)
  fi
  artifacts=$(mktemp -d)
  cp -r "$root/tests/fuzz/corpus/$name"/. "$work"/
  if [ ! -x "$fuzzer" ]; then
    echo "  ${name}_fuzz: no such fuzzer ($fuzzer)"
    echo 1 >"$build.$name.status"
    return
  fi
  (cd "$artifacts" && "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" >"$log" 2>&1)
  local rc=$?
  local runs speed units
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
  speed=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -1)
  units=$(ls "$work" | wc -l)
  local found
  found=$(ls "$artifacts" | grep -cE '^(crash|timeout|oom|leak|slow-unit)-')
  if [ "$rc" -eq 0 ] && [ "$found" -eq 0 ]; then
    echo "  ${name}_fuzz: ${runs:-?} executions in ${seconds}s (${speed:-?}/s), corpus ${units} inputs, no findings"
    echo 0 >"$build.$name.status"
  else
    tail -40 "$log"
    cp "$artifacts"/* "$build"/ 2>/dev/null
    echo "  ${name}_fuzz: FAILED after ${runs:-?} executions (exit $rc, $found findings kept in $build)"
    echo 1 >"$build.$name.status"
  fi
  rm -rf "$artifacts"
  [ -z "${STACKWALK_FUZZ_KEEP:-}" ] && rm -rf "$work"
}

for name in "${names[@]}"; do
  rm -f "$build.$name.status"
  echo "=== fuzz: ${name}_fuzz for ${seconds}s from $(ls "$root/tests/fuzz/corpus/$name" 2>/dev/null | wc -l) seeds"
  fuzz_one "$name" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait

passed=0
failed=0
for name in "${names[@]}"; do
  if [ "$(cat "$build.$name.status" 2>/dev/null)" = 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
