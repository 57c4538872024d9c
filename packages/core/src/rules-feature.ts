// Rules about optional features: masks, dropout, causal alignment, window, ALiBi, softcap, varlen,
// backward and determinism (check_for_attn_mask, check_for_dropout, check_flash_causal_non_square_seqlens,
// check_cudnn_dropout, check_cudnn_deterministic, and the FlashAttention extras).
import type { Rule } from './backend.js';
import type { DType } from './dtype.js';
import type { Alignment } from './params.js';
import { rule, sequencePairs } from './rule.js';

/** No attnMask at all (check_for_attn_mask). */
export const noAttnMask: Rule = rule('noAttnMask', (p) => {
  if (!p.mask) return null;
  return 'Does not support a non-null attnMask; use isCausal or window for structured masks, or choose a backend that takes masks.';
});

/** No boolean keep-mask (the backend takes additive biases only). */
export const noBoolMask: Rule = rule('noBoolMask', (p) => {
  if (p.mask?.kind !== 'bool') return null;
  return "Does not support boolean masks; pass an additive float mask (0 = attend, -Infinity = masked) in the query's dtype.";
});

/** No additive float mask (the backend takes keep-masks only). */
export const noAdditiveMask: Rule = rule('noAdditiveMask', (p) => {
  if (p.mask?.kind !== 'additive') return null;
  return 'Does not support additive float masks; pass a boolean keep-mask or choose a backend that takes biases.';
});

/** Mask dtype in the list; 'query' stands for the query's own dtype (ROCm mem-eff: bool or q dtype). */
export function maskDtypeIn(dtypes: readonly (DType | 'query')[]): Rule {
  return rule(`maskDtypeIn(${dtypes.join(', ')})`, (p) => {
    const m = p.mask?.tensor;
    if (!m) return null;
    if (dtypes.includes(m.dtype) || (dtypes.includes('query') && m.dtype === p.dtype)) return null;
    return `Requires attnMask to be of dtype {${dtypes.join(', ')}} (query is ${p.dtype}); got ${m.dtype}. Convert it with .toDType().`;
  });
}

/** isCausal together with attnMask (a backend that applies one or the other). */
export const noCausalWithMask: Rule = rule('noCausalWithMask', (p) => {
  if (!(p.causal && p.mask)) return null;
  return 'Does not support attnMask together with isCausal; fold the causal mask into attnMask, or choose a backend that combines them.';
});

/** dropoutP == 0 (check_for_dropout). */
export const noDropout: Rule = rule('noDropout', (p) => {
  if (!p.dropout) return null;
  return `Does not support non-zero dropout (got dropoutP ${p.dropout.p}); set dropoutP: 0 or choose a backend with dropout.`;
});

/** dropoutP a multiple of 1/n (check_cudnn_dropout: cuDNN's resolution is 1/16). */
export function dropoutResolution(n: number): Rule {
  return rule(`dropoutResolution(1/${n})`, (p) => {
    if (!p.dropout || Number.isInteger(p.dropout.p * n)) return null;
    return `Dropout probability resolution is limited to 1/${n}; got ${p.dropout.p}. Use a multiple of 1/${n}.`;
  });
}

/** isCausal only with Sq == Sk (check_flash_causal_non_square_seqlens), per sequence for varlen. */
export const noCausalNonSquare: Rule = rule('noCausalNonSquare', (p) => {
  if (!p.causal) return null;
  const pairs = sequencePairs(p);
  if (!pairs) {
    return 'Does not support isCausal with lengths left on the device (graph capture or indexValuesOnDevice: they may differ per call); choose a backend that supports non-square causal.';
  }
  const bad = pairs.find(([sq, sk]) => sq !== sk);
  if (!bad) return null;
  return `Does not support isCausal when seqlen_q != seqlen_k. Got seqlen_q: ${bad[0]}, seqlen_k: ${bad[1]}. Pass an explicit mask, or choose a backend with non-square causal.`;
});

/**
 * The alignment of causal, window and ALiBi distances is one the backend implements. It only
 * matters when some sequence has Sq != Sk (both alignments coincide on square ones).
 */
export function alignmentIn(alignments: readonly Alignment[]): Rule {
  return rule(`alignmentIn(${alignments.join(', ')})`, (p) => {
    if (alignments.includes(p.alignment)) return null;
    if (!(p.causal || p.window || p.alibiSlopes)) return null;
    if (sequencePairs(p)?.every(([sq, sk]) => sq === sk)) return null;
    return `Supports alignment ${alignments.map((a) => `'${a}'`).join(' or ')} when seqlen_q != seqlen_k; got '${p.alignment}' with seqlen_q ${p.seqQ}, seqlen_k ${p.seqK}.`;
  });
}

