#!/bin/sh
# Checks the floors of src/ (docs: DESIGN.md section 4): src/core is the ground floor and includes
# nothing from a folder above it; the unwinders (src/fp, src/ehframe, src/exidx) include nothing
# from the walk that dispatches between them, nor from the API, the symbolizer, the formatter or
# the crash handler. Every include of a project header is checked, in every source, header and
# .inc file of those folders. Usage: layering_test.sh <source root>
set -u
root=${1:?usage: layering_test.sh <source root>}
cd "$root/src" || exit 2

status=0
# check <folder> <folders it must not include from...>
check() {
  folder=$1
  shift
  above=$(echo "$@" | tr ' ' '|')
  if [ ! -d "$folder" ]; then
    echo "layering_test: no folder src/$folder" >&2
    status=1
    return
  fi
  found=$(find "$folder" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.inc' \) -print0 |
    xargs -0 grep -HnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"($above)/" || true)
  if [ -n "$found" ]; then
    echo "src/$folder includes from a folder above it ($*):"
    echo "$found" | sed 's/^/  src\//'
    status=1
  fi
}

check core fp ehframe exidx walk symbolize api format crash
for unwinder in fp ehframe exidx; do
  check "$unwinder" walk api symbolize format crash
done

if [ "$status" -eq 0 ]; then
  echo "layering_test: src/core, src/fp, src/ehframe and src/exidx include only from their floor or below"
fi
exit "$status"
