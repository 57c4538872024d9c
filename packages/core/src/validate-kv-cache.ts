// normalizeKvCacheCall: validation of sdpaKvCache (FlashAttention's flash_attn_with_kvcache):
// q [B, Sq, Hq, D]; caches [Bc, Sc, Hk, D | Dv] or block pools with a blockTable; optional append of
// kNew / vNew at cacheSeqlens, rotary tables, cacheBatchIdx and leftpadK. Everything a backend needs
// is checked and resolved here (KvCacheParams), so that no backend re-derives positions or reads a
// position the cache does not have. While the device captures a graph (deviceCapturing) the index
// tensors are checked for shape, dtype and device only, as sdpaVarlen's are: no synchronizing read, no
// host copies (params.capturing), and the kernels clamp what they read on every replay.
import type { Device } from './device.js';
import { deviceCapturing } from './device-registry.js';
import { describeValue } from './describe-value.js';
import { AttnInputError } from './errors.js';
import type { KvCacheOptions, KvCacheParams, KvCacheRotary, PagedKvParams, SdpaParams } from './params.js';
import type { Tensor } from './tensor.js';
import { checkBlockTable, pagedPoolShape } from './validate-block-table.js';
import {
  checkAlibi,
  checkCommonOptions,
  checkCounterRange,
  checkOptionsObject,
  resolveScale,
} from './validate-options.js';
import { refuseFloat8 } from './validate-float8.js';
import { checkQkv, checkSameDevice, checkTensorArg, shapeStr } from './validate-tensors.js';
import type { NormalizedCall } from './validate-call.js';

const KV_CACHE_OPTION_KEYS: ReadonlySet<string> = new Set<keyof KvCacheOptions | 'requiresGrad'>([
  'cacheSeqlens',
  'kNew',
  'vNew',
  'rotaryCos',
  'rotarySin',
  'rotaryInterleaved',
  'cacheBatchIdx',
  'leftpadK',
  'blockTable',
  'isCausal',
  'scale',
  'enableGqa',
  'window',
  'alibiSlopes',
  'softcap',
  'backends',
  'kernel',
  // Accepted only as false, so that the inference-only rule is said in its own words.
  'requiresGrad',
]);

export function kvCacheError(message: string): AttnInputError {
  return new AttnInputError('ATTN_KV_CACHE', message);
}

const given = (v: unknown): boolean => v !== undefined && v !== null;

/** int32 [batch], contiguous, on the device; returns a host copy (null while capturing: the values are not read). */
function int32PerRow(
  value: unknown,
  name: string,
  batch: number,
  device: Device,
  capturing: boolean,
): { tensor: Tensor; host: Int32Array | null } {
  const t = checkTensorArg(value, name);
  if (t.dtype !== 'int32' || t.rank !== 1 || t.shape[0] !== batch) {
    throw kvCacheError(
      `${name} must be an int32 tensor of shape [${batch}] (one entry per batch row); got ${t.dtype} ${shapeStr(t)}.`,
    );
  }
  if (!t.isContiguous())
    throw kvCacheError(`${name} must be contiguous (kernels read it as a plain array); call .contiguous().`);
  checkSameDevice(t, name, device);
  return { tensor: t, host: capturing ? null : Int32Array.from(t.toFloat64Array()) };
}

/** Heads and head dims of q [B, Sq, Hq, D] and the caches [N, S, Hk, D | Dv]. */
function checkHeads(q: Tensor, k: Tensor, v: Tensor, enableGqa: boolean): void {
  const [, , hq, dq] = q.shape as [number, number, number, number];
  const [nk, sk, hk, dk] = k.shape as [number, number, number, number];
  const [nv, sv, hv] = v.shape as [number, number, number, number];
  if (hk !== hv)
    throw new AttnInputError(
      'ATTN_HEADS',
      `kCache and vCache must have the same number of heads (dim 2); got ${hk} and ${hv}.`,
    );
  if (hq !== hk && !enableGqa) {
    throw new AttnInputError(
      'ATTN_GQA',
      `q has ${hq} heads but the caches have ${hk}: pass enableGqa: true for grouped-query attention.`,
    );
  }
  if (hk === 0 || hq % hk !== 0) {
    throw new AttnInputError(
      'ATTN_HEADS',
      `The number of cache heads (${hk}) must divide the number of query heads (${hq}).`,
    );
  }
  if (dq !== dk)
    throw new AttnInputError(
      'ATTN_HEAD_DIM',
      `q and kCache must have the same head dim (last dim); got ${dq} and ${dk}.`,
    );
  if (dq === 0) throw new AttnInputError('ATTN_HEAD_DIM', 'The head dim must be at least 1; got 0.');
  if (nk !== nv || sk !== sv) {
    throw kvCacheError(`kCache and vCache must have the same first two dims; got ${shapeStr(k)} and ${shapeStr(v)}.`);
  }
}

