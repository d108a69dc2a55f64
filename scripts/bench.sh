#!/usr/bin/env bash
# Every benchmark, in Release, with the machine, compiler and commit it ran on:
#   1. unwinding: every stackwalk method and the peers on the same stacks in one run (Google
#      Benchmark; ns/frame, ns/capture and each row's ratio to every peer);
#   2. the leak checker against LeakSanitizer, heaptrack and valgrind on three workloads, sampled
#      and not (scripts/bench_leakcheck.sh; a markdown table);
#   3. symbolization against addr2line, eu-addr2line and llvm-symbolizer (scripts/bench_symbolize.sh);
#   4. dumping a live process's threads against eu-stack and gdb (scripts/bench_dump.sh).
# Usage: scripts/bench.sh [unwind|leakcheck|symbolize|dump] [Google Benchmark arguments for unwind, e.g.
# --benchmark_filter=/64; for leakcheck, bench_leakcheck.sh's: --quick, --dry-run, ROUNDS]. ARM targets are left out: a capture under qemu-user is not a speed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
part=all
case "${1:-}" in
  unwind|leakcheck|symbolize|dump) part="$1"; shift ;;
esac
"$root/scripts/setup.sh" bench

if [ "$part" = all ] || [ "$part" = unwind ]; then
  build="$root/build/bench-release"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTACKWALK_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j2 --target unwind_benchmark bench_plugin >/dev/null
  echo "=== unwinding"
  echo "commit:   $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "compiler: $(c++ --version | head -1)"
  echo "cpu:      $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
  # Three repetitions of every row in random order (rounds interleaved), medians in the ratios.
  "$build/bench/unwind_benchmark" --benchmark_counters_tabular=true --benchmark_repetitions=3 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true "$@"
fi
if [ "$part" = all ] || [ "$part" = leakcheck ]; then
  echo; echo "=== the leak checker"
  # Its own arguments only when asked for alone: "all" passes Google Benchmark's to the unwinding part.
  if [ "$part" = leakcheck ]; then "$root/scripts/bench_leakcheck.sh" "$@"; else "$root/scripts/bench_leakcheck.sh"; fi
fi
if [ "$part" = all ] || [ "$part" = symbolize ]; then
  echo; echo "=== symbolization"
  "$root/scripts/bench_symbolize.sh"
fi
if [ "$part" = all ] || [ "$part" = dump ]; then
  echo; echo "=== dumping another process's threads"
  "$root/scripts/bench_dump.sh"
fi
