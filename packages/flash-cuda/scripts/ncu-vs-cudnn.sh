#!/usr/bin/env bash
# ncu profiles of flash-cuda's attention kernels beside cuDNN's (through torch), one call each, on a GPU host
# (after tools/gpu/pack.sh; `node` on PATH, or run through .gpu/run.sh). Per kernel: duration, issue-slot use,
# tensor-pipe use, the warp stall reasons, registers (ncu sections SpeedOfLight, ComputeWorkloadAnalysis,
# SchedulerStats, WarpStateStats, LaunchStats), as CSV under $OUT (default /tmp/attn-out).
#   bash packages/flash-cuda/scripts/ncu-vs-cudnn.sh [profile-call options: --seq 4096 --dim 128 --causal ...]
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/attn-out}; mkdir -p "$OUT"
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats
          --section LaunchStats)
# Kernels of the call only: the attention kernels and their pre/post passes (not the inputs' random fill).
names='regex:flash|fmha|sdpa|bwd|fwd|dq|dot_do|cudnn'
# Tensor-pipe use and the stall reasons per issued instruction, by name patterns (their exact names vary by GPU).
metrics='regex:^sm__pipe_tensor_op_.*_cycles_active\.avg\.pct_of_peak_sustained_active$|^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$'
profile() {  # profile OUT_CSV CMD...: with the extra metrics, else (an ncu without those names) the sections alone
  local csv=$1; shift
  ncu --target-processes all -k "$names" "${sections[@]}" --metrics "$metrics" --csv --page details "$@" > "$csv" ||
    ncu --target-processes all -k "$names" "${sections[@]}" --csv --page details "$@" > "$csv"
}
profile "$OUT/ncu-flash-cuda.csv" node packages/flash-cuda/scripts/profile-call.mjs "$@"
profile "$OUT/ncu-cudnn.csv" python3 packages/flash-cuda/scripts/profile_call_torch.py --backend cudnn "$@"
python3 packages/flash-cuda/scripts/ncu_summary.py "$OUT/ncu-flash-cuda.csv" "$OUT/ncu-cudnn.csv"
