#!/usr/bin/env bash
# Symbolization throughput on the same 10,000 addresses: the library (cold and warm), the
# stackwalk-symbolize CLI in addr2line mode, binutils addr2line, elfutils eu-addr2line and
# llvm-symbolizer-14, each with function names, demangling and inline frames. Two files: an -O2 -g
# build of libstackwalk_symbolize.so (abseil and the STL inlined into it) and libc.so.6 with its
# build-id debug file. Addresses are drawn uniformly over the bytes of the file's functions.
# Prints milliseconds (median of ROUNDS) and how many outputs are identical to addr2line's.
# Usage: scripts/bench_symbolize.sh [ROUNDS (default 3)] [ADDRESSES (default 10000)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" bench
rounds="${1:-3}"
count="${2:-10000}"
build="$root/build/bench-symbolize"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTACKWALK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target symbolize_throughput stackwalk-symbolize >/dev/null
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

libc="$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)"
libc_id="$(readelf -n "$libc" | awk '/Build ID/ {print $3}')"
libc_debug="/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug"
corpus_lib="$(readlink -f "$build/libstackwalk_symbolize.so")"

# Addresses uniform over the bytes of the functions that `symbols` lists (fixed seed).
draw() {
  nm --defined-only -S "$1" | awk -v n="$count" '
    function hex(h,   v, i) { v = 0; for (i = 1; i <= length(h); ++i) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1; return v }
    $3 ~ /^[tTwW]$/ && length($2) > 0 { s = hex($2); if (s > 0) { a[m] = hex($1); z[m] = s; t += s; c[m++] = t } }
    END { srand(7); for (i = 0; i < n; ++i) { r = int(rand() * t); lo = 0; hi = m - 1;
            while (lo < hi) { mid = int((lo + hi) / 2); if (c[mid] > r) hi = mid; else lo = mid + 1 }
            printf "0x%x\n", a[lo] + (r - (c[lo] - z[lo])) } }'
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Milliseconds of one command, output kept in $scratch/out.$name.
timed() {
  local name="$1"; shift
  local start end
  start=$(date +%s%N)
  "$@" >"$scratch/out.$name" 2>/dev/null
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

echo "commit:   $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "cpu:      $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
for corpus in "$corpus_lib" "$libc"; do
  symbols="$corpus"
  [ "$corpus" = "$libc" ] && symbols="$libc_debug"
  draw "$symbols" > "$scratch/addresses"
  echo
  echo "== $(basename "$corpus") ($(du -h "$symbols" | cut -f1) with debug info), $(wc -l < "$scratch/addresses") addresses, median of $rounds rounds"
  declare -A ms=()
  for ((round = 0; round < rounds; ++round)); do
    ms[stackwalk]+="$(timed stackwalk "$build/stackwalk-symbolize" --addr2line -f -C -i -e "$corpus" < "$scratch/addresses") "
    ms[addr2line]+="$(timed addr2line addr2line -f -C -i -e "$corpus" < "$scratch/addresses") "
    ms[llvm]+="$(timed llvm llvm-symbolizer-14 --obj="$corpus" -f -C -i < "$scratch/addresses") "
    read -r cold warm _ < <("$build/bench/symbolize_throughput" "$corpus" "$scratch/addresses")
    ms[library_cold]+="$cold "
    ms[library_warm]+="$warm "
  done
  # eu-addr2line is slow (minutes on a large file): once, on the first 1,000 addresses, scaled.
  head -1000 "$scratch/addresses" > "$scratch/addresses.1k"
  eu_ms=$(timed eu eu-addr2line -f -C -i -e "$corpus" < "$scratch/addresses.1k")
  same=$(diff <(cat "$scratch/out.addr2line") "$scratch/out.stackwalk" | grep -c '^>' || true)
  total=$(wc -l < "$scratch/out.addr2line")
  a2l=$(echo "${ms[addr2line]}" | tr ' ' '\n' | grep -v '^$' | median)
  printf "%-34s %10s %12s\n" tool "ms" "vs llvm"
  llvm=$(echo "${ms[llvm]}" | tr ' ' '\n' | grep -v '^$' | median)
  for key in library_warm library_cold stackwalk llvm addr2line; do
    v=$(echo "${ms[$key]}" | tr ' ' '\n' | grep -v '^$' | median)
    case $key in
      library_warm) label="stackwalk library, warm" ;;
      library_cold) label="stackwalk library, cold" ;;
      stackwalk) label="stackwalk-symbolize --addr2line" ;;
      llvm) label="llvm-symbolizer-14" ;;
      addr2line) label="binutils addr2line" ;;
    esac
    printf "%-34s %10.0f %11.2fx\n" "$label" "$v" "$(echo "$v / $llvm" | bc -l)"
  done
  printf "%-34s %10.0f %11.2fx  (1,000 addresses x 10)\n" "elfutils eu-addr2line" "$((eu_ms * 10))" "$(echo "$eu_ms * 10 / $llvm" | bc -l)"
  echo "stackwalk-symbolize lines differing from addr2line's: $same of $total"
done
