#!/usr/bin/env bash
# Builds in Release and runs the unwind benchmark: every stackwalk method and the peers on the
# same stacks in one run, with the machine, compiler and commit it ran on.
# Extra arguments go to Google Benchmark (e.g. --benchmark_filter=/64).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
build="$root/build/bench-release"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTACKWALK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target unwind_benchmark >/dev/null
echo "commit:   $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "compiler: $(c++ --version | head -1)"
echo "cpu:      $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
exec "$build/bench/unwind_benchmark" --benchmark_counters_tabular=true "$@"
