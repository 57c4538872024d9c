// Building blocks shared by the rule library.
import type { Rule, RuleContext } from './backend.js';
import type { FloatDType } from './dtype.js';
import { AttnError, GraphError } from './errors.js';
import type { SdpaParams } from './params.js';
import type { Tensor } from './tensor.js';

/**
 * A named check: returns null when it passes, else a message that says what to change. `readsValues`:
 * its answer depends on more than the call's signature (storage addresses, tensor values), so cached
 * selections run it again on every call (Rule.readsValues).
 */
export function rule(
  name: string,
  check: (p: SdpaParams, ctx: RuleContext) => string | null,
  opts: { readsValues?: boolean } = {},
): Rule {
  return Object.freeze(opts.readsValues ? { name, check, readsValues: true } : { name, check });
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

/**
 * Query and key lengths of every sequence: one pair for dense calls, one per sequence for varlen.
 * Null when they live on the device only (params.indexValuesOnDevice: graph capture, or the option).
 */
export function sequencePairs(p: SdpaParams): Array<[number, number]> | null {
  if (p.kvCache)
    return p.kvCache.keyCount ? Array.from(p.kvCache.keyCount, (sk): [number, number] => [p.seqQ, sk]) : null;
  const used = p.sequsedK?.lengths ?? null;
  if (p.sequsedK && !used) return null;
  if (!p.varlen) return used ? Array.from(used, (sk): [number, number] => [p.seqQ, sk]) : [[p.seqQ, p.seqK]];
  const { seqlensQ, seqlensK } = p.varlen;
  if (!seqlensQ || !seqlensK) return null;
  const pairs: Array<[number, number]> = [];
  for (let b = 1; b < seqlensQ.length; b++) {
    pairs.push([seqlensQ[b]! - seqlensQ[b - 1]!, used ? used[b - 1]! : seqlensK[b]! - seqlensK[b - 1]!]);
  }
  return pairs;
}

/** Host copies of a call's index tensors, for backends that compute from them (CPU ones, cuda-math). */
export interface HostIndexCopies {
  /** Offsets [B + 1] of a varlen call; null for dense calls. */
  readonly seqlensQ: Int32Array | null;
  readonly seqlensK: Int32Array | null;
  /** Keys used per row [B]; null when the call has no sequsedK. */
  readonly sequsedK: Int32Array | null;
  /** Block table [B, maxBlocksPerSeq] row-major; null without paged K/V. */
  readonly blockTable: Int32Array | null;
}

/**
 * The host copies validation made. A call whose index values stayed on the device has none
 * (params.indexValuesOnDevice: graph capture, or the indexValuesOnDevice option); backends that need
 * them decline it by the indexValuesOnHost rule, so reaching here then is a bug in that backend's
 * rules, reported as GraphError ATTN_GRAPH_CAPTURE_UNSUPPORTED (capture) or AttnError ATTN_BACKEND_RULES.
 */
export function hostIndexCopies(p: SdpaParams): HostIndexCopies {
  const v = p.varlen;
  const missing =
    (v && (!v.seqlensQ || !v.seqlensK)) || (p.sequsedK && !p.sequsedK.lengths) || (p.paged && !p.paged.table);
  if (missing) {
    const why = 'This backend needs the values of cuSeqlensQ/K, sequsedK and blockTable on the host';
    if (p.capturing) {
      throw new GraphError(
        'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
        `${why}, and the call was made during graph capture, where they are not read; its rules should include indexValuesOnHost.`,
      );
    }
    throw new AttnError(
      'ATTN_BACKEND_RULES',
      `${why}, and the call left them on the device (indexValuesOnDevice); its rules should include indexValuesOnHost.`,
    );
  }
  return {
    seqlensQ: v ? v.seqlensQ : null,
    seqlensK: v ? v.seqlensK : null,
    sequsedK: p.sequsedK ? p.sequsedK.lengths : null,
    blockTable: p.paged ? p.paged.table : null,
  };
}
