#!/usr/bin/env bash
# The leak checker's overhead: bench/leak_workload (2 threads x 1M allocations, depth ~20, 256
# stacks, 2000 leaked blocks) plain, under stackwalk-leakcheck (fp, ehframe, auto), heaptrack
# (recording only), valgrind memcheck, and built with LeakSanitizer. Rounds are interleaved;
# prints the median wall time and peak RSS of each, and its ratio to the plain run.
# Usage: scripts/bench_leakcheck.sh [ROUNDS (default 3)] [ALLOCATIONS_PER_THREAD (default 1000000)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" bench
rounds="${1:-3}"
per_thread="${2:-1000000}"
build="$root/build/bench-release"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTACKWALK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target leak_workload stackwalk-leakcheck stackwalk_leakcheck >/dev/null
workload="$build/bench/leak_workload"
lsan="$build/bench/leak_workload_lsan"
clang++ -O2 -g -fno-omit-frame-pointer -fsanitize=leak "$root/bench/leak_workload.cc" -o "$lsan" -lpthread
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

names=(plain "stackwalk fp" "stackwalk ehframe" "stackwalk auto" "heaptrack (record)" "valgrind memcheck" LeakSanitizer)
run_one() {
  case "$1" in
    0) "$workload" 2 "$per_thread" ;;
    1) "$build/stackwalk-leakcheck" --method fp --output "$scratch/fp.txt" "$workload" 2 "$per_thread" ;;
    2) "$build/stackwalk-leakcheck" --method ehframe --output "$scratch/eh.txt" "$workload" 2 "$per_thread" ;;
    3) "$build/stackwalk-leakcheck" --output "$scratch/auto.txt" "$workload" 2 "$per_thread" ;;
    4) heaptrack --raw -o "$scratch/heaptrack" "$workload" 2 "$per_thread" ;;
    5) valgrind --leak-check=full --log-file="$scratch/valgrind.txt" "$workload" 2 "$per_thread" ;;
    6) LSAN_OPTIONS=exitcode=0:log_path="$scratch/lsan" "$lsan" 2 "$per_thread" ;;
  esac
}

declare -A wall rss
for ((round = 0; round < rounds; ++round)); do
  for i in "${!names[@]}"; do
    /usr/bin/time -f "%e %M" -o "$scratch/time" bash -c "$(declare -f run_one); workload=$workload; lsan=$lsan; build=$build; scratch=$scratch; per_thread=$per_thread; run_one $i" >/dev/null 2>&1
    read -r seconds kb < "$scratch/time"
    wall[$i]+="$seconds "
    rss[$i]+="$kb "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "commit:   $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "compiler: $(c++ --version | head -1)"
echo "cpu:      $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
echo "workload: 2 threads x $per_thread allocations, depth ~20, 256 stacks; median of $rounds interleaved rounds"
grep -h "SUMMARY" "$scratch/fp.txt" | sed 's/^/stackwalk fp report: /'
grep -h "own memory" "$scratch/fp.txt" | sed 's/^==stackwalk-leakcheck== /stackwalk /'
plain_wall=$(echo "${wall[0]}" | median)
plain_rss=$(echo "${rss[0]}" | median)
printf "%-20s %10s %8s %12s %8s\n" tool "wall s" "x plain" "peak RSS MB" "x plain"
for i in "${!names[@]}"; do
  w=$(echo "${wall[$i]}" | median)
  r=$(echo "${rss[$i]}" | median)
  printf "%-20s %10.2f %8.1f %12.1f %8.1f\n" "${names[$i]}" "$w" "$(echo "$w / $plain_wall" | bc -l)" \
    "$(echo "$r / 1024" | bc -l)" "$(echo "$r / $plain_rss" | bc -l)"
done
