// Which calls 'flash-cuda' takes and which it declines, and with which rule, on fake CUDA devices
// (no GPU needed); and how a call is packed for the addon.
import {
  type DeviceProperties,
  normalizeParams,
  normalizeVarlenParams,
  randn,
  type SdpaOptions,
  type SdpaParams,
  tensor,
} from '@attn/core';
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import { describe, expect, it } from 'vitest';
import { NUM, PTR } from './abi.js';
import { packArgs } from './forward.js';
import { FLASH_RULES } from './rules.js';
import { backwardSharedMemory } from './rules-backward.js';
import { FAKE_H100 as H100, FAKE_T4 as T4, useFakeGpus } from './fake-gpus.test-support.js';

useFakeGpus(H100, T4);

const DEV = { sm90: 'cuda:0', sm75: 'cuda:1' } as const;

function qkv(
  shape: {
    b?: number;
    hq?: number;
    hk?: number;
    sq?: number;
    sk?: number;
    d?: number;
    dtype?: 'float16' | 'bfloat16' | 'float32';
    device?: string;
  } = {},
) {
  const { b = 2, hq = 4, hk = hq, sq = 16, sk = 24, d = 64, dtype = 'bfloat16', device = DEV.sm90 } = shape;
  const o = { dtype, device: device as 'cuda:0' };
  return [
    randn([b, hq, sq, d], { ...o, seed: 1 }),
    randn([b, hk, sk, d], { ...o, seed: 2 }),
    randn([b, hk, sk, d], { ...o, seed: 3 }),
  ] as const;
}

function failing(p: SdpaParams, device: Partial<DeviceProperties> = H100): string[] {
  const ctx = { device: { ...makeFakeDeviceRuntime({ devices: [device] }).properties(0) } };
  return FLASH_RULES.filter((r) => r.check(p, ctx) !== null).map((r) => r.name);
}

function params(opts: SdpaOptions = {}, shape: Parameters<typeof qkv>[0] = {}): SdpaParams {
  const [q, k, v] = qkv(shape);
  return normalizeParams(q, k, v, opts);
}

