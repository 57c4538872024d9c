// The argument objects the addon receives, built from real SdpaParams on a fake 'cuda' device.
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import {
  normalizeParams,
  normalizeVarlenParams,
  randn,
  registerDeviceRuntime,
  tensor,
  zeros,
  type SdpaOptions,
} from '@attn/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { DTYPE_CODE, backwardArgs, dbiasLayout, forwardArgs } from './launch-args.js';

beforeAll(() => registerDeviceRuntime(makeFakeDeviceRuntime({ type: 'cuda' })));

function params(opts: SdpaOptions = {}, shape = { B: 2, Hq: 4, Hk: 2, Sq: 5, Sk: 7, D: 8, Dv: 16 }) {
  const dev = { dtype: 'float16' as const, device: 'cuda' as const };
  const q = randn([shape.B, shape.Hq, shape.Sq, shape.D], { ...dev, seed: 1 });
  const k = randn([shape.B, shape.Hk, shape.Sk, shape.D], { ...dev, seed: 2 });
  const v = randn([shape.B, shape.Hk, shape.Sk, shape.Dv], { ...dev, seed: 3 });
  return normalizeParams(q, k, v, { enableGqa: true, ...opts });
}

describe('forwardArgs', () => {
  it('passes sizes, strides in elements and pointers at the view offset', () => {
    const p = params();
    const out = zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' });
    const lse = zeros([2, 4, 5], { dtype: 'float32', device: 'cuda' });
    const a = forwardArgs(p, out, lse, 7n, 'auto');
    expect(a).toMatchObject({
      dtype: DTYPE_CODE.float16,
      batch: 2,
      headsQ: 4,
      headsKV: 2,
      seqQ: 5,
      seqK: 7,
      headDim: 8,
      headDimV: 16,
    });
    expect(a.q.strides).toEqual([4 * 5 * 8, 5 * 8, 8]);
    expect(a.v.strides).toEqual([2 * 7 * 16, 7 * 16, 16]);
    expect(a.q.ptr).toBe(p.query.dataPointer());
    expect(a.stream).toBe(7n);
    expect(a.scale).toBeCloseTo(1 / Math.sqrt(8));
    expect(a.mask).toBeNull();
    expect(a.dropout).toBeNull();
    expect(a).toMatchObject({
      causal: false,
      lowerRight: false,
      window: [-1, -1],
      softcap: 0,
      alibi: null,
      varlen: null,
      sequsedK: null,
    });
  });

  it('passes causal, the alignment and the window (a side reaching every key unbounded)', () => {
    const out = zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' });
    const lse = zeros([2, 4, 5], { dtype: 'float32', device: 'cuda' });
    expect(forwardArgs(params({ isCausal: true }), out, lse, 0n, 'auto')).toMatchObject({
      causal: true,
      lowerRight: false,
    });
    expect(forwardArgs(params({ isCausal: true, alignment: 'lowerRight' }), out, lse, 0n, 'auto')).toMatchObject({
      causal: true,
      lowerRight: true,
    });
    expect(forwardArgs(params({ window: [3, 0], alignment: 'lowerRight' }), out, lse, 0n, 'auto')).toMatchObject({
      lowerRight: true,
      window: [3, 0],
    });
    expect(forwardArgs(params({ window: [2 ** 40, 2] }), out, lse, 0n, 'auto').window).toEqual([-1, 2]);
  });

  it('passes softcap, and ALiBi slopes with their (batch, head) strides', () => {
    const out = zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' });
    const lse = zeros([2, 4, 5], { dtype: 'float32', device: 'cuda' });
    const perHead = randn([4], { device: 'cuda' });
    const a = forwardArgs(params({ softcap: 30, alibiSlopes: perHead }), out, lse, 0n, 'auto');
    expect(a).toMatchObject({ softcap: 30, alibi: { ptr: perHead.dataPointer(), strides: [0, 1] } });
    const perBatch = randn([2, 4], { device: 'cuda' });
    expect(forwardArgs(params({ alibiSlopes: perBatch }), out, lse, 0n, 'auto').alibi).toEqual({
      ptr: perBatch.dataPointer(),
      strides: [4, 1],
    });
  });

  it('passes varlen as packed tensors (batch stride 0) with the offsets and totals', () => {
    const dev = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const q = randn([9, 4, 8], dev);
    const k = randn([12, 2, 8], dev);
    const v = randn([12, 2, 16], dev);
    const cuQ = tensor([0, 4, 4, 9], [4], { dtype: 'int32', device: 'cuda' });
    const cuK = tensor([0, 5, 7, 12], [4], { dtype: 'int32', device: 'cuda' });
    const p = normalizeVarlenParams(q, k, v, {
      cuSeqlensQ: cuQ,
      cuSeqlensK: cuK,
      maxSeqlenQ: 5,
      maxSeqlenK: 5,
      enableGqa: true,
    });
    const a = forwardArgs(p, zeros([9, 4, 16], dev), zeros([4, 9], { device: 'cuda' }), 0n, 'auto');
    expect(a).toMatchObject({
      batch: 3,
      seqQ: 5,
      seqK: 5,
      varlen: { cuSeqlensQ: cuQ.dataPointer(), cuSeqlensK: cuK.dataPointer(), totalQ: 9, totalK: 12 },
    });
    expect(a.q.strides).toEqual([0, 8, 4 * 8]);
    expect(a.v.strides).toEqual([0, 16, 2 * 16]);
    expect(a.out.strides).toEqual([0, 16, 4 * 16]);
  });

  it('passes sequsedK as the device address of its int32 lengths', () => {
    const used = tensor([3, 7], [2], { dtype: 'int32', device: 'cuda' });
    const a = forwardArgs(
      params({ sequsedK: used }),
      zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' }),
      zeros([2, 4, 5], { device: 'cuda' }),
      0n,
      'auto',
    );
    expect(a.sequsedK).toBe(used.dataPointer());
  });

  it('passes a transposed (BSHD) view with its strides', () => {
    const dev = { dtype: 'float32' as const, device: 'cuda' as const };
    const q = randn([2, 5, 3, 8], dev).transpose(1, 2);
    const k = randn([2, 7, 3, 8], dev).transpose(1, 2);
    const v = randn([2, 7, 3, 8], dev).transpose(1, 2);
    const p = normalizeParams(q, k, v);
    const a = forwardArgs(p, zeros([2, 3, 5, 8], dev), zeros([2, 3, 5], dev), 0n, 'simt');
    expect(a.q.strides).toEqual([5 * 3 * 8, 8, 3 * 8]);
    expect(a.path).toBe('simt');
  });

  it('passes masks with their dtype code and expanded strides', () => {
    const bias = randn([5, 7], { dtype: 'float32', device: 'cuda' });
    const a = forwardArgs(
      params({ attnMask: bias }),
      zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' }),
      zeros([2, 4, 5], { device: 'cuda' }),
      0n,
      'auto',
    );
    expect(a.mask).toEqual({ kind: 1, dtype: DTYPE_CODE.float32, ptr: bias.dataPointer(), strides: [0, 0, 7, 1] });
    const keep = zeros([2, 1, 1, 7], { dtype: 'bool', device: 'cuda' });
    const b = forwardArgs(
      params({ attnMask: keep }),
      zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' }),
      zeros([2, 4, 5], { device: 'cuda' }),
      0n,
      'auto',
    );
    expect(b.mask).toMatchObject({ kind: 2, dtype: DTYPE_CODE.bool, strides: [7, 0, 0, 1] });
  });

  it("passes dropout as core's threshold, seed, offset and keep scale", () => {
    const p = params({ dropoutP: 0.25, dropoutSeed: 0x1234_5678_9abcn, dropoutOffset: 3 });
    const a = forwardArgs(
      p,
      zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' }),
      zeros([2, 4, 5], { device: 'cuda' }),
      0n,
      'auto',
    );
    expect(a.dropout).toEqual({ threshold: 2 ** 30, seed: 0x1234_5678_9abcn, offset: 3, keepScale: 1 / 0.75 });
  });
});

