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
import { accumulatesInFloat64, backwardArgs, DTYPE_CODE, forwardArgs } from './launch-args.js';

beforeAll(() => registerDeviceRuntime(makeFakeDeviceRuntime({ type: 'cuda' })));

const dev = { dtype: 'float16' as const, device: 'cuda' as const };

function params(opts: SdpaOptions = {}) {
  return normalizeParams(
    randn([2, 4, 5, 8], { ...dev, seed: 1 }),
    randn([2, 2, 7, 8], { ...dev, seed: 2 }),
    randn([2, 2, 7, 16], { ...dev, seed: 3 }),
    {
      enableGqa: true,
      ...opts,
    },
  );
}

const outputs = () => ({ out: zeros([2, 4, 5, 16], dev), lse: zeros([2, 4, 5], { dtype: 'float32', device: 'cuda' }) });

describe('forwardArgs', () => {
  it('passes sizes, every tensor with its shape, strides and dtype, and the pointer at the view offset', () => {
    const p = params();
    const { out, lse } = outputs();
    const a = forwardArgs(p, out, lse);
    expect(a).toMatchObject({
      device: 0,
      dtype: DTYPE_CODE.float16,
      batch: 2,
      headsQ: 4,
      headsKV: 2,
      seqQ: 5,
      seqK: 7,
      headDim: 8,
      headDimV: 16,
    });
    expect(a.q).toEqual({ ptr: p.query.dataPointer(), dtype: 2, shape: [2, 4, 5, 8], strides: [160, 40, 8, 1] });
    expect(a.lse).toMatchObject({ dtype: DTYPE_CODE.float32, shape: [2, 4, 5] });
    expect(a).toMatchObject({
      cuSeqlensQ: null,
      cuSeqlensK: null,
      sequsedK: null,
      alibi: null,
      mask: null,
      dropout: null,
      softcap: 0,
    });
    expect(a).toMatchObject({ causal: false, lowerRight: false, windowLeft: -1, windowRight: -1 });
    const view = randn([2, 5, 4, 8], dev).transpose(1, 2);
    expect(forwardArgs(normalizeParams(view, view, view), out, lse).q.strides).toEqual([160, 8, 32, 1]);
  });

  it('passes causal and its alignment, the window through kernelWindow, the mask tensor as given, dropout', () => {
    const mask = randn([7, 5], { device: 'cuda' }).transpose(0, 1);
    const slopes = randn([4], { device: 'cuda' });
    const p = params({
      isCausal: true,
      alignment: 'lowerRight',
      window: [2 ** 40, 3],
      attnMask: mask,
      alibiSlopes: slopes,
      dropoutP: 0.25,
      dropoutSeed: 2n ** 63n + 5n,
      dropoutOffset: 9,
    });
    const { out, lse } = outputs();
    const a = forwardArgs(p, out, lse);
    expect(a).toMatchObject({ causal: true, lowerRight: true, windowLeft: -1, windowRight: 3 });
    expect(a.mask).toEqual({ ptr: mask.dataPointer(), dtype: DTYPE_CODE.float32, shape: [5, 7], strides: [1, 5] });
    expect(a.alibi).toMatchObject({ dtype: DTYPE_CODE.float32, shape: [4], strides: [1] });
    expect(a.dropout).toEqual({ threshold: 2 ** 30, offset: 9, seed: 2n ** 63n + 5n, keepScale: 1 / 0.75 });
  });

  it("passes sequsedK as core's host copy", () => {
    const used = tensor(Int32Array.of(7, 0), [2], { dtype: 'int32', device: 'cuda' });
    const p = params({ sequsedK: used });
    const { out, lse } = outputs();
    expect(Array.from(forwardArgs(p, out, lse).sequsedK!)).toEqual([7, 0]);
  });

  it('passes varlen offsets as host copies', () => {
    const cu = tensor(Int32Array.of(0, 2, 5), [3], { dtype: 'int32', device: 'cuda' });
    const q = randn([5, 4, 8], dev);
    const p = normalizeVarlenParams(q, randn([5, 2, 8], dev), randn([5, 2, 8], dev), {
      cuSeqlensQ: cu,
      cuSeqlensK: cu,
      maxSeqlenQ: 3,
      maxSeqlenK: 4,
      enableGqa: true,
    });
    const a = forwardArgs(p, zeros([5, 4, 8], dev), zeros([4, 5], { dtype: 'float32', device: 'cuda' }));
    expect(Array.from(a.cuSeqlensQ!)).toEqual([0, 2, 5]);
    expect(Array.from(a.cuSeqlensK!)).toEqual([0, 2, 5]);
    expect(a).toMatchObject({ batch: 2, seqQ: 3, seqK: 4 });
    expect(a.q.shape).toEqual([5, 4, 8]);
    expect(a).toMatchObject({ blockTable: null, blockSize: 0 });
  });

  it("passes paged K/V as the pools and core's host copy of the block table", () => {
    const i32 = (xs: number[], shape: number[]) =>
      tensor(Int32Array.from(xs), shape, { dtype: 'int32', device: 'cuda' });
    const pool = randn([4, 3, 2, 8], dev);
    const p = normalizeVarlenParams(randn([5, 4, 8], dev), pool, pool, {
      cuSeqlensQ: i32([0, 2, 5], [3]),
      cuSeqlensK: i32([0, 4, 6], [3]),
      maxSeqlenQ: 3,
      maxSeqlenK: 4,
      enableGqa: true,
      blockTable: i32([3, 1, 0, 9], [2, 2]),
    });
    const a = forwardArgs(p, zeros([5, 4, 8], dev), zeros([4, 5], { dtype: 'float32', device: 'cuda' }));
    expect(Array.from(a.blockTable!)).toEqual([3, 1, 0, 9]);
    expect(a.blockSize).toBe(3);
    expect(a.k).toMatchObject({ shape: [4, 3, 2, 8], strides: [48, 16, 8, 1] });
    expect(Array.from(a.cuSeqlensK!)).toEqual([0, 4, 6]);
  });
});

describe('backwardArgs', () => {
  it('adds dO and the gradients; dbias only with one', () => {
    const p = params();
    const { out, lse } = outputs();
    const g = {
      out,
      lse,
      gradOut: zeros([2, 4, 5, 16], dev),
      dq: zeros([2, 4, 5, 8], dev),
      dk: zeros([2, 2, 7, 8], dev),
      dv: zeros([2, 2, 7, 16], dev),
      dbias: null,
    };
    const a = backwardArgs(p, g);
    expect(a.dout.shape).toEqual([2, 4, 5, 16]);
    expect(a.dk.shape).toEqual([2, 2, 7, 8]);
    expect(a.dbias).toBeNull();
    const dbias = zeros([1, 4, 1, 7], dev);
    expect(backwardArgs(p, { ...g, dbias }).dbias).toMatchObject({ shape: [1, 4, 1, 7], dtype: DTYPE_CODE.float16 });
  });
});

describe('accumulatesInFloat64', () => {
  it('for float64, and where scale or softcap overflow float32 (core float32Scalars)', () => {
    expect(accumulatesInFloat64({ dtype: 'float64', scale: 1, softcap: 0 })).toBe(true);
    expect(accumulatesInFloat64({ dtype: 'float32', scale: 3.4e38, softcap: 0 })).toBe(false);
    expect(accumulatesInFloat64({ dtype: 'float16', scale: 1e39, softcap: 0 })).toBe(true);
    expect(accumulatesInFloat64({ dtype: 'bfloat16', scale: 1, softcap: -1e39 })).toBe(true);
  });
});