describe('flash-cuda rules', () => {
  it('take a plain bf16 and fp16 call on sm90', () => {
    expect(failing(params())).toEqual([]);
    expect(failing(params({}, { dtype: 'float16' }))).toEqual([]);
  });

  it('take every feature the kernel implements', () => {
    const slopes = tensor([0.5, 0.25, 0.125, 0.0625], [4], { dtype: 'float32', device: DEV.sm90 });
    const p = params({
      isCausal: true,
      alignment: 'lowerRight',
      window: [8, 0],
      alibiSlopes: slopes,
      softcap: 30,
      dropoutP: 0.1,
    });
    expect(failing(p)).toEqual([]);
    expect(failing(params({ enableGqa: true }, { hq: 8, hk: 2 }))).toEqual([]);
    expect(failing(params({ enableGqa: true }, { hq: 8, hk: 1 }))).toEqual([]);
    expect(failing(params({ isCausal: true }, { sq: 5, sk: 40 }))).toEqual([]); // non-square causal, upper-left
    expect(failing(params({}, { d: 100 }))).toEqual([]); // D % 8 != 0: padded in the kernel
  });

  it('decline fp32, old GPUs, masks, D > 256 and D != Dv, each with its rule', () => {
    expect(failing(params({}, { dtype: 'float32' }))).toEqual(['dtypeIn(float16, bfloat16)']);
    expect(failing(params({}, { device: DEV.sm75 }), T4)).toEqual(['smRange(80, 121)']);
    const mask = tensor(new Array(16 * 24).fill(1), [16, 24], { dtype: 'bool', device: DEV.sm90 });
    expect(failing(params({ attnMask: mask }))).toEqual(['noAttnMask']);
    expect(failing(params({}, { d: 320 }))).toEqual(['headDimAtMost(256)']);
    const [q, k] = qkv();
    const v = randn([2, 4, 24, 32], { dtype: 'bfloat16', device: DEV.sm90 });
    expect(failing(normalizeParams(q, k, v))).toEqual(['headDimsEqual']);
  });

  it('take backward, deterministic or not, with every feature', () => {
    const slopes = tensor([0.5, 0.25, 0.125, 0.0625], [4], { dtype: 'float32', device: DEV.sm90 });
    const opts = {
      requiresGrad: true,
      isCausal: true,
      alignment: 'lowerRight',
      window: [8, 0],
      alibiSlopes: slopes,
      softcap: 30,
      dropoutP: 0.1,
    } as const;
    expect(failing(params(opts))).toEqual([]);
    expect(failing(params({ ...opts, deterministic: true }))).toEqual([]);
    expect(failing(params({ requiresGrad: true, enableGqa: true }, { hq: 8, hk: 1, d: 256 }))).toEqual([]);
  });

  it('decline backward where its tiles do not fit the shared memory (D > 192 on ~100 KB GPUs)', () => {
    const RTX4090: Partial<DeviceProperties> = {
      ...H100,
      name: 'fake RTX 4090',
      arch: 'sm_89',
      major: 8,
      minor: 9,
      sharedMemoryPerBlockOptin: 101376,
    };
    expect(failing(params({ requiresGrad: true }, { d: 192 }), RTX4090)).toEqual([]);
    expect(failing(params({ requiresGrad: true }, { d: 256 }), RTX4090)).toEqual(['backwardSharedMemory']);
    expect(failing(params({}, { d: 256 }), RTX4090)).toEqual([]); // forward alone fits
    const why = backwardSharedMemory.check(params({ requiresGrad: true }, { d: 200 }), {
      device: makeFakeDeviceRuntime({ devices: [RTX4090] }).properties(0),
    });
    expect(why).toMatch(/needs 102912 bytes .* allows 101376/);
  });

  it('decline an empty batch (the addon takes batch in [1, 65535]), dense and varlen', () => {
    expect(failing(normalizeParams(...qkv({ b: 0 })))).toEqual(['nonzeroBatchAndHeads']);
    const cu = tensor(Int32Array.of(0), [1], { dtype: 'int32', device: DEV.sm90 });
    const [q, k, v] = [
      randn([0, 4, 64], { dtype: 'bfloat16', device: DEV.sm90 }),
      randn([0, 4, 64], { dtype: 'bfloat16', device: DEV.sm90 }),
      randn([0, 4, 64], { dtype: 'bfloat16', device: DEV.sm90 }),
    ];
    expect(
      failing(normalizeVarlenParams(q, k, v, { cuSeqlensQ: cu, cuSeqlensK: cu, maxSeqlenQ: 5, maxSeqlenK: 5 })),
    ).toEqual(['nonzeroBatchAndHeads']);
  });

  it('decline CPU tensors and a non-contiguous last dim', () => {
    const [q, k, v] = qkv({ device: 'cpu' });
    expect(failing(normalizeParams(q, k, v))).toContain('tensorsOn(cuda)');
    const [q2, k2, v2] = qkv({ d: 16, sq: 16 });
    const qt = q2.transpose(2, 3); // [B, H, D=16, S=16] read as S=16, D=16 with last stride 16
    expect(failing(normalizeParams(qt, k2, v2))).toContain('lastDimContiguous(qkv, ignoreSingletonDim)');
  });

  it('take packed varlen inputs with offsets on the device', () => {
    const o = { dtype: 'bfloat16' as const, device: DEV.sm90 };
    const q = randn([10, 4, 64], o);
    const k = randn([14, 4, 64], o);
    const v = randn([14, 4, 64], o);
    const cu = (xs: number[]) => tensor(xs, [xs.length], { dtype: 'int32', device: DEV.sm90 });
    const p = normalizeVarlenParams(q, k, v, {
      cuSeqlensQ: cu([0, 3, 10]),
      cuSeqlensK: cu([0, 5, 14]),
      maxSeqlenQ: 7,
      maxSeqlenK: 9,
    });
    expect(failing(p)).toEqual([]);
  });

  it('take paged K/V (blockTable) of any block size, with GQA and sequsedK', () => {
    for (const bs of [1, 16, 64, 256]) {
      const p = pagedParams(bs);
      expect(p.paged).not.toBeNull();
      expect(failing(p)).toEqual([]);
    }
  });
});

/** A paged varlen call: sequences of 5 and 40 keys in pools of `bs`-row blocks, a table over 9 blocks. */
function pagedParams(bs: number, extra: Record<string, unknown> = {}): SdpaParams {
  const o = { dtype: 'bfloat16' as const, device: DEV.sm90 };
  const perSeq = Math.ceil(40 / bs);
  const numBlocks = 2 * perSeq + 1;
  const i32 = (xs: number[], shape: number[]) => tensor(xs, shape, { dtype: 'int32', device: DEV.sm90 });
  const table = [
    ...Array.from({ length: perSeq }, (_, i) => numBlocks - 1 - i),
    ...Array.from({ length: perSeq }, (_, i) => i),
  ];
  return normalizeVarlenParams(
    randn([3, 8, 64], o),
    randn([numBlocks, bs, 2, 64], o),
    randn([numBlocks, bs, 2, 64], o),
    {
      cuSeqlensQ: i32([0, 1, 3], [3]),
      cuSeqlensK: i32([0, 5, 45], [3]),
      maxSeqlenQ: 2,
      maxSeqlenK: 40,
      enableGqa: true,
      sequsedK: i32([5, 30], [2]),
      blockTable: i32(table, [2, perSeq]),
      ...extra,
    },
  );
}

