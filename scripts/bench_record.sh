#!/usr/bin/env bash
# The record region's cost (issue 17): the checked program preloaded directly, its tables in a
# region (an unlinked tmpfs file at descriptor 498, as the launcher's memfd) or in private memory, rounds
# interleaved: bench/leak_workload 2 x 1M allocations (CPU seconds and peak RSS), and
# bench/fork_workload (microseconds per fork and wait with 1000, 100000 and 1000000 live blocks),
# also with children that exec, plain and under stackwalk-leakcheck.
# Usage: scripts/bench_record.sh [ROUNDS (default 5)]; STACKWALK_BENCH_BUILD=DIR uses a build made.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${1:-5}"
build="${STACKWALK_BENCH_BUILD:-$root/build/bench-release}"
if [ -z "${STACKWALK_BENCH_BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTACKWALK_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j2 --target leak_workload fork_workload stackwalk_leakcheck \
    stackwalk-leakcheck >/dev/null
fi
scratch="$(mktemp -d /dev/shm/bench_record.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT

# bash -c "$launch" _ MODE COMMAND...: the command exec'd under the preload (the same pid: the
# checked process), with the region when MODE is "region".
launch='
  if [ "$1" = region ]; then
    : >"$SCRATCH/region"
    exec 498<>"$SCRATCH/region"
    rm "$SCRATCH/region"  # a file with no name, as the memfd: the checker takes no file of a name
    export STACKWALK_LEAKCHECK_RECORD_FD=498
  fi
  export STACKWALK_LEAKCHECK_PID=$$ STACKWALK_LEAKCHECK=report_at_exit=0 LD_PRELOAD="$PRELOAD"
  shift
  exec "$@"'
export SCRATCH="$scratch" PRELOAD="$build/libstackwalk_leakcheck.so"

for mode in region private; do : >"$scratch/workload.$mode"; done
for ((r = 0; r < rounds; r++)); do
  for mode in region private; do
    /usr/bin/time -o "$scratch/t" -f '%U %S %M' bash -c "$launch" _ "$mode" \
      "$build/bench/leak_workload" 2 1000000 >/dev/null 2>&1
    cat "$scratch/t" >>"$scratch/workload.$mode"
  done
done
# The median of a column of numbers.
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for mode in region private; do
  cpu=$(awk '{print $1 + $2}' "$scratch/workload.$mode" | median)
  rss=$(awk '{print $3 / 1024}' "$scratch/workload.$mode" | median)
  printf "leak_workload 2x1M, %-7s CPU %s s, peak RSS %s MB (median of %d)\n" "$mode" "$cpu" "$rss" "$rounds"
done
# Then each child runs /bin/true: plain, and under stackwalk-leakcheck (each child's region handed
# to it at the fork; a child that ran _exit instead would be checked for leaks there).
for blocks in 1000 100000 1000000; do
  for mode in region private plain-exec launcher-exec; do
    for ((r = 0; r < rounds; r++)); do
      case "$mode" in
        plain-exec) "$build/bench/fork_workload" "$blocks" 50 exec ;;
        launcher-exec)
          "$build/stackwalk-leakcheck" --output /dev/null "$build/bench/fork_workload" "$blocks" 50 exec ;;
        *) bash -c "$launch" _ "$mode" "$build/bench/fork_workload" "$blocks" 50 ;;
      esac
    done >"$scratch/fork.$mode"
    printf "fork and wait, %7d live blocks, %-13s %s us (median of %d)\n" "$blocks" "$mode" \
      "$(awk '{print $1}' "$scratch/fork.$mode" | median)" "$rounds"
  done
done
