#!/bin/sh
# The preloaded checker loads into every process it checks (with --follow-exec or LD_PRELOAD, each
# of a configure's hundreds), with every library it needs: no abseil library beyond those
# libstackwalk itself loads (its demangler), not libabsl_status, which brings 22 more and cost each
# process ~3 ms to load (docs/leakcheck-benchmarks.md). Usage:
# preload_dependencies_test.sh <libstackwalk_leakcheck.so> <libstackwalk.so>
set -u
preload=${1:?usage: preload_dependencies_test.sh <preloaded library> <libstackwalk>}
core=${2:?usage: preload_dependencies_test.sh <preloaded library> <libstackwalk>}
abseil_of() {  # the abseil libraries ldd lists for $1, one a line, sorted
  listed=$(ldd "$1" | awk '{print $1}') || return 2
  case "$listed" in
    *libc.so*) ;;
    *) echo "preload_dependencies_test: ldd listed no libc for $1" >&2; return 2 ;;
  esac
  echo "$listed" | grep '^libabsl' | sort
}
preload_abseil=$(abseil_of "$preload") || exit 2
core_abseil=$(abseil_of "$core") || exit 2
added=$(echo "$preload_abseil" | grep -v -x -F "$(printf '%s\n' "$core_abseil" | grep . || echo none)" | grep .)
if [ -n "$added" ]; then
  echo "preload_dependencies_test: $preload loads abseil libraries libstackwalk does not:" >&2
  echo "$added" >&2
  exit 1
fi
echo "preload_dependencies_test: $preload loads no abseil beyond libstackwalk's:" $core_abseil
