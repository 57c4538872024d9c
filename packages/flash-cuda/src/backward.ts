// One backward call: dq, dk, dv allocated through @attn/cuda like the forward's outputs, the forward
// call's arguments packed again (the kernels recompute exactly the forward's scores from them and the
// saved logsumexp), the backward's own arguments beside them, one addon call that queues Dsum -> (zero the dQ
// workspace) -> dK/dV kernel -> dQ conversion (or the deterministic dQ kernel where the dK/dV kernel leaves dQ
// out) on @attn/cuda's current stream. Workspaces are freed right after: the caching allocator is stream-ordered.
import {
  DeviceError,
  empty,
  emptyOutput,
  type ForwardOutputs,
  type Gradients,
  OUTPUT_NAMES,
  type SdpaParams,
  type Tensor,
} from '@attn/core';
import { currentStream } from '@attn/cuda';
import { NUM, PTR } from './abi.js';
import { BWD_NUM, BWD_PTR, bwdArgArrays } from './bwd-abi.js';
import { aligned16, factsOf, packArgs, requireAddon, rethrow, strides3 } from './forward.js';
import type { FlashAddon } from './native.js';

export interface FlashBackwardOptions {
  /** Overrides params.deterministic (benches compare both modes on one forward). */
  readonly deterministic?: boolean;
}

/** 16-byte vector access is safe for these tensors: base addresses 16-byte aligned, row/head/batch strides multiples of 8. */
function vectorFriendly(tensors: readonly Tensor[], varlen: boolean, headDim: number): boolean {
  if (headDim % 8 !== 0) return false;
  return tensors.every((t) => t.dataPointer() % 16n === 0n && strides3(t, varlen).every((s) => s % 8 === 0));
}

function backwardAddon(): FlashAddon & Required<Pick<FlashAddon, 'backward' | 'backwardPlan'>> {
  const a = requireAddon();
  if (typeof a.backward !== 'function' || typeof a.backwardPlan !== 'function') {
    throw new DeviceError(
      'ATTN_UNAVAILABLE',
      'flash-cuda: the native addon was built without the backward kernels; install the matching @attn/flash-cuda-linux-x64-gnu or rebuild it (npx @attn/native build @attn/flash-cuda).',
    );
  }
  return a as FlashAddon & Required<Pick<FlashAddon, 'backward' | 'backwardPlan'>>;
}

/** Packs both argument sets of a backward call (no gradient or workspace addresses yet). */
function packBackward(p: SdpaParams, saved: ForwardOutputs, gradOut: Tensor, deterministic: boolean) {
  const { ptrs, nums } = packArgs(p, factsOf(p.device.index));
  const varlen = p.varlen !== null;
  [nums[NUM.oBatchStride], nums[NUM.oHeadStride], nums[NUM.oRowStride]] = strides3(saved.out, varlen);
  const lse = saved.logsumexp;
  nums[NUM.lseBatchStride] = varlen ? 0 : lse.strides[0]!;
  nums[NUM.lseHeadStride] = varlen ? lse.strides[0]! : lse.strides[1]!;
  const { bptrs, bnums } = bwdArgArrays();
  [bnums[BWD_NUM.doBatchStride], bnums[BWD_NUM.doHeadStride], bnums[BWD_NUM.doRowStride]] = strides3(gradOut, varlen);
  bnums[BWD_NUM.deterministic] = deterministic ? 1 : 0;
  return { ptrs, nums, bptrs, bnums };
}

/** What the addon would run for a backward of these params: diagnostics and benches. */
export function backwardPlanFor(
  p: SdpaParams,
  opts: FlashBackwardOptions = {},
): { kernel: string; dqAccumStride: number } {
  const a = backwardAddon();
  const { nums } = packArgs(p, factsOf(p.device.index));
  const { bnums } = bwdArgArrays();
  bnums[BWD_NUM.deterministic] = (opts.deterministic ?? p.deterministic) ? 1 : 0;
  try {
    const plan = a.backwardPlan(nums, bnums);
    return { kernel: plan.kernel, dqAccumStride: plan.dqAccumStride };
  } catch (e) {
    rethrow(e);
  }
}