/** kNew / vNew: both or neither, [B, Snew, Hk, D] and [B, Snew, Hk, Dv] in q's dtype and device. */
function checkNew(
  opts: Partial<KvCacheOptions>,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  device: Device,
): { kNew: Tensor | null; vNew: Tensor | null; newLen: number } {
  if (given(opts.kNew) !== given(opts.vNew))
    throw kvCacheError('Pass kNew and vNew together (the keys and values to append), or neither.');
  if (!given(opts.kNew)) return { kNew: null, vNew: null, newLen: 0 };
  const kn = checkTensorArg(opts.kNew, 'kNew');
  const vn = checkTensorArg(opts.vNew, 'vNew');
  const [B] = q.shape as [number];
  const hk = k.shape[2]!;
  const newLen = kn.shape[1] ?? -1;
  const want = (t: Tensor, d: number) =>
    t.rank === 4 && t.shape[0] === B && t.shape[1] === newLen && t.shape[2] === hk && t.shape[3] === d;
  if (!want(kn, k.shape[3]!) || !want(vn, v.shape[3]!)) {
    throw kvCacheError(
      `kNew and vNew must be [B, Snew, Hk, D] = [${B}, Snew, ${hk}, ${k.shape[3]}] and [${B}, Snew, ${hk}, ${v.shape[3]}]; got ${shapeStr(kn)} and ${shapeStr(vn)}.`,
    );
  }
  for (const [t, name] of [
    [kn, 'kNew'],
    [vn, 'vNew'],
  ] as const) {
    if (t.dtype !== q.dtype)
      throw new AttnInputError(
        'ATTN_DTYPE_MISMATCH',
        `${name} must have the query's dtype ${q.dtype}; got ${t.dtype}.`,
      );
    checkSameDevice(t, name, device);
  }
  // Appending writes each position of the cache once: a broadcast (stride 0) cache has none of its own.
  for (const [t, name] of [
    [k, 'kCache'],
    [v, 'vCache'],
  ] as const) {
    if (t.shape.some((n, d) => n > 1 && t.strides[d] === 0)) {
      throw kvCacheError(
        `${name} is a broadcast view (a zero stride): kNew/vNew cannot be written into it; pass a cache with storage of its own.`,
      );
    }
  }
  return { kNew: kn, vNew: vn, newLen };
}

function checkRotary(
  opts: Partial<KvCacheOptions>,
  q: Tensor,
  device: Device,
  needRows: number | null,
  qPerRow: boolean,
): KvCacheRotary | null {
  if (given(opts.rotaryCos) !== given(opts.rotarySin))
    throw kvCacheError('Pass rotaryCos and rotarySin together, or neither.');
  const interleaved = opts.rotaryInterleaved ?? false;
  if (typeof interleaved !== 'boolean')
    throw new AttnInputError(
      'ATTN_OPTION',
      `rotaryInterleaved must be true or false, got ${describeValue(interleaved)}.`,
    );
  if (!given(opts.rotaryCos)) return null;
  const cos = checkTensorArg(opts.rotaryCos, 'rotaryCos');
  const sin = checkTensorArg(opts.rotarySin, 'rotarySin');
  const D = q.shape[3]!;
  const ok = (t: Tensor) =>
    t.rank === 2 && t.shape[0] === cos.shape[0] && t.shape[1] === cos.shape[1] && t.shape[1]! >= 1;
  if (!ok(cos) || !ok(sin) || 2 * cos.shape[1]! > D) {
    throw kvCacheError(
      `rotaryCos and rotarySin must both be [R, rotaryDim / 2] with 2 <= rotaryDim <= the head dim ${D}; got ${shapeStr(cos)} and ${shapeStr(sin)}.`,
    );
  }
  for (const [t, name] of [
    [cos, 'rotaryCos'],
    [sin, 'rotarySin'],
  ] as const) {
    if (t.dtype !== q.dtype)
      throw new AttnInputError(
        'ATTN_DTYPE_MISMATCH',
        `${name} must have the query's dtype ${q.dtype}; got ${t.dtype}.`,
      );
    checkSameDevice(t, name, device);
  }
  if (needRows !== null && cos.shape[0]! < needRows) {
    throw kvCacheError(
      `The rotary tables have ${cos.shape[0]} positions but this call rotates at positions up to ${needRows - 1} (cacheSeqlens + Snew - 1 for kNew, ` +
        `cacheSeqlens${qPerRow ? ' + Sq - 1' : ''} for q); pass tables of at least ${needRows} rows.`,
    );
  }
  return Object.freeze({ cos, sin, dim: 2 * cos.shape[1]!, interleaved, qPerRow });
}

