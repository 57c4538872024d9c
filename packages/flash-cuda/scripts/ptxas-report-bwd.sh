#!/usr/bin/env bash
# Compiles each backward instantiation alone with ptxas -v and prints registers, spills and stack per
# kernel (dK/dV, deterministic dQ) and for the Dsum / dQ-conversion passes.
# Usage: scripts/ptxas-report-bwd.sh [arch, default sm_90a] [name filter, e.g. bf16]
set -euo pipefail
cd "$(dirname "$0")/../native/src"
arch=${1:-sm_90a}; filter=${2:-}
for f in generated/bwd_*${filter}*.cu bwd/bwd_prepost.cu; do
  nvcc -std=c++17 -O3 --expt-relaxed-constexpr -arch="$arch" -I. -I../../../cuda/native/include -I../../../native/include -Xptxas -v \
       -c "$f" -o /dev/null 2>&1 | awk -v file="$(basename "$f" .cu)" '
    /Compiling entry function/ { match($0, /flash_bwd_[a-z0-9_]+_kernel|bwd_[a-z_]+_kernel/); k = substr($0, RSTART, RLENGTH) }
    /spill/ { sp = $0; gsub(/^ +/, "", sp) }
    /registers/ { r = $0; sub(/.*Used /, "", r); printf "%-16s %-24s %s; %s\n", file, k, r, sp }
    /error/ { print file ": " $0 }'
done
