#!/usr/bin/env bash
# Builds packages/flash-cuda/native/probe/fwd_tile_probe.cu into $1 (default packages/flash-cuda/build/probe): the
# Hopper forward kernel's tile variants (64- or 128-key tiles, ring depths) timed alone at the standard grid's S 1k
# and 4k points, each output compared with the generated configuration's. Needs nvcc and sm_90a; run the binary on
# an sm_90a host (no arguments; one JSON line per variant and point).
set -euo pipefail
here="$(cd "$(dirname "$0")/../../packages/flash-cuda" && pwd)"
out="${1:-$here/build/probe}"
mkdir -p "$out"
nvcc -std=c++17 -O3 -arch=sm_90a -lineinfo -I "$here/native/src" -I "$here/../cuda/native/include" \
  -I "$here/../native/include" -o "$out/fwd_tile_probe" "$here/native/probe/fwd_tile_probe.cu"
echo "built $out/fwd_tile_probe"
