#!/bin/bash
# Compares two builds of the checker's library on one program by CPU time, in paired runs: the
# two run back to back, their order alternating, and the median difference (with its quartiles)
# is printed. Single runs on a shared machine move by 10-30 %; a pair's difference moves less.
#   bench/paired_task_clock.sh ROUNDS LIB_A LIB_B PROGRAM [ARGS...]
# e.g. bench/paired_task_clock.sh 12 old/libstackwalk_leakcheck.so new/libstackwalk_leakcheck.so \
#        build/bench/shared_stacks 2 2000000
# Recording only (method auto, no report at exit); needs perf (linux-perf).
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n '2,7p' "$0" >&2
  exit 2
fi
rounds=$1 a=$2 b=$3
shift 3
for lib in "$a" "$b"; do [ -f "$lib" ] || { echo "paired_task_clock: no $lib" >&2; exit 1; }; done
cpu_ms() {  # LIB PROGRAM [ARGS...]: task-clock ms of one run
  local lib=$1
  shift
  perf stat -x, -e task-clock env STACKWALK_LEAKCHECK=method=auto:report_at_exit=0 LD_PRELOAD="$lib" \
    "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}'
}
for ((i = 0; i < rounds; ++i)); do
  if ((i % 2)); then x=$(cpu_ms "$a" "$@"); y=$(cpu_ms "$b" "$@");
  else y=$(cpu_ms "$b" "$@"); x=$(cpu_ms "$a" "$@"); fi
  echo "$x $y"
done | sort -k1,1g | awk '{a[NR] = $1; d[NR] = $2 - $1}
  END {
    n = NR
    for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (d[j] < d[i]) { t = d[i]; d[i] = d[j]; d[j] = t }
    printf "B - A, ms of task-clock: median %.0f (quartiles %.0f, %.0f); A median %.0f, %d pairs\n",
           d[int((n + 1) / 2)], d[int((n + 3) / 4)], d[int((3 * n + 1) / 4)], a[int((n + 1) / 2)], n
  }'
