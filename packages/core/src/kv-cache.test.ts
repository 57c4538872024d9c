// sdpaKvCache's validation (every bad input a typed error saying what to change, before anything is
// appended), what backends receive (KvCacheParams), the rule noKvCache, and explain / describeCall.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AttnError } from './errors.js';
import { tensor, zeros } from './factory.js';
import { explainKvCache, normalizeKvCacheParams, sdpaKvCache } from './kv-cache.js';
import type { KvCacheOptions } from './params.js';
import { registerBackend } from './registry.js';
import { registerDeviceRuntime } from './device-registry.js';
import { makeFakeDeviceRuntime } from './fake-device.js';
import { headCounts, sequencePairs } from './rule.js';
import { batchAndHeads, noKvCache } from './rules.js';
import { describeCall } from './select.js';
import { isolateRegistry, makeFakeBackend } from './testing.js';

const int32 = (xs: number[], shape = [xs.length]) => tensor(xs, shape, { dtype: 'int32' });

// B 3, Sq 1, Hq 4, Hk 2, D 8, Dv 6; contiguous cache of 4 rows of 10 keys.
const q = () => zeros([3, 1, 4, 8]);
const kc = (shape = [4, 10, 2, 8]) => zeros(shape);
const vc = (shape = [4, 10, 2, 6]) => zeros(shape);
const base = (): KvCacheOptions => ({
  cacheSeqlens: int32([3, 0, 9]),
  kNew: zeros([3, 1, 2, 8]),
  vNew: zeros([3, 1, 2, 6]),
  enableGqa: true,
  isCausal: true,
});
const call =
  (opts: Partial<KvCacheOptions> & Record<string, unknown> = {}, k = kc(), v = vc(), qq = q()) =>
  () =>
    normalizeKvCacheParams(qq, k, v, { ...base(), ...opts } as KvCacheOptions);
// Paged: pools of 6 blocks of 4 keys, tables 3 blocks wide (12 positions per row).
const paged = (opts: Partial<KvCacheOptions> = {}) =>
  call(
    { blockTable: int32([5, 0, -1, 2, -1, -1, 1, 3, 4], [3, 3]), cacheSeqlens: int32([5, 0, 9]), ...opts },
    kc([6, 4, 2, 8]),
    vc([6, 4, 2, 6]),
  );
const rot = (rows: number, half: number) => ({ rotaryCos: zeros([rows, half]), rotarySin: zeros([rows, half]) });

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
  registerDeviceRuntime(makeFakeDeviceRuntime());
});
afterEach(() => restore());