export function normalizeKvCacheCall(
  query: unknown,
  kCache: unknown,
  vCache: unknown,
  options: KvCacheOptions | undefined,
): NormalizedCall {
  const opts = checkOptionsObject<KvCacheOptions & { requiresGrad?: boolean }>(
    options,
    KV_CACHE_OPTION_KEYS,
    'sdpaKvCache',
  );
  if (opts.requiresGrad !== undefined && opts.requiresGrad !== false) {
    throw kvCacheError(
      'sdpaKvCache is for inference: requiresGrad must be false (or absent). For training, call sdpa or sdpaVarlen.',
    );
  }
  const q = checkTensorArg(query, 'q');
  const k = checkTensorArg(kCache, 'kCache');
  const v = checkTensorArg(vCache, 'vCache');
  const { inputs, dtype, device } = checkQkv(q, k, v);
  refuseFloat8(inputs, 'sdpaKvCache');
  if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4) {
    throw new AttnInputError(
      'ATTN_RANK',
      `sdpaKvCache takes q [B, Sq, Hq, D] and caches [Bc, Sc, Hk, D] (or block pools [numBlocks, blockSize, Hk, D]); got q ${shapeStr(q)}, kCache ${shapeStr(k)}, vCache ${shapeStr(v)}.`,
    );
  }
  const common = checkCommonOptions({
    isCausal: opts.isCausal,
    scale: opts.scale,
    enableGqa: opts.enableGqa,
    window: opts.window,
    alibiSlopes: opts.alibiSlopes,
    softcap: opts.softcap,
    backends: opts.backends,
    kernel: opts.kernel,
    alignment: 'lowerRight',
  });
  checkHeads(q, k, v, common.enableGqa);
  const [batch, seqQ, headsQ, headDim] = q.shape as [number, number, number, number];
  const headsKV = k.shape[2]!;
  const headDimV = v.shape[3]!;
  checkCounterRange(batch, headsQ);
  if (batch * headsQ * seqQ * headDimV > Number.MAX_SAFE_INTEGER)
    throw new AttnInputError('ATTN_SIZE', 'This call is too large to index; split the batch.');

  const paged = given(opts.blockTable);
  const pool = paged ? pagedPoolShape(k, v) : null;
  let capacity = k.shape[1]!;
  if (paged) {
    const t = checkTensorArg(opts.blockTable, 'blockTable');
    if (t.rank !== 2)
      throw new AttnInputError(
        'ATTN_BLOCK_TABLE',
        `blockTable must be int32 [${batch}, maxBlocksPerSeq]; got ${t.dtype} ${shapeStr(t)}.`,
      );
    capacity = t.shape[1]! * pool!.blockSize;
  }

  // While capturing, the values of cacheSeqlens, cacheBatchIdx, leftpadK and blockTable are not read:
  // each host check below is skipped, and the append / attention kernels clamp every value they read
  // (positions past a row's capacity are not written, table entries and cache rows stay in the pools).
  const capturing = deviceCapturing(device);
  const seqlensArg = given(opts.cacheSeqlens)
    ? int32PerRow(opts.cacheSeqlens, 'cacheSeqlens', batch, device, capturing)
    : null;
  const seqlens = capturing ? null : (seqlensArg?.host ?? new Int32Array(batch).fill(capacity));
  seqlens?.forEach((n, b) => {
    if (n < 0 || n > capacity)
      throw kvCacheError(`cacheSeqlens[${b}] = ${n} is outside [0, ${capacity}], the key positions a cache row holds.`);
  });
  const { kNew, vNew, newLen } = checkNew(opts, q, k, v, device);
  if (!seqlensArg && newLen > 0) {
    throw kvCacheError(
      `Appending ${newLen} keys needs cacheSeqlens (without it every row is full, ${capacity} keys); pass the keys each row holds.`,
    );
  }
  seqlens?.forEach((n, b) => {
    if (n + newLen > capacity) {
      throw kvCacheError(
        `Appending ${newLen} keys to row ${b}, which holds ${n} of ${capacity}, would overflow the cache; ` +
          `make room (${paged ? 'more blocks per row in blockTable' : 'a longer cache'}) or append fewer keys.`,
      );
    }
  });

  let cacheBatchIdx: Tensor | null = null;
  let cacheRows: Int32Array | null = null;
  if (!paged) {
    const rowsInCache = k.shape[0]!;
    if (given(opts.cacheBatchIdx)) {
      const idx = int32PerRow(opts.cacheBatchIdx, 'cacheBatchIdx', batch, device, capturing);
      const seen = new Set<number>();
      idx.host?.forEach((r, b) => {
        if (r < 0 || r >= rowsInCache)
          throw kvCacheError(
            `cacheBatchIdx[${b}] = ${r} is outside the cache's ${rowsInCache} rows [0, ${rowsInCache}).`,
          );
        if (newLen > 0 && seen.has(r)) {
          throw kvCacheError(
            `cacheBatchIdx repeats cache row ${r} (at batch row ${b}) while appending: two rows would write the same cache row. Give each batch row its own cache row.`,
          );
        }
        seen.add(r);
      });
      cacheBatchIdx = idx.tensor;
      cacheRows = idx.host;
    } else {
      if (rowsInCache < batch) {
        throw kvCacheError(
          `The cache has ${rowsInCache} rows (dim 0) for a batch of ${batch}; pass a cache row per batch row, or cacheBatchIdx.`,
        );
      }
      cacheRows = capturing ? null : Int32Array.from({ length: batch }, (_, b) => b);
    }
  } else if (given(opts.cacheBatchIdx)) {
    throw kvCacheError(
      'cacheBatchIdx is for contiguous caches; with a blockTable, its rows already say which blocks each batch row uses.',
    );
  }

  const leftpad = given(opts.leftpadK) ? int32PerRow(opts.leftpadK, 'leftpadK', batch, device, capturing) : null;
  const keyStart = capturing ? null : (leftpad?.host ?? new Int32Array(batch));
  keyStart?.forEach((s, b) => {
    if (s < 0 || s > seqlens![b]!)
      throw kvCacheError(`leftpadK[${b}] = ${s} is outside [0, cacheSeqlens[${b}] = ${seqlens![b]}].`);
  });
  const keyCount = seqlens && keyStart ? Int32Array.from(seqlens, (n, b) => n + newLen - keyStart[b]!) : null;

  const qPerRow = common.causal || common.window !== null;
  let needRows: number | null = null;
  if (seqlens) {
    needRows = 0;
    for (let b = 0; b < batch; b++) {
      if (newLen > 0) needRows = Math.max(needRows, seqlens[b]! + newLen);
      if (seqQ > 0) needRows = Math.max(needRows, seqlens[b]! + (qPerRow ? seqQ : 1));
    }
  }
  const rotary = checkRotary(opts, q, device, needRows, qPerRow);
  if (common.alibiSlopes) checkAlibi(common.alibiSlopes, batch, headsQ, device);
  // With a blockTable every block a row reads or writes (positions below seqlens + newLen) is in the pool.
  const pagedParams: PagedKvParams | null = paged
    ? checkBlockTable(opts.blockTable, batch, seqlens ? (b) => seqlens[b]! + newLen : null, pool!, device)
    : null;

  const kvCache: KvCacheParams = Object.freeze({
    kCache: k,
    vCache: v,
    capacity,
    cacheSeqlens: seqlensArg?.tensor ?? null,
    seqlens,
    kNew,
    vNew,
    newLen,
    rotary,
    cacheBatchIdx,
    cacheRows,
    leftpadK: leftpad?.tensor ?? null,
    keyStart,
    keyCount,
  });
  const params: SdpaParams = {
    query: q.transpose(1, 2),
    key: k,
    value: v,
    device,
    dtype,
    descale: null,
    batch,
    headsQ,
    headsKV,
    seqQ,
    // While capturing the key counts are unknown: the capacity bounds them.
    seqK: keyCount ? keyCount.reduce((m, n) => Math.max(m, n), 0) : capacity,
    headDim,
    headDimV,
    scale: resolveScale(common.explicitScale, headDim),
    causal: common.causal,
    alignment: 'lowerRight',
    window: common.window,
    mask: null,
    alibiSlopes: common.alibiSlopes,
    softcap: common.softcap,
    dropout: null,
    enableGqa: common.enableGqa,
    varlen: null,
    sequsedK: null,
    paged: pagedParams,
    kvCache,
    requiresGrad: false,
    deterministic: false,
    kernel: common.kernel,
    capturing,
    // sdpaKvCache has no indexValuesOnDevice option (yet: index-values.ts's indexValuePolicy is the
    // one decision to use for it): its values stay on the device exactly while capturing.
    indexValuesOnDevice: capturing,
    out: null,
  };
  return { params: Object.freeze(params), backends: common.backends, rng: common.rng };
}
