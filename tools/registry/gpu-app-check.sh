#!/usr/bin/env bash
# On a GPU host without Node.js or a registry: the project folder that install-app.mjs made (a plain
# `npm install @attn/core @attn/flash-cuda @attn/cutlass-memeff @attn/cli` from the test registry),
# packed here as .gpu-app-pack/{node.xz,app.tar.xz}:
#   mkdir -p .gpu-app-pack && xz -c "$(command -v node)" > .gpu-app-pack/node.xz &&
#   tar -cf - .gpu-app | xz > .gpu-app-pack/app.tar.xz
# It runs attn doctor, attn check (the conformance cases against cpu-math) on cuda and a small
# attn bench against torch, all from the installed packages: no compiler, no monorepo.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/attn-out}; mkdir -p "$OUT" /tmp/attn-app-bin
xz -dc .gpu-app-pack/node.xz > /tmp/attn-app-bin/node && chmod +x /tmp/attn-app-bin/node
tar -xJf .gpu-app-pack/app.tar.xz -C /tmp
export PATH=/tmp/attn-app-bin:$PATH
cd /tmp/.gpu-app
attn() { node node_modules/@attn/cli/dist/bin.js "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
attn doctor 2>&1 | tee "$OUT/doctor.txt"
attn check --device cuda --seed "${SEED:-1}" 2>&1 | tee "$OUT/check.txt"
echo "check exit: ${PIPESTATUS[0]}"
timeout 300 node node_modules/@attn/cli/dist/bin.js bench --device cuda --compare torch --seq 1k,4k --dim 64,128 \
  --mode fwd,fwdbwd --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
