#!/usr/bin/env bash
# Builds packages/flash-cuda/native/probe/bwd_tma_ws_probe.cu (the Hopper backward on either dK/dV kernel, checked
# against float64) into $1 (default packages/flash-cuda/build/probe), as is and with ATTN_BWD_TMA_WS_WATCHDOG (the
# TMA kernel's mbarrier waits give up and say which one hung), for compute-sanitizer runs on a GPU host. Needs nvcc
# and sm_90a.
set -euo pipefail
here="$(cd "$(dirname "$0")/../../packages/flash-cuda" && pwd)"
out="${1:-$here/build/probe}"
mkdir -p "$out"
inc=(-I "$here/native/src" -I "$here/../cuda/native/include" -I "$here/../native/include")
flags=(-std=c++17 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -lineinfo)
src=("$here/native/probe/bwd_tma_ws_probe.cu" "$here/native/src/bwd/bwd_prepost.cu")
nvcc "${flags[@]}" "${inc[@]}" -o "$out/bwd_tma_ws_probe" "${src[@]}" &
nvcc "${flags[@]}" "${inc[@]}" -DATTN_BWD_TMA_WS_WATCHDOG -o "$out/bwd_tma_ws_probe_watchdog" "${src[@]}" &
wait
echo "built $out/bwd_tma_ws_probe{,_watchdog}"
