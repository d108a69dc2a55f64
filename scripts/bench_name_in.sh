#!/usr/bin/env bash
# Where the leak report is named, measured (issue 18): python3 importing five modules and
# clang++ -fsyntax-only over an STL-heavy file, under stackwalk-leakcheck naming in the program
# (the default), with --program-report=0 --dump (the program's side alone: what it costs the
# program when the launcher names), and with --name-in=launcher (the whole run: the program, then
# the launcher naming its dump). Wall seconds and peak RSS (MB; for a whole run, the larger of the
# launcher's and the program's), medians of ROUNDS runs.
# Usage: scripts/bench_name_in.sh LAUNCHER [ROUNDS (default 3)]
set -euo pipefail
launcher="${1:?usage: $0 LAUNCHER [ROUNDS]}"
rounds="${2:-3}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cat >"$scratch/stl.cc" <<'CC'
#include <algorithm>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>
#include <functional>
#include <memory>
#include <sstream>
int main() { std::map<std::string, std::vector<int>> m; std::regex r("a+"); return 0; }
CC
python="$(command -v /usr/bin/python3 || command -v python3)"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() {  # name options... -- command...
  local name="$1"; shift
  for _ in $(seq "$rounds"); do
    /usr/bin/time -f "%e %M" -o "$scratch/t" "$launcher" "$@" >/dev/null 2>&1 || true
    read -r wall kb <"$scratch/t"
    echo "$wall" >>"$scratch/wall.$name"
    echo "$((kb / 1024))" >>"$scratch/rss.$name"
  done
  printf '%-44s %8s s %6s MB\n' "$name" "$(median <"$scratch/wall.$name")" \
    "$(median <"$scratch/rss.$name")"
}
echo "commit: $(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo unknown); load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; median of $rounds"
py=("$python" -c 'import json, decimal, email.parser, http.client, xml.etree.ElementTree')
cx=(clang++ -std=c++17 -fsyntax-only "$scratch/stl.cc")
for tool in py cx; do
  declare -n cmd="$tool"
  measure "$tool: named in the program" --output "$scratch/r" -- "${cmd[@]}"
  measure "$tool: the program's side (--program-report=0)" --program-report=0 \
    --dump "$scratch/d" -- "${cmd[@]}"
  measure "$tool: named in the launcher (whole run)" --name-in=launcher --output "$scratch/r" \
    -- "${cmd[@]}"
done
