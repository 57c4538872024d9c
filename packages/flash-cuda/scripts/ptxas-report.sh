#!/usr/bin/env bash
# Compiles each forward instantiation alone with ptxas -v and prints one line per kernel: registers,
# spills, stack. Usage: scripts/ptxas-report.sh [arch, default sm_90a] [name filter, e.g. bf16]
set -euo pipefail
cd "$(dirname "$0")/../native/src"
arch=${1:-sm_90a}; filter=${2:-}
for f in generated/fwd_*${filter}*.cu; do
  out=$(nvcc -std=c++17 -O3 --expt-relaxed-constexpr -arch="$arch" -I. -I../../../cuda/native/include -I../../../native/include -Xptxas -v \
        -c "$f" -o /dev/null 2>&1 | grep -E 'error|registers|spill' | tr -s ' ' | tr '\n' ' ')
  printf '%-28s %s\n' "$(basename "$f" .cu)" "$out"
done
