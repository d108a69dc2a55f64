#!/bin/sh
# The preloaded checker loads into every process it checks (with --follow-exec or LD_PRELOAD, each
# of a configure's hundreds), with every library it needs: of abseil only the demangler
# libstackwalk uses, not libabsl_status, which brings 22 more and cost each process ~3 ms to load
# (docs/leakcheck-benchmarks.md). Usage: preload_dependencies_test.sh <libstackwalk_leakcheck.so>
set -u
library=${1:?usage: preload_dependencies_test.sh <library>}
loaded=$(ldd "$library" | awk '{print $1}') || exit 2
case "$loaded" in
  *libc.so*) ;;
  *)
    echo "preload_dependencies_test: ldd listed no libc for $library:" >&2
    echo "$loaded" >&2
    exit 2
    ;;
esac
abseil=$(echo "$loaded" | grep '^libabsl' | grep -v '^libabsl_demangle_internal')
if [ -n "$abseil" ]; then
  echo "preload_dependencies_test: $library loads abseil beyond its demangler:" >&2
  echo "$abseil" >&2
  exit 1
fi
echo "preload_dependencies_test: $library loads $(echo "$loaded" | wc -l) objects:" $loaded
