#!/usr/bin/env bash
# Builds stackwalk and runs the demo: a program that prints its own symbolized backtrace, then a
# small program with two leaks under stackwalk-leakcheck.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
build="$root/build/demo"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTACKWALK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target stackwalk_demo stackwalk_leak_demo stackwalk-leakcheck >/dev/null
"$build/examples/stackwalk_demo"
echo
echo "=== stackwalk-leakcheck $build/examples/stackwalk_leak_demo"
exec "$build/stackwalk-leakcheck" "$build/examples/stackwalk_leak_demo"
