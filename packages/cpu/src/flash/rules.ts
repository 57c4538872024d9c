// What cpu-flash runs, as core's rules: CPU tensors in float32, float16 or bfloat16, non-empty
// sequences, and sizes the native kernel indexes with int32 counters. Everything else core
// accepts (strides, masks, causal both ways, window, GQA, ALiBi, softcap, dropout, varlen,
// backward, deterministic) it runs.
import { dtypeIn, headDimAtMost, maxBatchAndHeads, nonzeroSeqLens, rule, tensorsOn } from '@attn/core';
import type { Rule } from '@attn/core';

/** Largest B, H and S the kernel takes: its dropout counters and row indices are 32-bit. */
export const MAX_DIM = 2 ** 31 - 1;
/** Largest head dim: per-thread tiles hold 64 rows of it. */
export const MAX_HEAD_DIM = 2 ** 16;

/** Sq and Sk fit the kernel's 32-bit row counters. (Not in core's library: cpu-flash's own limit.) */
export const seqLensAtMost = (n: number): Rule =>
  rule(`seqLensAtMost(${n})`, (p) => {
    if (p.seqQ <= n && p.seqK <= n) return null;
    return `Supports sequences of at most ${n} tokens. Got seq_len_q ${p.seqQ}, seq_len_kv ${p.seqK}. Split the keys and merge with logsumexp, or choose another backend.`;
  });

export const cpuFlashRules: readonly Rule[] = [
  tensorsOn('cpu'),
  dtypeIn(['float32', 'bfloat16', 'float16']),
  nonzeroSeqLens,
  headDimAtMost(MAX_HEAD_DIM),
  maxBatchAndHeads(MAX_DIM),
  seqLensAtMost(MAX_DIM),
];
