// The kv-cache append kernel's argument arrays (native/include/attn/kv_append.cuh), built from real
// sdpaKvCache params on a fake 'cuda' device, and cuda-math's paged forward arguments for the same call.
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import { normalizeKvCacheParams, randn, registerDeviceRuntime, tensor, zeros } from '@attn/core';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { abiHeaderMismatches } from './abi.js';
import { KV_ABI, KV_NUM, KV_PTR, kvAppendArgs } from './kv-append.js';
import { kvCacheForwardArgs } from './math-backend/launch-args.js';

beforeAll(() => registerDeviceRuntime(makeFakeDeviceRuntime({ type: 'cuda' })));

const dev = { dtype: 'bfloat16' as const, device: 'cuda' as const };
const i32 = (xs: number[], shape = [xs.length]) => tensor(xs, shape, { dtype: 'int32', device: 'cuda' });

// B 3, Sq 2, Hq 4, Hk 2, D 8, Dv 6; contiguous cache of 4 rows of 10 keys.
function contiguous() {
  const q = randn([3, 2, 4, 8], dev);
  const k = zeros([4, 10, 2, 8], dev);
  const v = zeros([4, 10, 2, 6], dev);
  const opts = {
    cacheSeqlens: i32([3, 0, 7]),
    kNew: randn([3, 1, 2, 8], dev),
    vNew: randn([3, 1, 2, 6], dev),
    cacheBatchIdx: i32([2, 0, 3]),
    leftpadK: i32([1, 0, 4]),
    rotaryCos: zeros([12, 3], dev),
    rotarySin: zeros([12, 3], dev),
    rotaryInterleaved: true,
    isCausal: true,
    enableGqa: true,
  };
  return { q, k, v, opts, p: normalizeKvCacheParams(q, k, v, opts) };
}

describe('kvAppendArgs', () => {
  it('lists the slots of attn/kv_append_abi.h in its order', () => {
    const header = readFileSync(new URL('../native/include/attn/kv_append_abi.h', import.meta.url), 'utf8');
    expect(abiHeaderMismatches(KV_ABI, header, { ptr: 'Ptr', num: 'Num' })).toEqual([]);
  });

  it('passes the user q [B, Sq, Hq, D], the caches as pools, index tensors by address, rotary flags', () => {
    const { q, k, opts, p } = contiguous();
    const qOut = zeros([3, 2, 4, 8], dev);
    const rows = i32([0, 0, 0]);
    const { ptrs, nums } = kvAppendArgs(p, { qOut, rowTable: rows, stream: 77n });
    expect(ptrs[KV_PTR.q]).toBe(q.dataPointer());
    expect(ptrs[KV_PTR.qOut]).toBe(qOut.dataPointer());
    expect(ptrs[KV_PTR.kCache]).toBe(k.dataPointer());
    expect(ptrs[KV_PTR.cacheSeqlens]).toBe(opts.cacheSeqlens.dataPointer());
    expect(ptrs[KV_PTR.cacheBatchIdx]).toBe(opts.cacheBatchIdx.dataPointer());
    expect(ptrs[KV_PTR.blockTable]).toBe(0n);
    expect(ptrs[KV_PTR.rowTable]).toBe(rows.dataPointer());
    expect(ptrs[KV_PTR.stream]).toBe(77n);
    expect([...nums.slice(0, 16)]).toEqual([3, 3, 2, 4, 2, 8, 6, 1, 4, 10, 1, 10, 12, 3, 1, 1]);
    expect([...nums.slice(KV_NUM.qS0, KV_NUM.qS0 + 4)]).toEqual([64, 32, 8, 1]);
    expect([...nums.slice(KV_NUM.kCacheS0, KV_NUM.kCacheS0 + 4)]).toEqual([160, 16, 8, 1]);
    expect([...nums.slice(KV_NUM.cosS0, KV_NUM.cosS0 + 4)]).toEqual([3, 1, 3, 1]);
  });

  it('paged caches: the table, its width and the pool geometry; no rotary, no append', () => {
    const q = randn([2, 1, 2, 8], dev);
    const pool = zeros([5, 4, 2, 8], dev);
    const table = i32([4, 1, 0, 2, 3, 0], [2, 3]);
    const p = normalizeKvCacheParams(q, pool, pool, { cacheSeqlens: i32([9, 12]), blockTable: table });
    const { ptrs, nums } = kvAppendArgs(p, { qOut: null, rowTable: null, stream: 0n });
    expect(ptrs[KV_PTR.blockTable]).toBe(table.dataPointer());
    expect([ptrs[KV_PTR.kNew], ptrs[KV_PTR.cos], ptrs[KV_PTR.qOut]]).toEqual([0n, 0n, 0n]);
    expect([
      nums[KV_NUM.newLen],
      nums[KV_NUM.numBlocks],
      nums[KV_NUM.blockSize],
      nums[KV_NUM.maxBlocks],
      nums[KV_NUM.capacity],
      nums[KV_NUM.rotHalf],
    ]).toEqual([0, 5, 4, 3, 12, 0]);
  });
});

describe("cuda-math's kv-cache forward arguments", () => {
  it('a paged varlen forward: packed q, per-row key counts and starts, the cache rows as a one-column table', () => {
    const { p } = contiguous();
    const qPacked = zeros([6, 4, 8], dev);
    const a = kvCacheForwardArgs(
      p,
      qPacked,
      zeros([6, 4, 6], dev),
      zeros([4, 6], { dtype: 'float32', device: 'cuda' }),
    );
    expect([...a.cuSeqlensQ!]).toEqual([0, 2, 4, 6]);
    expect([...a.cuSeqlensK!]).toEqual([0, 3, 4, 8]); // keyCount = seqlens + 1 - leftpad
    expect([...a.keyStart!]).toEqual([1, 0, 4]);
    expect([...a.blockTable!]).toEqual([2, 0, 3]);
    expect(a).toMatchObject({ blockSize: 10, sequsedK: null, seqQ: 2, seqK: 4, causal: true, lowerRight: true });
    expect(a.k.shape).toEqual([4, 10, 2, 8]);
    expect(a.q.shape).toEqual([6, 4, 8]);
  });
});
