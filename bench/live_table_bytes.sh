#!/bin/sh
# The live-allocation table's bytes per live block (issue 18): bench/live_blocks keeps N live
# 32-byte blocks from 1 and from 2 threads under the preloaded checker; the report's own-memory
# line gives the table's size, divided here by the live count (the blocks the checker recorded:
# the program's N plus a few of its own start). Its blocks stay reachable: a clean report, which
# the preload writes to stderr only when asked (report_clean=1).
#   bench/live_table_bytes.sh [BUILD_DIR] [N...]   (default build/test-native; 10k 100k 1M 4M)
set -eu
build=${1:-build/test-native}
[ $# -gt 0 ] && shift
counts=${*:-10000 100000 1000000 4000000}
echo "threads live table_bytes bytes_per_live"
for threads in 1 2; do
  for n in $counts; do
    report=$(STACKWALK_LEAKCHECK=report_at_exit=1:report_clean=1:method=fp LD_PRELOAD="$build/libstackwalk_leakcheck.so" \
      "$build/bench/live_blocks" "$n" "$threads" 2>&1 >/dev/null)
    echo "$report" | awk -v t="$threads" '
      /own memory/ { for (i = 1; i < NF; ++i) if ($i == "table") table = $(i + 1) }
      /allocations still reachable/ { for (i = 1; i < NF; ++i) if ($i == "allocations") live = $(i - 1) }
      END { if (live > 0) printf "%s %s %s %.1f\n", t, live, table, table / live }'
  done
done
