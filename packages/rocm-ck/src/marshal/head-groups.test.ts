// GQA/MQA backward marshalling: CK's backward writes dK/dV into buffers with Hq heads, and the
// head-group sum adds query heads hk*G .. hk*G+G-1 into key/value head hk (CK reads K/V at query
// head h / (Hq/Hk), attn's GQA convention too).
import { beforeAll, describe, expect, it } from 'vitest';
import { installFakeRocmRuntime, params, qkv, rocmTensor, varlenParams } from '@attn/rocm/testing';
import { backwardArgs } from './backward.js';
import { expandedShape, headGroupSumArgs } from './head-groups.js';

beforeAll(() => {
  installFakeRocmRuntime('gfx942');
});

describe('head-group sum marshalling', () => {
  it('dense GQA: dK/dV buffers of [B, Hq, Sk, D|Dv], summed over groups of Hq/Hk into [B, Hk, Sk, D|Dv]', () => {
    const p = params(qkv(2, 8, 5, 17, 64, { hk: 2, dv: 32, dtype: 'bfloat16' }), {
      enableGqa: true,
      requiresGrad: true,
    });
    expect(expandedShape(p, p.headDim)).toEqual([2, 8, 17, 64]);
    expect(expandedShape(p, p.headDimV)).toEqual([2, 8, 17, 32]);
    const dkHeads = rocmTensor([2, 8, 17, 64], { dtype: 'bfloat16' });
    const dk = rocmTensor([2, 2, 17, 64], { dtype: 'bfloat16' });
    expect(headGroupSumArgs(p, dkHeads, dk)).toEqual({
      src: dkHeads.dataPointer(),
      dst: dk.dataPointer(),
      dtype: 'bf16',
      outer: 2,
      headsKV: 2,
      group: 4,
      inner: 17 * 64,
    });
    const dv = rocmTensor([2, 2, 17, 32], { dtype: 'bfloat16' });
    expect(headGroupSumArgs(p, rocmTensor([2, 8, 17, 32], { dtype: 'bfloat16' }), dv)).toMatchObject({
      outer: 2,
      group: 4,
      inner: 17 * 32,
    });
  });

  it('MQA: one key/value head takes every query head', () => {
    const p = params(qkv(1, 6, 3, 9, 32, { hk: 1 }), { enableGqa: true, requiresGrad: true });
    expect(headGroupSumArgs(p, rocmTensor(expandedShape(p, 32)), rocmTensor([1, 1, 9, 32]))).toMatchObject({
      dtype: 'fp16',
      outer: 1,
      headsKV: 1,
      group: 6,
      inner: 9 * 32,
    });
  });

  it('varlen: [totalK, Hq, D] rows summed into [totalK, Hk, D]', () => {
    const p = varlenParams([3, 5], 2, 64, { kLens: [4, 6] });
    expect(expandedShape(p, 64)).toEqual([10, 2, 64]);
    expect(headGroupSumArgs(p, rocmTensor([10, 2, 64]), rocmTensor([10, 2, 64]))).toMatchObject({
      outer: 10,
      headsKV: 2,
      group: 1,
      inner: 64,
    });
  });

  it("CK's dK/dV strides come from the expanded buffers (query heads), K/V's from the inputs (key heads)", () => {
    const p = params(qkv(1, 4, 8, 8, 64, { hk: 2 }), { enableGqa: true, requiresGrad: true });
    const f32 = { dtype: 'float32' as const };
    const a = backwardArgs(p, {
      out: rocmTensor([1, 4, 8, 64]),
      lse: rocmTensor([1, 4, 8], f32),
      gradOut: rocmTensor([1, 4, 8, 64]),
      d: rocmTensor([1, 4, 8], f32),
      dq: rocmTensor([1, 4, 8, 64]),
      dk: rocmTensor(expandedShape(p, 64)),
      dv: rocmTensor(expandedShape(p, 64)),
      dbias: null,
      dqAcc: rocmTensor([1, 1, 4, 8, 64], f32),
    });
    expect([a.nhead_q, a.nhead_k, a.batch_stride_k, a.batch_stride_dk, a.nhead_stride_dk, a.batch_stride_dv]).toEqual([
      4,
      2,
      2 * 8 * 64,
      4 * 8 * 64,
      8 * 64,
      4 * 8 * 64,
    ]);
  });
});