const CASES: Array<[string, string, () => unknown]> = [
  ['ATTN_KV_CACHE', 'an append past the end of a row', call({ cacheSeqlens: int32([3, 0, 10]) })],
  ['ATTN_KV_CACHE', 'cacheSeqlens past the cache', call({ cacheSeqlens: int32([3, 11, 0]), kNew: null, vNew: null })],
  ['ATTN_KV_CACHE', 'a negative cacheSeqlens', call({ cacheSeqlens: int32([3, -1, 0]) })],
  ['ATTN_KV_CACHE', 'cacheSeqlens of the wrong length', call({ cacheSeqlens: int32([3, 0]) })],
  ['ATTN_KV_CACHE', 'cacheSeqlens float32', call({ cacheSeqlens: tensor([3, 0, 1], [3]) })],
  ['ATTN_KV_CACHE', 'kNew without vNew', call({ vNew: null })],
  ['ATTN_KV_CACHE', 'kNew with the wrong heads', call({ kNew: zeros([3, 1, 4, 8]) })],
  ['ATTN_KV_CACHE', 'kNew and vNew of different lengths', call({ vNew: zeros([3, 2, 2, 6]) })],
  ['ATTN_DTYPE_MISMATCH', 'kNew float64', call({ kNew: zeros([3, 1, 2, 8], { dtype: 'float64' }) })],
  ['ATTN_KV_CACHE', 'an append into a broadcast cache', call({}, zeros([1, 10, 2, 8]).expand([4, 10, 2, 8]))],
  ['ATTN_KV_CACHE', 'cacheBatchIdx out of range', call({ cacheBatchIdx: int32([0, 4, 1]) })],
  ['ATTN_KV_CACHE', 'cacheBatchIdx repeated while appending', call({ cacheBatchIdx: int32([2, 0, 2]) })],
  ['ATTN_KV_CACHE', 'cacheBatchIdx with a blockTable', paged({ cacheBatchIdx: int32([0, 1, 2]) })],
  ['ATTN_KV_CACHE', 'a cache with fewer rows than the batch', call({}, kc([2, 10, 2, 8]), vc([2, 10, 2, 6]))],
  ['ATTN_KV_CACHE', 'kCache and vCache of different lengths', call({}, kc(), vc([4, 9, 2, 6]))],
  ['ATTN_KV_CACHE', 'leftpadK past cacheSeqlens', call({ leftpadK: int32([4, 0, 0]) })],
  ['ATTN_KV_CACHE', 'a negative leftpadK', call({ leftpadK: int32([0, -1, 0]) })],
  ['ATTN_KV_CACHE', 'rotary tables too short for the appended positions', call(rot(9, 2))],
  [
    'ATTN_KV_CACHE',
    'rotary tables too short for causal q rows',
    call({ ...rot(11, 2), kNew: null, vNew: null, cacheSeqlens: int32([3, 0, 10]) }, kc(), vc(), zeros([3, 2, 4, 8])),
  ],
  ['ATTN_KV_CACHE', 'rotaryCos without rotarySin', call({ rotaryCos: zeros([10, 2]) })],
  ['ATTN_KV_CACHE', 'a rotary dim above the head dim', call(rot(10, 5))],
  ['ATTN_KV_CACHE', 'cos and sin of different shapes', call({ rotaryCos: zeros([10, 2]), rotarySin: zeros([10, 3]) })],
  [
    'ATTN_DTYPE_MISMATCH',
    'rotary tables in another dtype',
    call({ rotaryCos: zeros([10, 2], { dtype: 'float64' }), rotarySin: zeros([10, 2], { dtype: 'float64' }) }),
  ],
  ['ATTN_OPTION', 'rotaryInterleaved not a boolean', call({ rotaryInterleaved: 1 as never })],
  ['ATTN_KV_CACHE', 'requiresGrad', call({ requiresGrad: true })],
  ['ATTN_OPTION', 'dropout (not an option of sdpaKvCache)', call({ dropoutP: 0.1 })],
  ['ATTN_OPTION', 'alignment (always lower-right)', call({ alignment: 'upperLeft' })],
  ['ATTN_RANK', 'a rank-3 q', call({}, kc(), vc(), zeros([3, 4, 8]))],
  ['ATTN_GQA', 'fewer cache heads without enableGqa', call({ enableGqa: false })],
  ['ATTN_HEAD_DIM', 'q and kCache head dims differ', call({}, kc([4, 10, 2, 7]))],
  [
    'ATTN_BLOCK_TABLE',
    'a read block outside the pool',
    paged({ blockTable: int32([5, 0, -1, 2, -1, -1, 1, 3, 6], [3, 3]) }),
  ],
  ['ATTN_KV_CACHE', 'an append past the blocks of a row', paged({ cacheSeqlens: int32([5, 0, 12]) })],
  [
    'ATTN_KV_CACHE',
    'pools of different block sizes',
    call({ blockTable: int32([0, 1, 2], [3, 1]) }, kc([6, 4, 2, 8]), vc([12, 2, 2, 6])),
  ],
];

describe('sdpaKvCache validation', () => {
  it.each(CASES)('%s: %s', (code, _what, fn) => {
    let error: unknown;
    try {
      fn();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AttnError);
    expect((error as AttnError).code).toBe(code);
    expect((error as Error).message.length).toBeGreaterThan(20);
  });

  it('takes the good calls', () => {
    expect(() => call()()).not.toThrow();
    expect(() => paged()()).not.toThrow();
    expect(() =>
      call({ cacheBatchIdx: int32([2, 0, 3]), leftpadK: int32([1, 0, 4]), ...rot(10, 4), rotaryInterleaved: true })(),
    ).not.toThrow();
    // Without an append a cache row may serve several batch rows.
    expect(() => call({ cacheBatchIdx: int32([1, 1, 1]), kNew: null, vNew: null })()).not.toThrow();
  });
});

