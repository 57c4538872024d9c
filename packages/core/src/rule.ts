// Building blocks shared by the rule library.
import type { Rule, RuleContext } from './backend.js';
import type { FloatDType } from './dtype.js';
import type { SdpaParams } from './params.js';
import type { Tensor } from './tensor.js';

/** A named check: returns null when it passes, else a message that says what to change. */
export function rule(name: string, check: (p: SdpaParams, ctx: RuleContext) => string | null): Rule {
  return Object.freeze({ name, check });
}

/** A number, or a number that depends on the dtype (e.g. alignment 8 for half types, 4 for float32). */
export type PerDType = number | ((dtype: FloatDType) => number);

export function perDType(v: PerDType, dtype: FloatDType): number {
  return typeof v === 'function' ? v(dtype) : v;
}

/** A readable label of a PerDType for rule names. */
export function perDTypeLabel(v: PerDType): string {
  return typeof v === 'function' ? 'byDtype' : String(v);
}

/** Compute capability as one number (sm_86 -> 86) on CUDA devices, else null. */
export function smOf(ctx: RuleContext): number | null {
  const d = ctx.device;
  if (!d || d.type !== 'cuda') return null;
  return d.major * 10 + d.minor;
}

export function smLabel(ctx: RuleContext): string {
  const d = ctx.device;
  if (!d) return `a device whose properties are unknown (${ctx.deviceUnknownReason ?? 'no runtime reported them'})`;
  return d.type === 'cuda' ? `a sm ${d.major}.${d.minor} gpu` : `${d.type} (${d.arch})`;
}

/**
 * Head counts as the tensors give them (dense dim 1 of [B,H,S,D], varlen dim 1 of [T,H,D], paged
 * K/V dim 2 of [N,blockSize,H,D], kv caches dim 2 of [Bc,Sc,H,D]).
 */
export function headCounts(p: SdpaParams): { hq: number; hk: number; hv: number } {
  const kvDim = p.paged || p.kvCache ? 2 : 1;
  return { hq: p.query.shape[1]!, hk: p.key.shape[kvDim]!, hv: p.value.shape[kvDim]! };
}

export function lastStride(t: Tensor): number {
  return t.rank === 0 ? 1 : t.strides[t.rank - 1]!;
}

/** Query and key lengths of every sequence: one pair for dense calls, one per sequence for varlen. */
export function sequencePairs(p: SdpaParams): Array<[number, number]> {
  if (p.kvCache) return Array.from(p.kvCache.keyCount, (sk): [number, number] => [p.seqQ, sk]);
  const used = p.sequsedK?.lengths ?? null;
  if (!p.varlen) return used ? Array.from(used, (sk): [number, number] => [p.seqQ, sk]) : [[p.seqQ, p.seqK]];
  const { seqlensQ, seqlensK } = p.varlen;
  const pairs: Array<[number, number]> = [];
  for (let b = 1; b < seqlensQ.length; b++) {
    pairs.push([seqlensQ[b]! - seqlensQ[b - 1]!, used ? used[b - 1]! : seqlensK[b]! - seqlensK[b - 1]!]);
  }
  return pairs;
}
