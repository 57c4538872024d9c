// What 'flash-cuda' supports, as PyTorch's can_use_flash_attention (sdp-selection.md §4.1) adapted to
// this kernel: no mask (causal, window, ALiBi, softcap instead), fp16/bf16 on sm80..sm121, D == Dv <= 256
// (any D: non-multiples of 8 are zero-padded in the kernel's loads), GQA/MQA, varlen, both causal
// alignments (so no noCausalNonSquare), dropout, sequsedK (keys used per batch row, read on the device),
// paged K/V (blockTable, read on the device, any block size; the plan gives it to the sm80-family kernels);
// backward (and its deterministic mode) wherever the backward tiles fit the GPU's shared memory
// (backwardSharedMemory, rules-backward.ts). sdpaKvCache calls (kv-cache.ts): append, rotary, paged or
// contiguous caches, cacheBatchIdx, leftpadK, graph capture; the limits are the forward's own (the
// rules above, on the query and the caches) plus a row's capacity in int32 (kvCacheCapacity). float8_e4m3 inputs
// (core's descale option; bf16 out): the Hopper fp8 forward only, within its limits (rules-fp8.ts).
import type { Tolerances } from '@attn/core';
import {
  batchAndHeads,
  denseRank4,
  dtypeIn,
  float32Scalars,
  headDimAtMost,
  headDimsEqual,
  lastDimContiguous,
  maxBatchAndHeads,
  noAttnMask,
  nonzeroSeqLens,
  rule,
  smRange,
  tensorsOn,
  type Rule,
} from '@attn/core';
import { addonLoad } from './native.js';
import { backwardSharedMemory } from './rules-backward.js';
import { fp8Aligned, fp8Kernel } from './rules-fp8.js';

/** Dense [B, H, S, D], or packed varlen [total, H, D] (core validated the varlen layout). */
export const denseRank4OrVarlen: Rule = rule('denseRank4OrVarlen', (p, ctx) =>
  p.varlen ? null : denseRank4.check(p, ctx),
);

/** The kernel reads slopes[b * stride0 + h]: the head dim of alibiSlopes must have stride 1. */
export const alibiHeadContiguous: Rule = rule('alibiHeadContiguous', (p) => {
  const s = p.alibiSlopes;
  if (!s || s.strides[s.rank - 1] === 1 || s.shape[s.rank - 1] === 1) return null;
  return `Requires alibiSlopes to be contiguous along heads (stride ${s.strides[s.rank - 1]}); call .contiguous() on it.`;
});

/** Varlen offsets are read on the device: they must live on the query's GPU, contiguous. */
export const varlenOffsetsOnDevice: Rule = rule('varlenOffsetsOnDevice', (p) => {
  if (!p.varlen) return null;
  const bad = [p.varlen.cuSeqlensQ, p.varlen.cuSeqlensK].some(
    (t) => t.device.type !== p.device.type || t.device.index !== p.device.index || !t.isContiguous(),
  );
  if (!bad) return null;
  return `Requires cuSeqlensQ and cuSeqlensK as contiguous int32 tensors on ${p.device.type}:${p.device.index}; move them with .to() and .contiguous().`;
});

/** B >= 1 and Hq >= 1: the addon's grid takes batch and heads in [1, 65535] (maxBatchAndHeads is the upper bound). */
export const nonzeroBatchAndHeads: Rule = rule('nonzeroBatchAndHeads', (p) => {
  if (p.batch > 0 && p.headsQ > 0) return null;
  return `Does not support an empty batch or no heads (got batch ${p.batch}, heads ${p.headsQ}); cuda-math handles them.`;
});

/** A kv cache's rows are addressed with int32 key positions: at most 2^31 - 1 per row (its capacity). */
export const kvCacheCapacity: Rule = rule('kvCacheCapacity', (p) => {
  const kv = p.kvCache;
  if (!kv || kv.capacity <= 2 ** 31 - 1) return null;
  return `Addresses a cache row with int32 key positions: at most ${2 ** 31 - 1} per row (got ${kv.capacity}); use shorter rows (or a blockTable) or cuda-math.`;
});

/** The loaded addon has the kv-cache append kernel (an addon built before it lacks kvAppend). */
export const kvAppendInAddon: Rule = rule('kvAppendInAddon', (p) => {
  if (!p.kvCache) return null;
  const load = addonLoad();
  if (!load.ok || typeof load.addon.kvAppend === 'function') return null; // availability() reports a missing addon
  return 'The flash-cuda addon predates sdpaKvCache (no kvAppend); rebuild it with `npx @attn/native build @attn/flash-cuda`.';
});

export const FLASH_RULES: readonly Rule[] = Object.freeze([
  tensorsOn('cuda'),
  denseRank4OrVarlen,
  noAttnMask,
  headDimsEqual,
  headDimAtMost(256),
  smRange(80, 121),
  dtypeIn(['float16', 'bfloat16']),
  batchAndHeads({ gqa: true, sameKvHeads: true, mqa: true }),
  nonzeroSeqLens,
  lastDimContiguous({ ignoreSingletonDim: true }),
  float32Scalars,
  maxBatchAndHeads(65535),
  nonzeroBatchAndHeads,
  alibiHeadContiguous,
  varlenOffsetsOnDevice,
  backwardSharedMemory,
  kvCacheCapacity,
  kvAppendInAddon,
  fp8Kernel,
  fp8Aligned,
]);

/**
 * The accuracy this backend claims (Backend.tolerances, read by the conformance suite): the rule's
 * absolute slack per unit of max(1, max |reference|): about one ulp at 1 of fp16 and bf16, the dtypes
 * its rules take, beyond twice the naive error (FlashAttention's tests).
 */
export const FLASH_TOLERANCES: Tolerances = { slack: { float16: 1e-3, bfloat16: 8e-3 } };
