#!/usr/bin/env bash
# Builds packages/flash-cuda/native/probe/ws_race_probe.cu twice (as is, and with the consumers' turn-taking
# compiled out) into $1 (default packages/flash-cuda/build/probe), for compute-sanitizer racecheck runs on a GPU
# host. Needs nvcc and sm_90a.
set -euo pipefail
here="$(cd "$(dirname "$0")/../../packages/flash-cuda" && pwd)"
out="${1:-$here/build/probe}"
mkdir -p "$out"
inc=(-I "$here/native/src" -I "$here/../cuda/native/include" -I "$here/../native/include")
flags=(-std=c++17 -O3 -arch=sm_90a -lineinfo)
nvcc "${flags[@]}" "${inc[@]}" -o "$out/ws_race_probe" "$here/native/probe/ws_race_probe.cu" & a=$!
nvcc "${flags[@]}" "${inc[@]}" -DATTN_SM90_WS_NO_TURNS -o "$out/ws_race_probe_no_turns" "$here/native/probe/ws_race_probe.cu" & b=$!
wait "$a" && wait "$b"  # a failed build fails the script
echo "built $out/ws_race_probe{,_no_turns}"
