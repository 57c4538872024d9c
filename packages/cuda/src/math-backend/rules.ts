// What 'cuda-math' runs: every call cpu-math runs, on a CUDA device whose arch the addon was built
// for, up to the kernels' head dim and sequence limits (limits.ts). Any strides (the last dim too),
// every dtype, masks of any layout, causal both ways, window, ALiBi, softcap, dropout, GQA/MQA,
// varlen, sequsedK, paged K/V (blockTable, forward only: core allows it only without grad), zero
// lengths, Dv = 0, backward and deterministic mode are all taken. Not during graph capture: its
// kernels take the index values from the host (indexValuesOnHost). sdpaKvCache calls: every option
// (append, rotary, contiguous caches through cacheBatchIdx, paged caches, leftpadK), through the shared
// append kernel (attn/kv_append.cuh) and the paged forward.
import { indexValuesOnHost, rule, tensorsOn, type Rule, type Tolerances } from '@attn/core';
import { mathLoad } from './binding.js';
import { CUDA_MATH_LIMITS } from './limits.js';

const { maxHeadDim, maxSeq } = CUDA_MATH_LIMITS;

/** D and Dv at most maxHeadDim. */
export const mathHeadDims: Rule = rule(`headDimAtMost(${maxHeadDim})`, (p) => {
  if (p.headDim <= maxHeadDim && p.headDimV <= maxHeadDim) return null;
  return (
    `Supports head dims up to ${maxHeadDim} (got query/key ${p.headDim}, value ${p.headDimV}); run the call on the CPU (cpu-math), ` +
    `or, where only the value's head dim is larger, split value into chunks of at most ${maxHeadDim} columns (each gives those columns of the output).`
  );
});

/** Sq and Sk (varlen: their maxima) at most maxSeq. */
export const mathSeqLens: Rule = rule(`seqLensAtMost(${maxSeq})`, (p) => {
  if (p.seqQ <= maxSeq && p.seqK <= maxSeq) return null;
  return `Supports sequences of at most ${maxSeq} (2^31 - 1) queries and keys (got ${p.seqQ} and ${p.seqK}); split the call into chunks.`;
});

const deviceSupport = new Map<number, string>();

/** The addon has machine code (or PTX) for the query's GPU: ATTN_CUDA_ARCHS at build time covered it. */
export const builtForDevice: Rule = rule('builtForDevice', (p) => {
  const load = mathLoad();
  if (!load.ok) return null; // availability() reports it
  let why = deviceSupport.get(p.device.index);
  if (why === undefined) {
    try {
      why = load.addon.mathDeviceSupport(p.device.index);
    } catch (e) {
      return `Cannot tell whether the addon has code for cuda:${p.device.index}: ${e instanceof Error ? e.message : String(e)}`;
    }
    deviceSupport.set(p.device.index, why);
  }
  return why === '' ? null : why;
});

export const cudaMathRules: readonly Rule[] = Object.freeze([
  tensorsOn('cuda'),
  builtForDevice,
  mathHeadDims,
  mathSeqLens,
  indexValuesOnHost,
]);

/**
 * The accuracy this backend claims (Backend.tolerances, read by the conformance suite): the rule's
 * absolute slack per unit of max(1, max |reference|): about one ulp at 1 of each dtype (float64
 * computed in float64).
 */
export const CUDA_MATH_TOLERANCES: Tolerances = {
  slack: { float64: 1e-12, float32: 1e-6, float16: 1e-3, bfloat16: 8e-3 },
};