describe('dbiasLayout', () => {
  it('keeps strides of unbroadcast dims and zeroes summed ones', () => {
    expect(dbiasLayout([2, 4, 5, 7])).toEqual({ sizes: [2, 4, 5, 7], strides: [140, 35, 7, 1] });
    expect(dbiasLayout([5, 7])).toEqual({ sizes: [1, 1, 5, 7], strides: [0, 0, 7, 1] });
    expect(dbiasLayout([2, 1, 1, 7])).toEqual({ sizes: [2, 1, 1, 7], strides: [7, 0, 0, 1] });
    expect(dbiasLayout([4, 5, 1])).toEqual({ sizes: [1, 4, 5, 1], strides: [0, 5, 1, 0] });
    expect(dbiasLayout([])).toEqual({ sizes: [1, 1, 1, 1], strides: [0, 0, 0, 0] });
  });

  it('goes into backwardArgs with the deterministic flag and workspace', () => {
    const bias = randn([4, 5, 7], { dtype: 'float16', device: 'cuda' });
    const p = params({ attnMask: bias, deterministic: true });
    const t = (shape: number[], dtype: 'float16' | 'float32' = 'float16') => zeros(shape, { dtype, device: 'cuda' });
    const dbias = t([4, 5, 7]);
    const a = backwardArgs(
      p,
      {
        out: t([2, 4, 5, 16]),
        lse: t([2, 4, 5], 'float32'),
        gradOut: t([2, 4, 5, 16]),
        dq: t([2, 4, 5, 8]),
        dk: t([2, 2, 7, 8]),
        dv: t([2, 2, 7, 16]),
        dbias,
      },
      0n,
      { ptr: 64n, bytes: 256 },
    );
    expect(a.dbias).toEqual({ ptr: dbias.dataPointer(), sizes: [1, 4, 5, 7], strides: [0, 35, 7, 1] });
    expect(a.deterministic).toBe(true);
    expect(a.workspace).toEqual({ ptr: 64n, bytes: 256 });
    expect(a.dk.strides).toEqual([2 * 7 * 8, 7 * 8, 8]);
  });
});
