#!/usr/bin/env bash
# Builds packages/flash-cuda/native/probe/fwd_tile_probe.cu into $1 (default packages/flash-cuda/build/probe): the
# Hopper forward kernel with its TMA and cp.async producers side by side over the standard grid and odd shapes,
# outputs compared bit for bit. Needs nvcc and sm_90a; run the binary on an sm_90a host ([--grid | --odd | --tiles |
# --encode]; one JSON line per producer and point).
set -euo pipefail
here="$(cd "$(dirname "$0")/../../packages/flash-cuda" && pwd)"
out="${1:-$here/build/probe}"
mkdir -p "$out"
nvcc -std=c++17 -O3 --expt-relaxed-constexpr -arch=sm_90a -lineinfo -I "$here/native/src" -I "$here/../cuda/native/include" \
  -I "$here/../native/include" -o "$out/fwd_tile_probe" "$here/native/probe/fwd_tile_probe.cu"
echo "built $out/fwd_tile_probe"
