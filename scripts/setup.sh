#!/usr/bin/env bash
# Installs the Debian 12 packages stackwalk builds and tests with. Quick when they are there:
# apt runs only for missing packages. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  googletest            # GoogleTest sources: built for every target, cross ones included
  g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user
  libbenchmark-dev      # Google Benchmark, for bench/
  libdw-dev libelf-dev libabsl-dev liblzma-dev  # the symbolizer: DWARF (elfutils), abseil, MiniDebugInfo (xz)
  libunwind8 libunwind-14   # peers (loaded with dlopen): nongnu and LLVM libunwind
  clang libclang-rt-14-dev  # libFuzzer and the sanitizers, for tests/fuzz
  valgrind              # the leak checker's oracle
)
# `setup.sh bench`: also what the leak checker's benchmark compares with and measures by.
if [ "${1:-}" = bench ]; then
  packages+=(heaptrack time bc elfutils libc6-dbg llvm-14)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
