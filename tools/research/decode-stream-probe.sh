#!/usr/bin/env bash
# Builds packages/flash-cuda/native/probe/decode_stream_probe.cu into $1 (default packages/flash-cuda/build/probe):
# how fast the decode shape's K/V stream through a ring of 64-key stages by cp.async or TMA, with or without the
# decode's math, dense or paged (and with --kernels, flash-cuda's two decode-shaped forward kernels alone beside
# it; --deep: the kernel at ring depths 3-6 and a warp-specialized cp.async ring). Needs nvcc and sm_90a; run the
# binary on an sm_90a host ([--one | --kernels | --deep] [--random]).
set -euo pipefail
here="$(cd "$(dirname "$0")/../../packages/flash-cuda" && pwd)"
out="${1:-$here/build/probe}"
mkdir -p "$out"
nvcc -std=c++17 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -lineinfo -I "$here/native/src" \
  -I "$here/../cuda/native/include" -I "$here/../native/include" -o "$out/decode_stream_probe" \
  "$here/native/probe/decode_stream_probe.cu"
echo "built $out/decode_stream_probe"
