#!/usr/bin/env bash
# The leak checker's cost against its peers (issue 18), in one run: four workloads,
#   workload  bench/leak_workload built without frame pointers (2 threads x N allocations at a
#             call depth of ~20, 256 stacks, a ring of live blocks, 2000 leaked)
#   python    python3 with PYTHONMALLOC=malloc on a JSON and regex script
#   clang     clang++ -fsyntax-only over an STL-heavy file
#   cmake     a cmake configure of a small C and C++ project (compiler checks, three feature
#             checks, Threads): ~170 short processes, cmake itself checked (each one only where
#             the preload reaches them all: record only, LSan preloaded)
# each plain, under stackwalk-leakcheck (--method fp, auto, auto sampled with --sample-bytes
# 524288, and auto without its report: what recording alone costs), LeakSanitizer built in
# (-fsanitize=leak: the workload only) and preloaded (liblsan.so), heaptrack (recording only)
# and valgrind memcheck (the python workload only, under a time bound). Rounds are interleaved
# (every tool once per round, workload by workload); the table gives medians: wall seconds, peak
# RSS, each as a ratio to plain; for stackwalk its own table and stack bytes per live allocation
# at the exit report (its "own memory" line: at exit most of a program's blocks are freed) and its
# report time (auto's wall less recording alone's).
# Prints a markdown table.
# Usage: scripts/bench_leakcheck.sh [--quick] [--dry-run] [ROUNDS (default 3; --quick: 1)]
#   --quick    one round, smaller workloads (a minute or two)
#   --dry-run  builds and checks every command's tools, prints the commands, runs nothing
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
quick=0 dry=0 rounds=""
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --dry-run) dry=1 ;;
    [0-9]*) rounds="$arg" ;;
    *) echo "usage: $0 [--quick] [--dry-run] [ROUNDS]" >&2; exit 2 ;;
  esac
done
[ -n "$rounds" ] || rounds=$((quick ? 1 : 3))
per_thread=$((quick ? 200000 : 1000000))
py_items=$((quick ? 10000 : 30000))
sample_bytes=524288
bound=$((quick ? 120 : 300))   # seconds any one run may take (valgrind's is the one that needs it)

[ "$dry" = 1 ] || "$root/scripts/setup.sh" bench
# STACKWALK_BENCH_BUILD: a build to use as it is (nothing configured or built there).
build="${STACKWALK_BENCH_BUILD:-}"
if [ -z "$build" ]; then
  build="$root/build/bench-release"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTACKWALK_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j2 --target stackwalk-leakcheck stackwalk_leakcheck >/dev/null
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# The workload without frame pointers (the issue's), and built with LeakSanitizer.
workload="$scratch/leak_workload" lsan_workload="$scratch/leak_workload_lsan"
c++ -std=c++17 -O2 -g -fomit-frame-pointer "$root/bench/leak_workload.cc" -o "$workload" -lpthread
clang++ -std=c++17 -O2 -g -fomit-frame-pointer -fsanitize=leak "$root/bench/leak_workload.cc" \
  -o "$lsan_workload" -lpthread
liblsan="$(c++ -print-file-name=liblsan.so)"
liblsan="$(readlink -f "$liblsan")"
python="$(command -v /usr/bin/python3 || command -v python3)"
cat >"$scratch/json_regex.py" <<PY
import json, re
items = [{"id": i, "name": "item%d" % i, "tags": ["t%d" % (i % 7), "x" * (i % 13)],
          "price": i * 0.25, "nested": {"a": [i, i + 1], "b": str(i)}} for i in range($py_items)]
text = json.dumps(items)
pattern = re.compile(r'"name": "item(\d+)", "tags": \["(t\d)"')
total = 0
for _ in range(3):
    back = json.loads(text)
    total += sum(int(m.group(1)) for m in pattern.finditer(text))
    total += len([d for d in back if re.search(r"x{5,}", d["tags"][1])])
print(total)
PY
cat >"$scratch/stl.cc" <<'CC'
#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>
template <class K, class V> using Index = std::map<K, std::vector<std::optional<V>>>;
int main() {
  Index<std::string, std::variant<int, std::string, double>> index;
  std::unordered_map<std::string, std::deque<std::list<std::set<int>>>> deep;
  std::regex word("[a-z]+");
  auto f = std::async(std::launch::async, [&] { return index.size() + deep.size(); });
  std::ostringstream out;
  out << f.get() << std::regex_match("abc", word);
  std::vector<std::tuple<int, std::string, std::shared_ptr<int>>> rows;
  std::sort(rows.begin(), rows.end());
  std::function<int(int)> g = [](int x) { return x * 2; };
  return static_cast<int>(out.str().size()) + g(1);
}
CC

# A configure from scratch each time: a build directory of its own for each run (named when the
# command is made), the program cmake itself (heaptrack follows no exec).
mkdir -p "$scratch/cmake_src"
cat >"$scratch/cmake_src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(demo C CXX)
include(CheckIncludeFile)
include(CheckFunctionExists)
check_include_file(unistd.h HAVE_UNISTD)
check_include_file(sys/mman.h HAVE_MMAN)
check_function_exists(mmap HAVE_MMAP)
find_package(Threads REQUIRED)
add_executable(demo main.c)
CMAKE
echo 'int main(void) { return 0; }' >"$scratch/cmake_src/main.c"

workloads=(workload python clang cmake)
tools=(plain "stackwalk fp" "stackwalk auto" "stackwalk sampled" "stackwalk record only"
       "LSan built in" "LSan preloaded" heaptrack valgrind)
