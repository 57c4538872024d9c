// What 'memeff-cuda' accepts: PyTorch's can_use_mem_efficient_attention (sdp-selection.md §4.2) as
// this kernel supports it. It declines less than PyTorch: no head-dim alignment rule (head dims that
// are not multiples of 8, or misaligned storage, run on the FMA path instead of the tensor-core one),
// bf16 on every arch (converted in registers), GQA, causal in both alignments, sliding windows, ALiBi,
// softcap, varlen and empty sequences (the seeds' features: every path of the kernels takes them). It
// declines a scale that overflows float32 (float32Scalars): the kernels take it as a float.
import type { Tolerances } from '@attn/core';
import {
  noKvCache,
  noPagedKv,
  batchAndHeads,
  denseRank4,
  dtypeIn,
  float32Scalars,
  lastDimContiguous,
  rule,
  smRange,
  tensorsOn,
  type Rule,
} from '@attn/core';
import { addonState } from './native.js';

/** The kernels index rows with int32 and put 32 query rows per grid row (65535 of them). */
export const MAX_SEQ_Q = 65535 * 32;

/** D > 0 and Dv > 0: the kernels have no empty-head-dim path (cpu-math takes those calls). */
export const nonzeroHeadDims: Rule = rule('nonzeroHeadDims', (p) => {
  if (p.headDim > 0 && p.headDimV > 0) return null;
  return `Does not support an empty head dim (got query ${p.headDim}, value ${p.headDimV}); cpu-math handles it.`;
});

export const seqWithinGrid: Rule = rule(`seqQAtMost(${MAX_SEQ_Q})`, (p) => {
  if (p.seqQ <= MAX_SEQ_Q && p.seqK < 2 ** 31) return null;
  return `Supports at most ${MAX_SEQ_Q} queries per sequence (got ${p.seqQ}); split the queries into chunks.`;
});

/** The addon has machine code (or PTX) for the query's GPU: ATTN_CUDA_ARCHS at build time covered it. */
export const builtForDevice: Rule = rule('builtForDevice', (p) => {
  const load = addonState();
  if (!load.ok) return null; // availability() reports it
  try {
    const why = load.addon.deviceSupport(p.device.index);
    return why === '' ? null : why;
  } catch (e) {
    return `Cannot tell whether the addon has code for cuda:${p.device.index}: ${e instanceof Error ? e.message : String(e)}`;
  }
});

/**
 * Dense [B, H, S, D], or packed varlen [total, H, D]: core validated the varlen layout and put the offsets (and
 * ALiBi slopes) on the query's device, contiguous, where the kernels read them.
 */
export const denseRank4OrVarlen: Rule = rule('denseRank4OrVarlen', (p, ctx) =>
  p.varlen ? null : denseRank4.check(p, ctx),
);

/**
 * Softcap runs as softcap * tanh(dot * (scale / softcap)) in float32: both factors must be normal float32
 * numbers (a softcap that rounds to 0 would turn the feature off, a quotient that overflows would give NaN).
 */
export const softcapInFloat32: Rule = rule('softcapInFloat32', (p) => {
  if (p.softcap === 0) return null;
  const cap = Math.fround(p.softcap);
  const ratio = Math.fround(p.scale / p.softcap);
  if (cap >= 2 ** -126 && Number.isFinite(ratio) && (ratio === 0 || Math.abs(ratio) >= 2 ** -126)) return null;
  return `Takes softcap and scale / softcap as float32 numbers, where softcap ${p.softcap} with scale ${p.scale} falls outside its normal range; use a softcap nearer the scores' size, or cpu-math (float64).`;
});

/** Largest head dim (D or Dv) whose backward meets the accuracy rule. */
export const MAX_BACKWARD_HEAD_DIM = 256;

/**
 * Backward up to D, Dv = 256. Above it every backward runs on the FMA kernels, whose gradients an H200 run
 * of the conformance grid measured at 1.1-2.5x the accuracy bound at D = 512 (float32 dq/dk/dv; float16 and
 * bfloat16 dbias with dropout): such calls go to the device's fallback (cuda-math), the forward alone stays.
 */
export const backwardHeadDimWithinRule: Rule = rule(`backwardHeadDimAtMost(${MAX_BACKWARD_HEAD_DIM})`, (p) => {
  const d = Math.max(p.headDim, p.headDimV);
  if (!p.requiresGrad || d <= MAX_BACKWARD_HEAD_DIM) return null;
  return `Its backward is accurate up to head dim ${MAX_BACKWARD_HEAD_DIM} (got ${d}, requiresGrad); cuda-math runs this call, or leave out requiresGrad for the forward.`;
});

/**
 * Not with index values left unchecked on the device (graph capture, or indexValuesOnDevice): the
 * kernels read cuSeqlensQ/K and sequsedK on the device as validated, without clamping them into the
 * tensors, so values core did not check (a replay's, or an eager call's with the option) could read or
 * write outside q, k, v or out. flash-cuda clamps them and takes such calls.
 */
export const noUncheckedIndexValues: Rule = rule('noUncheckedIndexValues', (p) => {
  if (!p.indexValuesOnDevice || (!p.varlen && !p.sequsedK && !p.paged)) return null;
  if (p.capturing) {
    return 'Reads cuSeqlensQ/K and sequsedK on the device without clamping them, so a graph replayed with other values could address outside the tensors; capture this call with flash-cuda, or run it eagerly.';
  }
  return 'Reads cuSeqlensQ/K and sequsedK on the device without clamping them, and indexValuesOnDevice left them unchecked; run this call with flash-cuda, or leave indexValuesOnDevice unset.';
});

export const memeffRules: readonly Rule[] = Object.freeze([
  tensorsOn('cuda'),
  smRange(50, 121),
  builtForDevice,
  denseRank4OrVarlen,
  dtypeIn(['float32', 'float16', 'bfloat16']),
  nonzeroHeadDims,
  float32Scalars,
  seqWithinGrid,
  lastDimContiguous({ mask: true }),
  batchAndHeads({ gqa: true, sameKvHeads: true, mqa: true }),
  softcapInFloat32,
  backwardHeadDimWithinRule,
  noPagedKv,
  noKvCache,
  noUncheckedIndexValues,
]);

/**
 * The accuracy this backend claims (Backend.tolerances, read by the conformance suite): the rule's
 * absolute slack per unit of max(1, max |reference|): about one ulp at 1 of each dtype it takes; the
 * 3xTF32 forward is held to fp32's (its three-part products recover fp32's).
 */
export const MEMEFF_TOLERANCES: Tolerances = { slack: { float32: 1e-6, float16: 1e-3, bfloat16: 8e-3 } };
