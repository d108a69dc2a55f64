#!/usr/bin/env bash
# One leak check's time in a running process (issue 16, item 7): bench/leak_check_pause.cc with
# 100k and 1M live blocks over 4 threads, built with stackwalk's in-process checker (a check:
# CheckLeaks(), whose summary gives the pause: how long the other threads were stopped) and with
# -fsanitize=leak (a check: __lsan_do_recoverable_leak_check()). ROUNDS rounds, each running the
# two builds one after the other (interleaved, so that a noisy neighbour hits both); each run
# makes CHECKS checks and prints their median. Prints the median over the rounds of each run's
# median, the range of those medians (the noise), and stackwalk's check over LeakSanitizer's.
# Usage: bench/leak_check_pause.sh [CHECKS (default 5)] [ROUNDS (default 3)] [BLOCKS... (default
#        100000 1000000)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
checks="${1:-5}"
rounds="${2:-3}"
shift 2 || shift $# || true
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
lsan_version="$(clang++ --version | head -1 | grep -o 'version [0-9]*' | cut -d' ' -f2)"

echo "commit:   $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "compiler: $(c++ --version | head -1); $(clang++ --version | head -1)"
echo "cpu:      $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at the start"
echo "checks:   $checks per run, $rounds interleaved rounds, 4 threads blocked while the main"
echo "          thread checks; medians of the rounds' medians [lowest-highest round median]"

# The median of the numbers on stdin.
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }
# "MEDIAN [LOW-HIGH]" of the numbers on stdin.
spread() {
  local values
  values="$(sort -g)"
  [ -z "$values" ] && { echo "-"; return; }
  echo "$(median <<<"$values") [$(head -1 <<<"$values")-$(tail -1 <<<"$values")]"
}

printf "%-9s %-22s %-24s %-24s %-6s %s\n" blocks checker "check ms" "pause ms" "leaks" \
  "check vs LeakSanitizer"
for blocks in "${sizes[@]}"; do
  sw_checks="" sw_pauses="" lsan_checks="" sw_found="" lsan_found=""
  for ((r = 0; r < rounds; ++r)); do
    out="$("$stackwalk" "$blocks" "$checks")"
    sw_checks+="$(sed -n 's/^median: \([0-9.]*\) ms.*/\1/p' <<<"$out")"$'\n'
    sw_pauses+="$(sed -n 's/.*(pause \([0-9.]*\) ms).*/\1/p' <<<"$out" | median)"$'\n'
    # Each leak is returned by one check only: the first check's count is every leak.
    sw_found="$(sed -n 's/.*, \([0-9]*\) leaked$/\1/p' <<<"$out" | head -1)"
    out="$(LSAN_OPTIONS=exitcode=0 "$lsan" "$blocks" "$checks" 2>"$build/lsan.err")"
    lsan_checks+="$(sed -n 's/^median: \([0-9.]*\) ms.*/\1/p' <<<"$out")"$'\n'
    # LeakSanitizer reports every leak at each check: its last check's summary line (the exit
    # check's comes after it).
    lsan_found="$(grep -o 'in [0-9]* allocation' "$build/lsan.err" | tail -2 | head -1 |
                  cut -d' ' -f2)"
  done
  sw_median="$(printf "%s" "$sw_checks" | median)"
  lsan_median="$(printf "%s" "$lsan_checks" | median)"
  ratio="$(awk -v a="$sw_median" -v b="$lsan_median" 'BEGIN {printf "%.1fx", a / b}')"
  printf "%-9s %-22s %-24s %-24s %-6s %s\n" "$blocks" "stackwalk (in-process)" \
    "$(printf "%s" "$sw_checks" | spread)" "$(printf "%s" "$sw_pauses" | spread)" "$sw_found" \
    "$ratio"
  printf "%-9s %-22s %-24s %-24s %-6s\n" "$blocks" "LeakSanitizer ($lsan_version)" \
    "$(printf "%s" "$lsan_checks" | spread)" "-" "$lsan_found"
done