# The program of a workload; empty for a tool that cannot run it.
program() {  # workload tool
  case "$1" in
    workload) if [ "$2" = "LSan built in" ]; then echo "$lsan_workload 2 $per_thread";
              else echo "$workload 2 $per_thread"; fi ;;
    python) [ "$2" = "LSan built in" ] || echo "$python $scratch/json_regex.py" ;;
    clang) [ "$2" = "LSan built in" ] || echo "clang++ -std=c++17 -fsyntax-only $scratch/stl.cc" ;;
    cmake) [ "$2" = "LSan built in" ] ||
             echo "cmake -S $scratch/cmake_src -B $scratch/cmake_build.$(date +%s%N)" ;;
  esac
}
# The command line of a tool around a program; its report, if any, in $scratch/<w>.<n>.report.
command_of() {  # workload tool-index
  local w="$1" i="$2" tool="${tools[$2]}" prog
  prog="$(program "$w" "$tool")"
  [ -n "$prog" ] || return 0
  [ "$tool" != valgrind ] || [ "$w" = python ] || return 0
  local report="$scratch/$w.$i.report" env="env PYTHONMALLOC=malloc"
  case "$tool" in
    plain) echo "$env $prog" ;;
    "stackwalk fp") echo "$env $build/stackwalk-leakcheck --method fp --output $report $prog" ;;
    "stackwalk auto") echo "$env $build/stackwalk-leakcheck --output $report $prog" ;;
    "stackwalk sampled")
      echo "$env $build/stackwalk-leakcheck --sample-bytes $sample_bytes --output $report $prog" ;;
    "stackwalk record only")
      echo "$env LD_PRELOAD=$build/libstackwalk_leakcheck.so STACKWALK_LEAKCHECK=report_at_exit=0 $prog" ;;
    "LSan built in") echo "$env LSAN_OPTIONS=exitcode=0:log_path=$report $prog" ;;
    "LSan preloaded") echo "$env LD_PRELOAD=$liblsan LSAN_OPTIONS=exitcode=0:log_path=$report $prog" ;;
    heaptrack) echo "$env heaptrack --raw -o $scratch/heaptrack.$w $prog" ;;
    valgrind) echo "$env valgrind --leak-check=full --log-file=$report $prog" ;;
  esac
}

for w in "${workloads[@]}"; do
  for i in "${!tools[@]}"; do
    cmd="$(command_of "$w" "$i")"
    [ -n "$cmd" ] || continue
    set -- $cmd
    while [ "${1:-}" = env ] || [[ "${1:-}" == *=* ]]; do shift; done
    command -v "$1" >/dev/null || { echo "bench_leakcheck: $1 not found (for $w, ${tools[$i]})" >&2; exit 1; }
    [ "$dry" = 0 ] || echo "$w | ${tools[$i]}: $cmd"
  done
done
[ "$dry" = 0 ] || exit 0

declare -A wall rss cut
for ((round = 0; round < rounds; ++round)); do
  for w in "${workloads[@]}"; do
    for i in "${!tools[@]}"; do
      cmd="$(command_of "$w" "$i")"
      [ -n "$cmd" ] || continue
      status=0
      /usr/bin/time -f "%e %M" -o "$scratch/time" timeout "$bound" $cmd >/dev/null 2>&1 || status=$?
      if [ -s "$scratch/time" ]; then
        read -r seconds kb < <(tail -1 "$scratch/time")
        wall[$w.$i]+="$seconds "
        rss[$w.$i]+="$kb "
      fi
      [ "$status" != 124 ] || cut[$w.$i]=1  # timed out: its figures are lower bounds
      rm -f "$scratch/time"
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }

echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown); $(c++ --version | head -1);" \
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores); load $(cut -d' ' -f1-3 /proc/loadavg);" \
     "$(date -u +%Y-%m-%d); median of $rounds interleaved round(s)$([ "$quick" = 1 ] && echo ', --quick')"
echo "workload: 2 threads x $per_thread allocations, no frame pointers; python: $py_items items;" \
     "sampled: --sample-bytes $sample_bytes; valgrind on python only, each run at most ${bound}s"
echo
echo "| workload | tool | wall s | x plain | peak RSS MB | x plain | own bytes / live allocation | report s |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for w in "${workloads[@]}"; do
  plain_wall="$(echo "${wall[$w.0]:-}" | median)"
  plain_rss="$(echo "${rss[$w.0]:-}" | median)"
  record_wall="$(echo "${wall[$w.4]:-}" | median)"
  for i in "${!tools[@]}"; do
    [ -n "${wall[$w.$i]:-}" ] || continue
    wl="$(echo "${wall[$w.$i]}" | median)"
    r="$(echo "${rss[$w.$i]}" | median)"
    per="" report_s=""
    if [ -f "$scratch/$w.$i.report" ] && [[ "${tools[$i]}" == stackwalk* ]]; then
      per="$(sed -n 's/.*, \([0-9]*\) per live allocation.*/\1/p' "$scratch/$w.$i.report" | tail -1)"
    fi
    if [ "${tools[$i]}" = "stackwalk auto" ] && [ -n "$record_wall" ]; then
      report_s="$(echo "$wl - $record_wall" | bc -l | awk '{printf "%.2f", $1}')"
    fi
    more=""; [ -z "${cut[$w.$i]:-}" ] || more=">"  # stopped at the bound
    printf "| %s | %s | %s%.2f | %s%.2f | %.0f | %.2f | %s | %s |\n" "$w" "${tools[$i]}" "$more" "$wl" "$more" \
      "$(echo "$wl / $plain_wall" | bc -l)" "$(echo "$r / 1024" | bc -l)" \
      "$(echo "$r / $plain_rss" | bc -l)" "$per" "$report_s"
  done
done