export const noWindow: Rule = rule('noWindow', (p) => {
  if (!p.window) return null;
  return `Does not support sliding-window attention (window [${p.window.left ?? -1}, ${p.window.right ?? -1}]); drop the window or choose a backend with windows.`;
});

export const noAlibi: Rule = rule('noAlibi', (p) => {
  if (!p.alibiSlopes) return null;
  return 'Does not support ALiBi slopes; drop alibiSlopes (or pass the bias as an additive attnMask) or choose a backend with ALiBi.';
});

export const noSoftcap: Rule = rule('noSoftcap', (p) => {
  if (p.softcap === 0) return null;
  return `Does not support softcap (got ${p.softcap}); set softcap: 0 or choose a backend with softcapping.`;
});

/**
 * scale and softcap stay finite once rounded to float32, the precision native kernels take them in:
 * scale 1e39 is a valid double but +Inf in float32, where a kernel would compute NaN or refuse the
 * call; declining lets selection fall back to a float64 backend.
 */
export const float32Scalars: Rule = rule('float32Scalars', (p) => {
  const bad = [
    ['scale', p.scale],
    ['softcap', p.softcap],
  ].filter(([, v]) => !Number.isFinite(Math.fround(v as number)));
  if (bad.length === 0) return null;
  return `Takes scale and softcap in float32, where ${bad.map(([n, v]) => `${n} ${String(v)}`).join(' and ')} overflows to infinity; use a magnitude below 3.4e38 or cpu-math (float64).`;
});

export const noVarlen: Rule = rule('noVarlen', (p) => {
  if (!p.varlen) return null;
  return 'Does not support packed variable-length inputs (cuSeqlens); pad to [B, H, S, D] and use sdpa() with a mask.';
});

/** No sequsedK (keys used per batch row): the kernel reads every key of a row. */
export const noSequsedK: Rule = rule('noSequsedK', (p) => {
  if (!p.sequsedK) return null;
  return 'Does not support sequsedK (keys used per batch row); slice key and value to the used keys, or choose a backend that takes sequsedK.';
});

export const noPagedKv: Rule = rule('noPagedKv', (p) => {
  if (!p.paged) return null;
  return 'Does not support paged K/V (blockTable); gather the blocks into packed key and value, or choose a backend that takes blockTable.';
});

/**
 * No sdpaKvCache calls: the backend does not append to caches, rotate, or read a cache through
 * cacheBatchIdx / leftpadK (KvCacheParams says what taking them means).
 */
export const noKvCache: Rule = rule('noKvCache', (p) => {
  if (!p.kvCache) return null;
  return 'Does not support sdpaKvCache (cache append, rotary, cacheBatchIdx, leftpadK); choose a backend that takes it, or append and gather the cache yourself and call sdpaVarlen.';
});

/**
 * No out option: the backend allocates its own output and cannot write into the user's (its kernels'
 * output layout is its own). Declining lets selection pick a backend that writes into out.
 */
export const noOutTensor: Rule = rule('noOutTensor', (p) => {
  if (!p.out) return null;
  return 'Cannot write into a given out tensor; leave out unset, or choose a backend that takes it (cpu-math, cpu-flash, cuda-math, flash-cuda, memeff-cuda).';
});

/** No backward pass: declines calls made with requiresGrad. */
export const noBackward: Rule = rule('noBackward', (p) => {
  if (!p.requiresGrad) return null;
  return 'Does not implement backward; set requiresGrad: false (inference) or choose a backend with backward.';
});

/** No deterministic mode (check_cudnn_deterministic). */
export const noDeterministic: Rule = rule('noDeterministic', (p) => {
  if (!p.deterministic) return null;
  return 'Is not deterministic; set deterministic: false or choose a backend with a deterministic backward.';
});

/**
 * The values of device-resident index tensors (cuSeqlensQ/K, sequsedK, blockTable, and a kv cache's
 * cacheSeqlens, cacheBatchIdx, leftpadK) were read on the host: a backend that plans or uploads from
 * those host copies needs them, and a call whose values stayed on the device
 * (params.indexValuesOnDevice: graph capture, or the option) has none.
 */
export const indexValuesOnHost: Rule = rule('indexValuesOnHost', (p) => {
  if (!p.indexValuesOnDevice || (!p.varlen && !p.sequsedK && !p.paged && !p.kvCache)) return null;
  const what =
    "the values of cuSeqlensQ/K, sequsedK, blockTable (and a kv cache's cacheSeqlens, cacheBatchIdx, leftpadK)";
  if (p.capturing) {
    return `Needs ${what} on the host, which cannot be read during graph capture; capture with a backend that reads them on the device (flash-cuda), or run this call eagerly.`;
  }
  return `Needs ${what} on the host, and the call left them on the device (indexValuesOnDevice: true); choose a backend that reads them on the device (flash-cuda), or leave indexValuesOnDevice unset.`;
});
