// The kv-cache entry points (FlashAttention's flash_attn_with_kvcache): append new keys to a cache,
// rotate, and attend over the cache, in one call that a backend runs as a whole (KvCacheParams).
import { GraphError } from './errors.js';
import type { KvCacheOptions, KvCacheParams, SdpaParams } from './params.js';
import type { SelectionReport } from './report.js';
import { runForward, runForwardAsync } from './sdpa.js';
import { resolveRestriction, selectBackend } from './select.js';
import type { Tensor } from './tensor.js';
import { normalizeKvCacheCall } from './validate-kv-cache.js';

export interface KvCacheResult {
  /** [B, Sq, Hq, Dv], the query's dtype and device (a view of the backend's [B, Hq, Sq, Dv] output). */
  readonly out: Tensor;
  /** float32 [B, Hq, Sq], natural log; -inf for rows that see no key. */
  readonly logsumexp: Tensor;
  /** The backend that ran. */
  readonly backend: string;
}

function result(fwd: { out: Tensor; logsumexp: Tensor; backend: string }): KvCacheResult {
  return Object.freeze({ out: fwd.out.transpose(1, 2), logsumexp: fwd.logsumexp, backend: fwd.backend });
}

/**
 * Attention of q [B, Sq, Hq, D] over a kv cache, after appending kNew / vNew to it in place (the
 * cache tensors are mutated) and rotating q and kNew when rotary tables are given. See
 * KvCacheOptions for the options and KvCacheParams for what a backend computes.
 */
export function sdpaKvCache(q: Tensor, kCache: Tensor, vCache: Tensor, opts?: KvCacheOptions): KvCacheResult {
  return result(runForward(normalizeKvCacheCall(q, kCache, vCache, opts)));
}

/** As sdpaKvCache, off the event loop where the backend can. Input errors reject the promise. */
export async function sdpaKvCacheAsync(
  q: Tensor,
  kCache: Tensor,
  vCache: Tensor,
  opts?: KvCacheOptions,
): Promise<KvCacheResult> {
  return result(await runForwardAsync(normalizeKvCacheCall(q, kCache, vCache, opts)));
}

/** The selection report of a sdpaKvCache call, without running (or appending) anything. */
export function explainKvCache(q: Tensor, kCache: Tensor, vCache: Tensor, opts?: KvCacheOptions): SelectionReport {
  const call = normalizeKvCacheCall(q, kCache, vCache, opts);
  return selectBackend(call.params, resolveRestriction(call.backends), true).report;
}

/** Validates a sdpaKvCache call and returns what backends receive. Throws AttnInputError. */
export function normalizeKvCacheParams(q: Tensor, kCache: Tensor, vCache: Tensor, opts?: KvCacheOptions): SdpaParams {
  return normalizeKvCacheCall(q, kCache, vCache, opts).params;
}

/** KvCacheParams' host copies, all present (an eager call's). */
export interface KvHostCopies {
  readonly seqlens: Int32Array;
  /** Contiguous caches: the cache row of each batch row; null for paged caches. */
  readonly cacheRows: Int32Array | null;
  readonly keyStart: Int32Array;
  readonly keyCount: Int32Array;
}

/**
 * The host copies validation made of a kv-cache call's index tensors. A call validated during graph
 * capture has none (params.capturing); backends that need them decline it by the indexValuesOnHost
 * rule, so reaching here then is a bug in that backend's rules (GraphError ATTN_GRAPH_CAPTURE_UNSUPPORTED).
 */
export function kvHostCopies(kv: KvCacheParams): KvHostCopies {
  const { seqlens, keyStart, keyCount } = kv;
  if (!seqlens || !keyStart || !keyCount) {
    throw new GraphError(
      'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
      'This backend needs the values of cacheSeqlens, cacheBatchIdx and leftpadK on the host, and the call was made during graph capture, where they are not read; its rules should include indexValuesOnHost.',
    );
  }
  return { seqlens, cacheRows: kv.cacheRows, keyStart, keyCount };
}
