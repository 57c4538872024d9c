// Pieces of call validation shared by the dense and varlen entry points, on the full path and on a
// cached signature's path alike.
import {
  addEntry,
  assembleParams,
  cacheable,
  type CacheEntry,
  type CallKind,
  type CallTensors,
  findEntry,
} from './call-cache.js';
import type { Device } from './device.js';
import type { DType, QkvDType } from './dtype.js';
import type { IndexValuePolicy } from './index-values.js';
import type { SdpaOptions, SdpaParams, VarlenOptions } from './params.js';
import type { Tensor } from './tensor.js';
import { checkDropout, type CommonOptions } from './validate-options.js';
import { checkDescale } from './validate-float8.js';
import { checkOutAliasing, checkOutLayout } from './validate-out.js';
import { checkTensorArg } from './validate-tensors.js';

/** Validated params plus what the entry points need beside them. */
export interface NormalizedCall {
  readonly params: SdpaParams;
  readonly backends: readonly string[] | null;
  readonly rng: CommonOptions['rng'];
  /** The cache entry of the call's signature (null: not cacheable), where selection keeps its path. */
  readonly cached?: CacheEntry | null;
}

/** A named tensor a call reads. */
export interface CallInput {
  readonly name: string;
  readonly tensor: Tensor | null | undefined;
}

/** Every tensor a call reads (not out, which it writes). */
export function callInputs(p: SdpaParams): CallInput[] {
  return [
    { name: 'query', tensor: p.query },
    { name: 'key', tensor: p.key },
    { name: 'value', tensor: p.value },
    { name: 'attnMask', tensor: p.mask?.tensor },
    { name: 'alibiSlopes', tensor: p.alibiSlopes },
    { name: 'cuSeqlensQ', tensor: p.varlen?.cuSeqlensQ },
    { name: 'cuSeqlensK', tensor: p.varlen?.cuSeqlensK },
    { name: 'sequsedK', tensor: p.sequsedK?.tensor },
    { name: 'blockTable', tensor: p.paged?.blockTable },
  ];
}

/** The out option checked against the output's layout, or null when absent. */
export function givenOut(
  value: unknown,
  shape: readonly number[],
  dtype: DType,
  device: Device,
  requiresGrad: boolean,
): Tensor | null {
  return value === undefined || value === null ? null : checkOutLayout(value, shape, dtype, device, requiresGrad);
}

function optional(v: unknown, name: string): Tensor | null {
  return v === undefined || v === null ? null : checkTensorArg(v, name);
}

/** The tensors of a call whose signature matched a cache entry, each checked live (the layouts already matched). */
export function liveTensors(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: Partial<VarlenOptions> & { attnMask?: unknown },
): CallTensors {
  return {
    query: q,
    key: k,
    value: v,
    mask: optional(opts.attnMask, 'attnMask'),
    alibiSlopes: optional(opts.alibiSlopes, 'alibiSlopes'),
    sequsedK: optional(opts.sequsedK, 'sequsedK'),
    out: optional(opts.out, 'out'),
    cuSeqlensQ: optional(opts.cuSeqlensQ, 'cuSeqlensQ'),
    cuSeqlensK: optional(opts.cuSeqlensK, 'cuSeqlensK'),
    blockTable: optional(opts.blockTable, 'blockTable'),
  };
}

/**
 * What the dense and varlen entry points share after their argument checks: a cached signature's params
 * with only the live checks redone, else `validate()`'s full result, cached where it may be. `lookup`
 * false skips the cache (calls whose validation reads index values on the host).
 */
export function cachedOrValidated(
  kind: CallKind,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: Partial<VarlenOptions> & Pick<SdpaOptions, 'attnMask' | 'descale'>,
  policy: IndexValuePolicy,
  lookup: boolean,
  validate: () => NormalizedCall,
): NormalizedCall {
  const raw = opts as Record<string, unknown>;
  const entry = lookup ? findEntry(kind, q, k, v, raw, policy.capturing) : null;
  if (entry) {
    const { dropout, rng } = checkDropout(opts);
    // The entry's layouts matched: q's dtype is one its validation accepted.
    const descale = checkDescale(opts.descale, q.dtype as QkvDType);
    const t = liveTensors(q, k, v, opts);
    const params = assembleParams(entry.skeleton, t, dropout, descale);
    if (t.out) checkOutAliasing(t.out, callInputs(params));
    return { params, backends: entry.backends, rng, cached: entry };
  }
  const call = validate();
  if (call.params.out) checkOutAliasing(call.params.out, callInputs(call.params));
  return cacheable(call.params) ? { ...call, cached: addEntry(kind, call.params, raw, call.backends) } : call;
}