describe('what backends receive', () => {
  it('KvCacheParams: positions resolved, q seen as [B, Hq, Sq, D], lower-right', () => {
    const p = call({ cacheBatchIdx: int32([2, 0, 3]), leftpadK: int32([1, 0, 4]), ...rot(10, 4) })();
    expect(p).toMatchObject({
      batch: 3,
      headsQ: 4,
      headsKV: 2,
      seqQ: 1,
      seqK: 6,
      headDim: 8,
      headDimV: 6,
      alignment: 'lowerRight',
      causal: true,
      requiresGrad: false,
    });
    expect(p.query.shape).toEqual([3, 4, 1, 8]);
    const kv = p.kvCache!;
    expect([...kv.seqlens!]).toEqual([3, 0, 9]);
    expect([...kv.keyStart!]).toEqual([1, 0, 4]);
    expect([...kv.keyCount!]).toEqual([3, 1, 6]);
    expect([...kv.cacheRows!]).toEqual([2, 0, 3]);
    expect(kv).toMatchObject({ capacity: 10, newLen: 1, rotary: { dim: 8, interleaved: false, qPerRow: true } });
    expect(sequencePairs(p)).toEqual([
      [1, 3],
      [1, 1],
      [1, 6],
    ]);
    expect(describeCall(p)).toContain(
      'kv cache (3 rows of up to 10 keys, append 1, rotary 8, cacheBatchIdx, leftpadK)',
    );
  });

  it('paged: the pool geometry and capacity from the table; rows full without cacheSeqlens', () => {
    const p = paged()();
    expect(p.paged).toMatchObject({ blockSize: 4, numBlocks: 6, maxBlocksPerSeq: 3 });
    expect(p.kvCache).toMatchObject({ capacity: 12, cacheRows: null });
    const full = call({ cacheSeqlens: null, kNew: null, vNew: null, isCausal: false })();
    expect([...full.kvCache!.keyCount!]).toEqual([10, 10, 10]);
  });

  it('shape rules read the caches as caches (their rows are not the batch)', () => {
    const p = call({ cacheBatchIdx: int32([2, 0, 3]) })();
    expect(batchAndHeads({ gqa: true }).check(p, { device: null })).toBeNull();
    expect(headCounts(p)).toEqual({ hq: 4, hk: 2, hv: 2 });
  });

  it('the rule noKvCache declines kv-cache calls only', () => {
    expect(noKvCache.check(call()(), { device: null })).toMatch(/sdpaKvCache/);
    expect(noKvCache.check({ ...call()(), kvCache: null }, { device: null })).toBeNull();
  });

  it('explain reports the declines; a declined call appends nothing', () => {
    registerBackend(makeFakeBackend('no-kv', { rules: [noKvCache] }));
    const k = kc();
    const opts = { ...base(), kNew: tensor(Array(48).fill(1), [3, 1, 2, 8]) };
    const report = explainKvCache(q(), k, vc(), opts);
    expect(report.candidates[0]!.reasons.map((r) => r.rule)).toEqual(['noKvCache']);
    expect(() => sdpaKvCache(q(), k, vc(), opts)).toThrow(expect.objectContaining({ code: 'ATTN_NO_BACKEND' }));
    expect(k.toFloat64Array().every((x) => x === 0)).toBe(true);
  });

  it('returns out as [B, Sq, Hq, Dv] from the backend that ran', () => {
    registerBackend(makeFakeBackend('kv'));
    const r = sdpaKvCache(q(), kc(), vc(), base());
    expect(r.backend).toBe('kv');
    expect(r.out.shape).toEqual([3, 1, 4, 6]);
    expect(r.logsumexp.shape).toEqual([3, 4, 1]);
  });
});
