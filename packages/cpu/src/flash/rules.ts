// What cpu-flash runs, as core's rules: CPU tensors in float32, float16 or bfloat16, non-empty
// sequences and value head dims, sizes the native kernel indexes with int32 counters (limits.ts), and
// scale and softcap finite in float32. Everything else core accepts (strides, masks, causal both
// ways, window, GQA, ALiBi, softcap, dropout, varlen, sequsedK, paged K/V, backward, deterministic) it runs.
import {
  dtypeIn,
  float32Scalars,
  headDimAtMost,
  kernelWindow,
  maxBatchAndHeads,
  nonzeroHeadDimV,
  nonzeroSeqLens,
  rule,
  tensorsOn,
} from '@attn/core';
import type { Rule, Tolerances } from '@attn/core';
import { CPU_FLASH_LIMITS } from './limits.js';

/** Largest B, H and S the kernel takes. */
export const MAX_DIM = CPU_FLASH_LIMITS.maxDim;
/** Largest head dim. */
export const MAX_HEAD_DIM = CPU_FLASH_LIMITS.maxHeadDim;

/** Sq and Sk fit the kernel's 32-bit row counters. (Not in core's library: cpu-flash's own limit.) */
export const seqLensAtMost = (n: number): Rule =>
  rule(`seqLensAtMost(${n})`, (p) => {
    if (p.seqQ <= n && p.seqK <= n) return null;
    return `Supports sequences of at most ${n} tokens. Got seq_len_q ${p.seqQ}, seq_len_kv ${p.seqK}. Split the keys and merge with logsumexp, or choose another backend.`;
  });

/** Window sides, once those that reach every key are unbounded, fit the kernel's counters. */
export const windowAtMost = (n: number): Rule =>
  rule(`windowAtMost(${n})`, (p) => {
    const w = kernelWindow(p);
    if (w.left <= n && w.right <= n) return null;
    return `Supports window sides of at most ${n} keys. Got [${w.left}, ${w.right}]; use -1 for an unbounded side, or choose another backend.`;
  });

export const cpuFlashRules: readonly Rule[] = [
  tensorsOn('cpu'),
  dtypeIn(['float32', 'bfloat16', 'float16']),
  nonzeroSeqLens,
  nonzeroHeadDimV,
  headDimAtMost(MAX_HEAD_DIM),
  maxBatchAndHeads(MAX_DIM),
  seqLensAtMost(MAX_DIM),
  windowAtMost(CPU_FLASH_LIMITS.maxWindow),
  float32Scalars,
];

/**
 * The accuracy this backend claims (Backend.tolerances, read by the conformance suite): the rule's
 * absolute slack per unit of max(1, max |reference|): about one ulp at 1 of each dtype it takes (fp32
 * accumulation at every ISA level).
 */
export const CPU_FLASH_TOLERANCES: Tolerances = { slack: { float32: 1e-6, float16: 1e-3, bfloat16: 8e-3 } };
