#!/usr/bin/env bash
# Installs the Debian 12 packages stackwalk builds and tests with. Quick when they are there:
# apt runs only for missing packages. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  googletest            # GoogleTest sources: built for every target, cross ones included
  g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user
  libbenchmark-dev      # Google Benchmark, for bench/
  libdw-dev libelf-dev libabsl-dev liblzma-dev libdeflate-dev  # the symbolizer: DWARF (elfutils), abseil, MiniDebugInfo (xz), compressed debug sections
  libunwind8 libunwind-14   # peers (loaded with dlopen): nongnu and LLVM libunwind
  clang libclang-rt-14-dev  # libFuzzer and the sanitizers, for tests/fuzz
  valgrind              # the leak checker's oracle
  llvm-14               # llvm-symbolizer-14: the oracle of stackwalk-symbolize's llvm-symbolizer style
  nlohmann-json3-dev    # JSON outside the capture and recording paths (reports, the symbolizer's output)
  python3-jsonschema    # tests check every JSON output against its schema in docs/
  elfutils              # eu-stack: the oracle of stackwalk-dump's test (and its benchmark's peer)
  chromium              # headless: the flame graph SVG and HTML report opened in a browser (flamegraph_browser_test)
)
# `setup.sh bench`: also what the leak checker's benchmark compares with and measures by.
if [ "${1:-}" = bench ]; then
  packages+=(heaptrack time bc libc6-dbg valgrind liblsan0 clang)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Cross builds name C++ functions on the signal-safe path with abseil's demangler built for their
# target. Its archive comes from Debian's libabsl-dev for that architecture, downloaded and unpacked
# under /opt/stackwalk-cross/<multiarch> rather than installed: installing it would pull the
# target's libc6 into /usr/lib, which the qemu-run tests' cross ld.so would then load, a libc of
# another build. Optional: without it the cross builds print mangled names there, so this warns.
cross_root=/opt/stackwalk-cross
cross_missing=()
for pair in arm64:aarch64-linux-gnu armhf:arm-linux-gnueabihf; do
  multiarch=${pair#*:}
  [ -e "$cross_root/$multiarch/usr/lib/$multiarch/libabsl_demangle_internal.a" ] || cross_missing+=("$pair")
done
if [ ${#cross_missing[@]} -gt 0 ]; then
  for pair in "${cross_missing[@]}"; do
    dpkg --print-foreign-architectures | grep -qx "${pair%%:*}" || $SUDO dpkg --add-architecture "${pair%%:*}"
  done
  $SUDO apt-get update -q || echo "setup: warning: apt-get update failed for some index" >&2
  download=$(mktemp -d)
  chmod 777 "$download"  # apt downloads as its sandbox user
  for pair in "${cross_missing[@]}"; do
    arch=${pair%%:*}
    multiarch=${pair#*:}
    if (cd "$download" && apt-get download -q "libabsl-dev:$arch" >/dev/null) &&
       $SUDO mkdir -p "$cross_root/$multiarch" &&
       $SUDO dpkg-deb -x "$download"/libabsl-dev_*_"$arch".deb "$cross_root/$multiarch"; then
      echo "setup: abseil for $multiarch unpacked in $cross_root/$multiarch"
    else
      echo "setup: warning: no libabsl-dev:$arch; $multiarch builds print mangled names in crash reports" >&2
    fi
  done
  rm -rf "$download"
fi
