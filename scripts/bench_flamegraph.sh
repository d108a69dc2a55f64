#!/usr/bin/env bash
# The flame graph's bound, measured (issue 19): STACKS distinct five-frame stacks (50 dispatchers,
# 5,000 handlers, one distinct site per stack) as a folded file, rendered by stackwalk-flamegraph;
# prints the input's and the SVG's sizes, the frames drawn and left out, and the renderer's
# user seconds and peak RSS (GNU time).
# Usage: scripts/bench_flamegraph.sh STACKWALK_FLAMEGRAPH [STACKS (default 1000000)]
set -euo pipefail
tool="${1:?usage: $0 STACKWALK_FLAMEGRAPH [STACKS]}"
stacks="${2:-1000000}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 - "$stacks" >"$scratch/in.folded" <<'PY'
import random, sys
random.seed(1)
out = sys.stdout
for i in range(int(sys.argv[1])):
    out.write("main;dispatch_%d;handler_%d;std::vector<Item<%d>>::push_back;operator new(unsigned long) %d\n"
              % (i % 50, i % 5000, i, 1 + random.randrange(4096)))
PY
/usr/bin/time -f "%U s user, %e s wall, %M KiB peak RSS" -o "$scratch/time" \
  "$tool" --title "$stacks distinct stacks" -o "$scratch/out.svg" "$scratch/in.folded"
echo "input:  $(stat -c %s "$scratch/in.folded") bytes, $stacks stacks"
echo "svg:    $(stat -c %s "$scratch/out.svg") bytes, $(grep -c '<g class="f"' "$scratch/out.svg") frames drawn"
grep -o 'class="fg-note"[^>]*>[^<]*' "$scratch/out.svg" | sed 's/.*>/note:   /'
echo "time:   $(cat "$scratch/time")"
