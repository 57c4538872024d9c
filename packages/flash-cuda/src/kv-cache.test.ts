// Which sdpaKvCache calls 'flash-cuda' takes (fake CUDA devices, no GPU needed) and how its forward is
// packed: after the append kernel, a dense rotated query over the cache read as a paged pool; fused, the
// user's query, kNew / vNew and the rotary tables for the forward itself, a contiguous cache as dense rows.
import { normalizeKvCacheParams, randn, type SdpaParams, tensor, zeros } from '@attn/core';
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import { describe, expect, it } from 'vitest';
import { NUM, PTR } from './abi.js';
import { packKvCacheArgs } from './kv-cache.js';
import { FLASH_RULES, kvCacheCapacity } from './rules.js';
import { FAKE_H100 as H100, useFakeGpus } from './fake-gpus.test-support.js';

useFakeGpus(H100);

const dev = { dtype: 'bfloat16' as const, device: 'cuda' as const };
const i32 = (xs: number[], shape = [xs.length]) => tensor(xs, shape, { dtype: 'int32', device: 'cuda' });
const failing = (p: SdpaParams) => {
  const ctx = { device: makeFakeDeviceRuntime({ devices: [H100] }).properties(0) };
  return FLASH_RULES.filter((r) => r.check(p, ctx) !== null).map((r) => r.name);
};
const FACTS = { smCount: 132, smemOptin: 232448, major: 9, minor: 0 };

function contiguous(dv = 8, dtype: 'bfloat16' | 'float32' = 'bfloat16') {
  const o = { dtype, device: 'cuda' as const };
  return normalizeKvCacheParams(randn([3, 1, 4, 8], o), zeros([4, 10, 2, 8], o), zeros([4, 10, 2, dv], o), {
    cacheSeqlens: i32([3, 0, 7]),
    kNew: randn([3, 1, 2, 8], o),
    vNew: randn([3, 1, 2, dv], o),
    cacheBatchIdx: i32([2, 0, 3]),
    leftpadK: i32([1, 0, 4]),
    isCausal: true,
    enableGqa: true,
  });
}

describe('flash-cuda kv-cache rules', () => {
  it('takes half-precision calls with D == Dv, contiguous or paged; declines Dv != D and float32 by their rules', () => {
    expect(failing(contiguous())).toEqual([]);
    const pool = zeros([6, 16, 2, 8], dev);
    const paged = normalizeKvCacheParams(randn([2, 3, 4, 8], dev), pool, pool, {
      cacheSeqlens: i32([5, 30]),
      blockTable: i32([5, 0, 1, 2], [2, 2]),
      enableGqa: true,
      window: [4, 0],
      softcap: 2,
    });
    expect(failing(paged)).toEqual([]);
    expect(failing(contiguous(6))).toEqual(['headDimsEqual']);
    expect(failing(contiguous(8, 'float32'))).toEqual(['dtypeIn(float16, bfloat16)']);
  });

  it('kvCacheCapacity declines rows past int32 positions only', () => {
    const p = contiguous();
    expect(kvCacheCapacity.check(p, { device: null })).toBeNull();
    const huge = { ...p, kvCache: { ...p.kvCache!, capacity: 2 ** 31 } };
    expect(kvCacheCapacity.check(huge, { device: null })).toMatch(/int32 key positions/);
  });
});

