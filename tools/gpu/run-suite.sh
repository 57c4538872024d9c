#!/usr/bin/env bash
# Runs on the GPU host (no Node.js, no registry) after tools/gpu/pack.sh packed .gpu/.
# Each step has its own time limit and log; one failing step does not hide the others.
# Usage: bash tools/gpu/run-suite.sh STEP... (named steps below, or NAME:COMMAND); logs go to $OUT/logs/ as each step
# ends (so a run cut short by its time limit still returns the finished steps), a summary to stdout.
# `cuda flash memeff grid` together are what `pnpm test:gpu` runs where pnpm is (each CUDA package's vitest
# suite, GPU parts included); set ATTN_REQUIRE_GPU=1 so that a suite that cannot run fails instead of skipping.
# The suites' other variables (seeds, fuzz and soak budgets, the fuzz sanitizer) are listed, with their parsers, in
# @attn/core's TEST_ENV_FLAGS (packages/core/src/env-flags.ts).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/attn-out}; LOGS="$OUT/logs"; mkdir -p "$LOGS"
export NODE_OPTIONS="${NODE_OPTIONS:-}" PYTHONUNBUFFERED=1
ROOT=$PWD
node_cmd() { bash .gpu/run.sh node "$@"; }
# Each package's suite runs from its own folder, as `pnpm test` runs it (the fuzz suite's child
# processes resolve the backend packages from the working folder).
# vitest DIR [FILTER...]: the package's suite, or the files whose path contains a FILTER.
vitest() { (cd "$1" && shift && PATH="$ROOT/.gpu/bin:$PATH" node "$ROOT/node_modules/vitest/vitest.mjs" run "$@"); }
export ROOT
export -f node_cmd vitest
declare -A STATUS

step() {  # step NAME TIMEOUT_S CMD...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" bash -c "$*" >"$LOGS/$name.log" 2>&1
  local rc=$?
  STATUS[$name]="rc=$rc $((SECONDS - t0))s"
  echo "== $name: rc=$rc in $((SECONDS - t0))s"; tail -n 25 "$LOGS/$name.log"
}

bash .gpu/run.sh true  # unpack once
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > "$LOGS/gpu.txt" 2>&1
for s in "$@"; do
  case "$s" in
    golden)     step golden 300 python3 packages/cpu/scripts/make_golden.py "$OUT/golden.json" ;;
    cuda)       step cuda 300 vitest packages/cuda ;;
    flash)      step flash 480 vitest packages/flash-cuda ;;
    flash-tables) step flash-tables 480 vitest packages/flash-cuda gpu-table ;;  # flash-cuda's case tables alone
    memeff)     step memeff 480 vitest packages/cutlass-memeff ;;
    memeff-tables) step memeff-tables 480 vitest packages/cutlass-memeff gpu-table ;;  # memeff-cuda's case tables alone
    cpu)        step cpu 300 vitest packages/cpu ;;
    grid)       step grid 480 vitest test/cuda-grid ;;  # every feature combination, all CUDA backends: no NoBackendError
    cuda-math-sanitize)  # a slice of cuda-math's GPU tests under compute-sanitizer (vitest forks: follow every process)
      for tool in memcheck racecheck; do
        step "cuda-math-$tool" 480 "cd packages/cuda && PATH=\"\$ROOT/.gpu/bin:\$PATH\" compute-sanitizer --tool $tool --target-processes all --error-exitcode 86 --report-api-errors no node \"\$ROOT/node_modules/vitest/vitest.mjs\" run src/math-backend/gpu.test.ts -t 'every feature|zero lengths|varlen|dbias|reproducible'"
      done ;;
    *:*)        step "${s%%:*}" 480 "${s#*:}" ;;  # NAME:COMMAND
    *)          echo "unknown step $s (use NAME:COMMAND)"; exit 2 ;;
  esac
done
echo "== summary"; for k in "${!STATUS[@]}"; do echo "$k ${STATUS[$k]}"; done
