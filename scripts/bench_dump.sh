#!/usr/bin/env bash
# Dumping every thread of a live process from outside: stackwalk-dump against eu-stack (elfutils)
# and gdb ("thread apply all bt") on the same process, the tests' remote_threads fixture with
# THREADS extra threads parked in a 5-frame chain (6 more threads: main and the tests' chains) (CFI only: -O2 without frame pointers). Each
# tool is run ROUNDS times in turn; prints the median wall time of each (ms) with how many
# threads it listed, and stackwalk-dump's own account of how long it kept threads stopped.
# Usage: scripts/bench_dump.sh [THREADS (default 200)] [ROUNDS (default 5)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" bench
threads="${1:-200}"
rounds="${2:-5}"
build="${STACKWALK_DUMP_BUILD:-$root/build/bench-dump}"  # or an existing build tree
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target stackwalk-dump remote_threads >/dev/null
scratch="$(mktemp -d)"
fifo="$scratch/stdin"
mkfifo "$fifo"
"$build/tests/remote_threads" "$threads" <"$fifo" >"$scratch/ready" &
fixture=$!
exec 3>"$fifo"  # the fixture waits for a line here; closing it ends the fixture
trap 'exec 3>&-; kill $fixture 2>/dev/null || true; wait $fixture 2>/dev/null || true; rm -rf "$scratch"' EXIT
until grep -q ready "$scratch/ready" 2>/dev/null; do sleep 0.05; done
sleep 0.5  # the last threads reach read()

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { echo "scale=1; ($2 - $1) / 1000000" | bc; }
run() {  # name command...: one timed run, output in $scratch/out.name
  local name="$1"; shift
  local start end
  start=$(date +%s%N)
  "$@" >"$scratch/out.$name" 2>"$scratch/err.$name" || true
  end=$(date +%s%N)
  ms "$start" "$end" >>"$scratch/times.$name"
}
for _ in $(seq "$rounds"); do
  run stackwalk "$build/stackwalk-dump" "$fixture"
  run stackwalk_nonames "$build/stackwalk-dump" --no-names "$fixture"
  run eu-stack eu-stack -p "$fixture"
  run eu-stack-lines eu-stack -i -s -p "$fixture"
  run gdb gdb -p "$fixture" -batch -nx -ex "thread apply all bt"
done
echo "commit:  $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "cpu:     $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
echo "process: remote_threads with $(ls "/proc/$fixture/task" | wc -l) threads; median of $rounds runs"
printf '%-36s %10s %9s\n' tool "wall ms" threads
printf '%-36s %10s %9s\n' "stackwalk-dump" "$(median <"$scratch/times.stackwalk")" \
  "$(grep -c '^Thread ' "$scratch/out.stackwalk")"
printf '%-36s %10s %9s\n' "stackwalk-dump --no-names" "$(median <"$scratch/times.stackwalk_nonames")" \
  "$(grep -c '^Thread ' "$scratch/out.stackwalk_nonames")"
printf '%-36s %10s %9s\n' "eu-stack -p" "$(median <"$scratch/times.eu-stack")" \
  "$(grep -c '^TID ' "$scratch/out.eu-stack")"
printf '%-36s %10s %9s\n' "eu-stack -i -s -p (inlines, lines)" "$(median <"$scratch/times.eu-stack-lines")" \
  "$(grep -c '^TID ' "$scratch/out.eu-stack-lines")"
printf '%-36s %10s %9s\n' "gdb thread apply all bt" "$(median <"$scratch/times.gdb")" \
  "$(grep -c '^Thread ' "$scratch/out.gdb")"
echo "stackwalk-dump's stops (last run): $(head -1 "$scratch/out.stackwalk" | sed 's/.*walk: //')"