describe('packArgs', () => {
  const facts = { smCount: 132, smemOptin: 232448, major: 9, minor: 0 };

  it('passes strides as given (a [B, S, H, D] view), scale, alignment, window and dropout', () => {
    const o = { dtype: 'float16' as const, device: DEV.sm90 };
    const q = randn([2, 16, 4, 64], o).transpose(1, 2);
    const k = randn([2, 24, 4, 64], o).transpose(1, 2);
    const v = randn([2, 24, 4, 64], o).transpose(1, 2);
    const p = normalizeParams(q, k, v, {
      window: [5, 3],
      alignment: 'lowerRight',
      dropoutP: 0.25,
      dropoutSeed: 7n,
      dropoutOffset: 9,
    });
    const { ptrs, nums } = packArgs(p, facts);
    expect([nums[NUM.qBatchStride], nums[NUM.qHeadStride], nums[NUM.qRowStride]]).toEqual([16 * 4 * 64, 64, 4 * 64]);
    expect([nums[NUM.kBatchStride], nums[NUM.kHeadStride], nums[NUM.kRowStride]]).toEqual([24 * 4 * 64, 64, 4 * 64]);
    expect(nums[NUM.isBf16]).toBe(0);
    expect(nums[NUM.scale]).toBeCloseTo(1 / 8, 12);
    expect([nums[NUM.windowLeft], nums[NUM.windowRight], nums[NUM.lowerRight], nums[NUM.causal]]).toEqual([5, 3, 1, 0]);
    expect(nums[NUM.dropout]).toBe(1);
    expect(nums[NUM.dropoutThreshold]).toBe(2 ** 30);
    expect(nums[NUM.dropoutKeepScale]).toBeCloseTo(4 / 3, 12);
    expect(nums[NUM.dropoutOffset]).toBe(9);
    expect(ptrs[PTR.seed]).toBe(7n);
    expect(nums[NUM.totalQ]).toBe(-1);
    expect([nums[NUM.smCount], nums[NUM.smemOptin]]).toEqual([132, 232448]);
  });

  it('marks unbounded window sides -1 and varlen rows by their token stride', () => {
    const o = { dtype: 'bfloat16' as const, device: DEV.sm90 };
    const cu = (xs: number[]) => tensor(xs, [xs.length], { dtype: 'int32', device: DEV.sm90 });
    const p = normalizeVarlenParams(randn([10, 4, 32], o), randn([14, 2, 32], o), randn([14, 2, 32], o), {
      cuSeqlensQ: cu([0, 3, 10]),
      cuSeqlensK: cu([0, 5, 14]),
      maxSeqlenQ: 7,
      maxSeqlenK: 9,
      enableGqa: true,
      isCausal: true,
    });
    const { ptrs, nums } = packArgs(p, facts);
    expect([nums[NUM.windowLeft], nums[NUM.windowRight], nums[NUM.causal]]).toEqual([-1, -1, 1]);
    expect(nums[NUM.totalQ]).toBe(10);
    expect([nums[NUM.batch], nums[NUM.seqQ], nums[NUM.seqK], nums[NUM.headsQ], nums[NUM.headsK]]).toEqual([
      2, 7, 9, 4, 2,
    ]);
    expect([nums[NUM.qBatchStride], nums[NUM.qHeadStride], nums[NUM.qRowStride]]).toEqual([0, 32, 4 * 32]);
    expect(ptrs[PTR.cuSeqlensQ]).toBe(p.varlen!.cuSeqlensQ.dataPointer());
    expect(nums[NUM.dropout]).toBe(0);
    expect(nums[NUM.totalK]).toBe(14);
    expect([nums[NUM.pageSize], ptrs[PTR.blockTable]]).toEqual([0, 0n]);
  });

  it('passes paged pools by their page, row and head strides and the table by address', () => {
    const p = pagedParams(16);
    const { ptrs, nums } = packArgs(p, facts);
    expect(ptrs[PTR.blockTable]).toBe(p.paged!.blockTable.dataPointer());
    expect([nums[NUM.pageSize], nums[NUM.numPages], nums[NUM.maxPagesPerSeq]]).toEqual([16, 7, 3]);
    expect([nums[NUM.kBatchStride], nums[NUM.kHeadStride], nums[NUM.kRowStride], nums[NUM.kPageStride]]).toEqual([
      0,
      64,
      128,
      16 * 128,
    ]);
    expect([nums[NUM.vHeadStride], nums[NUM.vRowStride], nums[NUM.vPageStride]]).toEqual([64, 128, 16 * 128]);
    expect([nums[NUM.seqK], nums[NUM.totalK]]).toEqual([40, 0]);
    expect(ptrs[PTR.sequsedK]).toBe(p.sequsedK!.tensor.dataPointer());
  });
});
