#!/usr/bin/env bash
# Builds stackwalk and runs the demo: a program that prints its own symbolized backtrace.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
build="$root/build/demo"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTACKWALK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target stackwalk_demo >/dev/null
exec "$build/examples/stackwalk_demo"
