// 'cuda-math' takes every call cpu-math takes on a CUDA tensor, up to its head dim and length limits.
// Run on a fake 'cuda' device, so CI without a GPU checks the rules; limits.test.ts checks them against the addon.
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import {
  normalizeParams,
  normalizeVarlenParams,
  randn,
  registerDeviceRuntime,
  tensor,
  zeros,
  type FloatDType,
  type SdpaOptions,
  type SdpaParams,
} from '@attn/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { CUDA_MATH_LIMITS } from './limits.js';
import { cudaMathRules } from './rules.js';

beforeAll(() => registerDeviceRuntime(makeFakeDeviceRuntime({ type: 'cuda' })));

const CTX = { device: null, deviceUnknownReason: 'fake device' };

function failing(p: SdpaParams): string[] {
  // builtForDevice asks the addon about a real GPU: the GPU tests cover it.
  return cudaMathRules.filter((r) => r.name !== 'builtForDevice' && r.check(p, CTX) !== null).map((r) => r.name);
}

function params(
  opts: SdpaOptions = {},
  s: Partial<{ dtype: FloatDType; B: number; Hk: number; Sq: number; Sk: number; D: number; Dv: number }> = {},
) {
  const dev = { dtype: s.dtype ?? 'float32', device: 'cuda' as const };
  const { B = 2, Hk = 4, Sq = 5, Sk = 7, D = 8, Dv = D } = s;
  return normalizeParams(randn([B, 4, Sq, D], dev), randn([B, Hk, Sk, D], dev), randn([B, Hk, Sk, Dv], dev), opts);
}

describe('cuda-math rules', () => {
  it('take every dtype, zero lengths, Dv = 0 and head dims up to the limit', () => {
    for (const dtype of ['float64', 'float32', 'float16', 'bfloat16'] as const)
      expect(failing(params({}, { dtype }))).toEqual([]);
    for (const s of [{ B: 0 }, { Sq: 0 }, { Sk: 0 }, { Dv: 0 }, { D: CUDA_MATH_LIMITS.maxHeadDim, Sq: 1, Sk: 1 }]) {
      expect(failing(params({}, s)), JSON.stringify(s)).toEqual([]);
    }
  });

  it('take every feature, scales beyond float32, any strides and masks of any layout', () => {
    const mask = randn([7, 5], { device: 'cuda' }).transpose(0, 1); // strided along keys
    const slopes = randn([2, 4], { device: 'cuda' }).transpose(0, 1).contiguous().transpose(0, 1); // strided [B, Hq]
    expect(
      failing(
        params({
          attnMask: mask,
          isCausal: true,
          alignment: 'lowerRight',
          window: [3, 1],
          softcap: 1e39,
          scale: -1e39,
        }),
      ),
    ).toEqual([]);
    expect(
      failing(
        params(
          { alibiSlopes: slopes, dropoutP: 0.3, enableGqa: true, requiresGrad: true, deterministic: true },
          { Hk: 2 },
        ),
      ),
    ).toEqual([]);
    const q = randn([2, 4, 8, 5], { device: 'cuda' }).transpose(2, 3); // last dim not contiguous
    const k = randn([2, 4, 7, 8], { device: 'cuda' });
    expect(failing(normalizeParams(q, k, k))).toEqual([]);
    expect(
      failing(
        params({ sequsedK: tensor(Int32Array.of(3, 0), [2], { dtype: 'int32', device: 'cuda' }), isCausal: true }),
      ),
    ).toEqual([]);
    const bool = zeros([5, 7], { dtype: 'bool', device: 'cuda' });
    expect(failing(params({ attnMask: bool }))).toEqual([]);
  });

  it('take varlen calls', () => {
    const dev = { device: 'cuda' as const };
    const cu = tensor(Int32Array.of(0, 3, 3, 7), [4], { dtype: 'int32', ...dev });
    const p = normalizeParams(randn([2, 4, 5, 8], dev), randn([2, 4, 7, 8], dev), randn([2, 4, 7, 8], dev));
    const varlen = {
      ...p,
      varlen: {
        cuSeqlensQ: cu,
        cuSeqlensK: cu,
        maxSeqlenQ: 4,
        maxSeqlenK: 4,
        seqlensQ: Int32Array.of(0, 3, 3, 7),
        seqlensK: Int32Array.of(0, 3, 3, 7),
      },
    };
    expect(failing(varlen)).toEqual([]);
  });

  it('take paged K/V (blockTable), every dtype', () => {
    const i32 = (xs: number[], shape: number[]) =>
      tensor(Int32Array.from(xs), shape, { dtype: 'int32', device: 'cuda' });
    for (const dtype of ['float64', 'float32', 'float16', 'bfloat16'] as const) {
      const dev = { dtype, device: 'cuda' as const };
      const pool = randn([5, 16, 2, 8], dev);
      const p = normalizeVarlenParams(randn([3, 4, 8], dev), pool, pool, {
        cuSeqlensQ: i32([0, 1, 3], [3]),
        cuSeqlensK: i32([0, 20, 37], [3]),
        maxSeqlenQ: 2,
        maxSeqlenK: 20,
        enableGqa: true,
        blockTable: i32([4, 0, 2, 3], [2, 2]),
      });
      expect(p.paged, dtype).not.toBeNull();
      expect(failing(p), dtype).toEqual([]);
    }
  });

  it('decline head dims and lengths past the limits, saying what to change', () => {
    const { maxHeadDim, maxSeq } = CUDA_MATH_LIMITS;
    expect(failing(params({}, { D: maxHeadDim + 1, Sq: 1, Sk: 1 }))).toEqual([`headDimAtMost(${maxHeadDim})`]);
    expect(failing(params({}, { D: 8, Dv: maxHeadDim + 1, Sq: 1, Sk: 1 }))).toEqual([`headDimAtMost(${maxHeadDim})`]);
    const p = params();
    // Lengths that large cannot be allocated here: the rule reads the params' lengths alone.
    expect(failing({ ...p, seqQ: maxSeq })).toEqual([]);
    expect(failing({ ...p, seqQ: maxSeq + 1 })).toEqual([`seqLensAtMost(${maxSeq})`]);
    expect(failing({ ...p, seqK: maxSeq + 1 })).toEqual([`seqLensAtMost(${maxSeq})`]);
    const why = cudaMathRules
      .find((r) => r.name === `headDimAtMost(${maxHeadDim})`)!
      .check(params({}, { D: maxHeadDim + 1, Sq: 1, Sk: 1 }), CTX);
    expect(why).toMatch(/cpu-math.*split value into chunks of at most 1024 columns/);
  });

  it('decline tensors that are not on a CUDA device', () => {
    const p = normalizeParams(randn([1, 1, 2, 8]), randn([1, 1, 2, 8]), randn([1, 1, 2, 8]));
    expect(failing(p)).toEqual(['tensorsOn(cuda)']);
  });
});
