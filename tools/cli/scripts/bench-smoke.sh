#!/usr/bin/env sh
# The CPU bench smoke at the end of `pnpm test`: cpu-flash at 2 threads on B=4 H=4 S=256 D=64, fp32 and
# bf16, causal and not, forward and forward+backward, beside torch's CPU flash where `python3` imports
# torch (else ours alone; the header says why). It prints the ratios; it is not a timed test: it fails
# only when a run crashes or one of our cases throws (--strict). Few samples, no timed warm-up: about
# 10 s on 2 cores with torch. Extra arguments go to each `attn bench` (e.g. --python, --json).
set -eu
cd "$(dirname "$0")/../../.."
for dtype in float32 bfloat16; do
  node tools/cli/dist/bin.js bench --device cpu --backends cpu-flash --dtype "$dtype" --seq 256 --dim 64 \
    --mode fwd,fwdbwd --threads 2 --compare torch --torch-backends flash \
    --repeat 3 --warmup 1 --warmup-ms 0 --budget 0.5 --strict --quiet "$@"
done
