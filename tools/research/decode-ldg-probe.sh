#!/usr/bin/env bash
# Builds packages/flash-cuda/native/probe/decode_ldg_probe.cu into $1 (default packages/flash-cuda/build/probe):
# the decode shape read by 16-byte global loads straight into mma.sync fragments (no shared-memory ring), checked
# against a float64 reference and timed beside flash-cuda's decode kernel. Needs nvcc and sm_90a; run the binary on
# an sm_90a host ([--no-check]).
set -euo pipefail
here="$(cd "$(dirname "$0")/../../packages/flash-cuda" && pwd)"
out="${1:-$here/build/probe}"
mkdir -p "$out"
nvcc -std=c++17 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -lineinfo -I "$here/native/src" \
  -I "$here/../cuda/native/include" -I "$here/../native/include" -Xptxas -warn-spills -o "$out/decode_ldg_probe" \
  "$here/native/probe/decode_ldg_probe.cu"
echo "built $out/decode_ldg_probe"