describe('packKvCacheArgs', () => {
  it('a dense query over the cache as a pool: page per cache row, the row table, lengths and leftpadK by address', () => {
    const p = contiguous();
    const qRot = zeros([3, 1, 4, 8], dev);
    const rows = i32([0, 0, 0]);
    const { ptrs, nums } = packKvCacheArgs(p, { q: qRot, rowTable: rows, fused: false }, FACTS);
    expect(nums[NUM.totalQ]).toBe(-1);
    expect([nums[NUM.qBatchStride], nums[NUM.qHeadStride], nums[NUM.qRowStride]]).toEqual([32, 8, 32]);
    expect([nums[NUM.kBatchStride], nums[NUM.kHeadStride], nums[NUM.kRowStride], nums[NUM.kPageStride]]).toEqual([
      0, 8, 16, 160,
    ]);
    expect([nums[NUM.pageSize], nums[NUM.numPages], nums[NUM.maxPagesPerSeq]]).toEqual([10, 4, 1]);
    expect([nums[NUM.kvCache], nums[NUM.kvNewLen], nums[NUM.seqK], nums[NUM.lowerRight]]).toEqual([1, 1, 4, 1]);
    expect(ptrs[PTR.blockTable]).toBe(rows.dataPointer());
    expect(ptrs[PTR.kvSeqlens]).toBe(p.kvCache!.cacheSeqlens!.dataPointer());
    expect(ptrs[PTR.kvLeftpad]).toBe(p.kvCache!.leftpadK!.dataPointer());
    expect(ptrs[PTR.cuSeqlensQ]).toBe(0n);
    expect([nums[NUM.kvFused], ptrs[PTR.kvKNew], ptrs[PTR.rotaryCos], ptrs[PTR.kvBatchIdx]]).toEqual([0, 0n, 0n, 0n]);
  });

  it('fused: the user q, kNew / vNew with their strides, cacheBatchIdx, and a contiguous cache without a table', () => {
    const p = contiguous();
    const kv = p.kvCache!;
    const q = p.query.transpose(1, 2);
    const { ptrs, nums } = packKvCacheArgs(p, { q, rowTable: null, fused: true }, FACTS);
    expect(nums[NUM.kvFused]).toBe(1);
    expect([nums[NUM.qBatchStride], nums[NUM.qHeadStride], nums[NUM.qRowStride]]).toEqual([32, 8, 32]);
    expect(ptrs[PTR.blockTable]).toBe(0n);
    expect(ptrs[PTR.kvBatchIdx]).toBe(kv.cacheBatchIdx!.dataPointer());
    expect([ptrs[PTR.kvKNew], ptrs[PTR.kvVNew]]).toEqual([kv.kNew!.dataPointer(), kv.vNew!.dataPointer()]);
    expect([nums[NUM.kvKNewS0], nums[NUM.kvKNewS1], nums[NUM.kvKNewS2], nums[NUM.kvKNewS3]]).toEqual([16, 16, 8, 1]);
    expect([nums[NUM.pageSize], nums[NUM.numPages], nums[NUM.kPageStride]]).toEqual([10, 4, 160]);
    expect(ptrs[PTR.rotaryCos]).toBe(0n); // no rotary asked for
  });

  it('fused with rotary: the tables, their half dim, layout and strides; a paged cache keeps its table', () => {
    const pool = zeros([6, 16, 2, 8], dev);
    const table = i32([5, 0, 1, 2], [2, 2]);
    const cos = randn([40, 2], dev);
    const sin = randn([40, 2], dev);
    const p = normalizeKvCacheParams(randn([2, 1, 4, 8], dev), pool, pool, {
      cacheSeqlens: i32([5, 30]),
      kNew: randn([2, 1, 2, 8], dev),
      vNew: randn([2, 1, 2, 8], dev),
      rotaryCos: cos,
      rotarySin: sin,
      rotaryInterleaved: true,
      blockTable: table,
      isCausal: true,
      enableGqa: true,
    });
    const { ptrs, nums } = packKvCacheArgs(p, { q: p.query.transpose(1, 2), rowTable: null, fused: true }, FACTS);
    expect(ptrs[PTR.blockTable]).toBe(table.dataPointer());
    expect(ptrs[PTR.kvBatchIdx]).toBe(0n);
    expect([ptrs[PTR.rotaryCos], ptrs[PTR.rotarySin]]).toEqual([cos.dataPointer(), sin.dataPointer()]);
    expect([nums[NUM.rotaryRows], nums[NUM.rotaryHalf], nums[NUM.rotaryInterleaved], nums[NUM.rotaryQPerRow]]).toEqual([
      40, 2, 1, 1,
    ]);
    expect([nums[NUM.rotaryCosS0], nums[NUM.rotaryCosS1], nums[NUM.rotarySinS0], nums[NUM.rotarySinS1]]).toEqual([
      2, 1, 2, 1,
    ]);
  });

  it('paged caches use their own table and width', () => {
    const pool = zeros([6, 16, 2, 8], dev);
    const table = i32([5, 0, 1, 2], [2, 2]);
    const p = normalizeKvCacheParams(randn([2, 1, 4, 8], dev), pool, pool, {
      cacheSeqlens: i32([5, 30]),
      blockTable: table,
      enableGqa: true,
    });
    const { ptrs, nums } = packKvCacheArgs(p, { q: zeros([2, 1, 4, 8], dev), rowTable: null, fused: false }, FACTS);
    expect(ptrs[PTR.blockTable]).toBe(table.dataPointer());
    expect([nums[NUM.pageSize], nums[NUM.numPages], nums[NUM.maxPagesPerSeq], nums[NUM.kvNewLen]]).toEqual([
      16, 6, 2, 0,
    ]);
    expect(ptrs[PTR.kvLeftpad]).toBe(0n);
    expect(() =>
      packKvCacheArgs(contiguous(), { q: zeros([3, 1, 4, 8], dev), rowTable: null, fused: false }, FACTS),
    ).toThrow(/row table/);
  });
});
