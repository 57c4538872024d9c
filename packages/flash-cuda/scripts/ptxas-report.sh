#!/usr/bin/env bash
# Compiles the forward instantiation files with ptxas -v and prints one line per kernel: its traits
# (demangled), registers, spills, stack. Usage: scripts/ptxas-report.sh [arch, default sm_90a] [file
# filter, e.g. bf16_d128]
set -euo pipefail
cd "$(dirname "$0")/../native/src"
arch=${1:-sm_90a}; filter=${2:-}
for f in generated/fwd_*${filter}*.cu; do
  nvcc -std=c++17 -O3 --expt-relaxed-constexpr -arch="$arch" -I. -I../../../cuda/native/include -I../../../native/include -Xptxas -v \
       -c "$f" -o /dev/null 2>&1 | awk -v file="$(basename "$f" .cu)" '
    /Compiling entry function/ { match($0, /_Z[A-Za-z0-9_]+/); k = substr($0, RSTART, RLENGTH)
                                 cmd = "c++filt " k; cmd | getline k; close(cmd); sub(/^[^<]*</, "<", k) }
    /spill/ { sp = $0; gsub(/^ +/, "", sp) }
    /registers/ { r = $0; sub(/.*Used /, "", r); printf "%-16s %s: %s; %s\n", file, k, r, sp }
    /error/ { print file ": " $0 }'
done
