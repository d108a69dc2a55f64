#!/bin/sh
# The preloaded checker loads into every process it checks (with --follow-exec or LD_PRELOAD, each
# of a configure's hundreds): it needs no abseil library, whose libabsl_status alone brings 22
# more and cost each process ~3 ms to load (docs/leakcheck-benchmarks.md). Usage:
# preload_dependencies_test.sh <libstackwalk_leakcheck.so>
set -u
library=${1:?usage: preload_dependencies_test.sh <library>}
needed=$(readelf -d "$library" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p') || exit 2
if [ -z "$needed" ]; then
  echo "preload_dependencies_test: no NEEDED entries read from $library" >&2
  exit 2
fi
case "$needed" in
  *libabsl*)
    echo "preload_dependencies_test: $library needs abseil:" >&2
    echo "$needed" | grep libabsl >&2
    exit 1
    ;;
esac
echo "preload_dependencies_test: $library needs $(echo "$needed" | tr '\n' ' ')"
