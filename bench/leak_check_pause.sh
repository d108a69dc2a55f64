#!/usr/bin/env bash
# One leak check's time in a running process (issue 16, item 7): bench/leak_check_pause.cc with
# 100k and 1M live blocks over 4 threads, built with stackwalk's in-process checker (a check:
# Report(), or CheckLeaks() with its pause once the check API exists) and with -fsanitize=leak
# (a check: __lsan_do_recoverable_leak_check()), run one after the other; prints each one's
# median check time (and pause).
# Usage: bench/leak_check_pause.sh [CHECKS (default 5)] [BLOCKS... (default 100000 1000000)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
checks="${1:-5}"
shift || true
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(100000 1000000)
build="$root/build/bench-release"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTACKWALK_BUILD_TESTS=OFF >/dev/null
log="$build/leak_check_pause.build.log"
cmake --build "$build" -j2 --target leak_check_pause >"$log" 2>&1 || { cat "$log"; exit 1; }
stackwalk="$build/bench/leak_check_pause"
lsan="$build/bench/leak_check_pause_lsan"
clang++ -O2 -g -fno-omit-frame-pointer -fsanitize=leak -DLEAK_CHECK_PAUSE_LSAN \
  "$root/bench/leak_check_pause.cc" -o "$lsan" -lpthread

echo "commit:   $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "compiler: $(c++ --version | head -1); $(clang++ --version | head -1)"
echo "cpu:      $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
echo "checks:   $checks per run, 4 threads blocked while the main thread checks; median"
printf "%-10s %-28s %12s %12s %s\n" blocks checker "check ms" "pause ms" "leaks found"
for blocks in "${sizes[@]}"; do
  for name in stackwalk LeakSanitizer; do
    if [ "$name" = stackwalk ]; then
      out="$("$stackwalk" "$blocks" "$checks")"
      label="stackwalk (in-process)"
    else
      out="$(LSAN_OPTIONS=exitcode=0 "$lsan" "$blocks" "$checks" 2>"$build/lsan.err")"
      label="LeakSanitizer ($(clang++ --version | head -1 | grep -o 'version [0-9]*' | cut -d' ' -f2))"
    fi
    median="$(sed -n 's/^median: \([0-9.]*\) ms.*/\1/p' <<<"$out")"
    pauses="$(sed -n 's/.*(pause \([0-9.]*\) ms).*/\1/p' <<<"$out" | sort -g)"
    pause="-"
    [ -n "$pauses" ] && pause="$(awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}' <<<"$pauses")"
    found="$(sed -n 's/.*, \([0-9]*\) leaked$/\1/p' <<<"$out" | tail -1)"
    # LeakSanitizer's count: its last check's summary line (then the exit check's).
    [ "$name" = LeakSanitizer ] &&
      found="$(grep -o 'in [0-9]* allocation' "$build/lsan.err" | tail -2 | head -1 | cut -d' ' -f2)"
    printf "%-10s %-28s %12s %12s %s\n" "$blocks" "$label" "$median" "$pause" "$found"
  done
done
