#!/usr/bin/env bash
# Builds packages/flash-cuda/native/probe/fp8_fwd_probe.cu (the Hopper fp8 forward checked against float64 of the
# dequantized inputs, and timed against the bf16 Hopper kernel) for a GPU host. Needs nvcc and sm_90a.
#   fp8-fwd-probe.sh [out dir] [name suffix] [extra nvcc flags...]
# e.g. `fp8-fwd-probe.sh "" _s4 -DATTN_FP8_STAGES=4` (the ring depth), `-DATTN_FP8_STAGED_TILES=3` (V loaded
# further ahead), `-DATTN_FP8_SKIP_TRANSPOSE` (a diagnostic build whose output is wrong: the transpose's cost).
set -euo pipefail
here="$(cd "$(dirname "$0")/../../packages/flash-cuda" && pwd)"
out="${1:-$here/build/probe}"
suffix="${2:-}"
shift $(( $# < 2 ? $# : 2 ))
mkdir -p "$out"
inc=(-I "$here/native/src" -I "$here/../cuda/native/include" -I "$here/../native/include" -I "$here/native/probe")
flags=(-std=c++17 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -lineinfo -Xptxas -v)
nvcc "${flags[@]}" "$@" "${inc[@]}" -o "$out/fp8_fwd_probe$suffix" "$here/native/probe/fp8_fwd_probe.cu" 2>&1 |
  grep -A2 "fp8_kernel" | grep -E "registers|spill" || true
echo "built $out/fp8_fwd_probe$suffix"