export function flashBackward(
  p: SdpaParams,
  saved: ForwardOutputs,
  gradOut: Tensor,
  opts: FlashBackwardOptions = {},
): Gradients {
  const a = backwardAddon();
  const device = p.device;
  const deterministic = opts.deterministic ?? p.deterministic;
  const varlen = p.varlen !== null;
  const scratch: Tensor[] = [];
  // The kernels read rows of dO with unit stride along D, and index Dsum and the dQ workspace like a
  // contiguous lse. The forward's own outputs always are so; a user's gradOut may not be (then one copy,
  // freed after the call).
  const lastUnit = (t: Tensor) => t.strides[t.rank - 1] === 1 || t.shape[t.rank - 1] === 1;
  const dout = lastUnit(gradOut) ? gradOut : gradOut.contiguous();
  if (dout !== gradOut) scratch.push(dout);
  const lse = saved.logsumexp.isContiguous() ? saved.logsumexp : saved.logsumexp.contiguous();
  if (lse !== saved.logsumexp) scratch.push(lse);
  const out = saved.out;

  const { ptrs, nums, bptrs, bnums } = packBackward(p, { out, logsumexp: lse }, dout, deterministic);
  let plan;
  try {
    plan = a.backwardPlan(nums, bnums);
  } catch (e) {
    for (const t of scratch) t.dispose();
    rethrow(e);
  }

  const dq = emptyOutput(OUTPUT_NAMES.dq, p.query.shape, { dtype: p.dtype, device });
  const dk = emptyOutput(OUTPUT_NAMES.dk, p.key.shape, { dtype: p.dtype, device });
  const dv = emptyOutput(OUTPUT_NAMES.dv, p.value.shape, { dtype: p.dtype, device });
  try {
    const totalQ = varlen ? p.query.shape[0]! : 0;
    const rows = varlen ? p.headsQ * totalQ : p.batch * p.headsQ * p.seqQ;
    const dsum = empty([Math.max(rows, 1)], { dtype: 'float32', device });
    scratch.push(dsum);
    // The dQ workspace: the default mode's, and the deterministic mode's where the dK/dV kernel adds dQ in
    // turns (plan.dqTurnRows > 0; otherwise that mode's dQ kernel needs none).
    if (!deterministic || plan.dqTurnRows > 0) {
      // Two dims, not one: rows * stride passes 2^31 - 1 (core's largest dim) at S 1M, H 16, D 128,
      // while the kernels index the workspace with 64-bit offsets.
      const dqAccum = empty([Math.max(rows, 1), plan.dqAccumStride], { dtype: 'float32', device });
      scratch.push(dqAccum);
      bptrs[BWD_PTR.dqAccum] = dqAccum.dataPointer();
    }
    if (plan.dqTurnRows > 0) {
      // One counter per (batch row, query head, block of dqTurnRows query rows); the addon zeroes them.
      const turns = p.batch * p.headsQ * Math.ceil(p.seqQ / plan.dqTurnRows);
      const dqTurns = empty([Math.max(turns, 1)], { dtype: 'int32', device });
      scratch.push(dqTurns);
      bptrs[BWD_PTR.dqTurns] = dqTurns.dataPointer();
    }
    [bnums[BWD_NUM.dqBatchStride], bnums[BWD_NUM.dqHeadStride], bnums[BWD_NUM.dqRowStride]] = strides3(dq, varlen);
    [bnums[BWD_NUM.dkBatchStride], bnums[BWD_NUM.dkHeadStride], bnums[BWD_NUM.dkRowStride]] = strides3(dk, varlen);
    [bnums[BWD_NUM.dvBatchStride], bnums[BWD_NUM.dvHeadStride], bnums[BWD_NUM.dvRowStride]] = strides3(dv, varlen);
    bnums[BWD_NUM.gradAligned16] = vectorFriendly([dout, dq, dk, dv], varlen, p.headDim) ? 1 : 0;
    nums[NUM.aligned16] = aligned16(p, [p.query, p.key, p.value, out], nums) ? 1 : 0;
    nums[NUM.numSplits] = 1;
    ptrs[PTR.q] = p.query.dataPointer();
    ptrs[PTR.k] = p.key.dataPointer();
    ptrs[PTR.v] = p.value.dataPointer();
    ptrs[PTR.out] = out.dataPointer();
    ptrs[PTR.lse] = lse.dataPointer();
    ptrs[PTR.stream] = currentStream(device.index);
    bptrs[BWD_PTR.dout] = dout.dataPointer();
    bptrs[BWD_PTR.dq] = dq.dataPointer();
    bptrs[BWD_PTR.dk] = dk.dataPointer();
    bptrs[BWD_PTR.dv] = dv.dataPointer();
    bptrs[BWD_PTR.dsum] = dsum.dataPointer();
    try {
      a.backward(ptrs, nums, bptrs, bnums);
    } catch (e) {
      rethrow(e);
    }
  } catch (e) {
    dq.dispose();
    dk.dispose();
    dv.dispose();
    throw e;
  } finally {
    // Stream-ordered frees: the memory is reused only by work queued after these kernels.
    for (const t of scratch) t.dispose();
  }
  return { dq, dk, dv };
}
