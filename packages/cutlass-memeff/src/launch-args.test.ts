// The argument arrays the addon receives, built from real SdpaParams on a fake 'cuda' device and read back
// by slot name.
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
import { BACKWARD_ABI, FORWARD_ABI, MASK_KIND, PATH_CODE } from './abi.js';
import { DTYPE_CODE, backwardArgs, dbiasLayout, forwardArgs, scratchArrays } from './launch-args.js';

type Arrays = { ptrs: BigUint64Array; nums: Float64Array };
/** The arrays as { name: value } (numbers) and { name: address } (pointers). */
function read(a: Arrays, layout: typeof FORWARD_ABI | typeof BACKWARD_ABI = FORWARD_ABI) {
  const names = <T extends string>(list: readonly T[], arr: ArrayLike<number | bigint>) =>
    Object.fromEntries(list.map((n, i) => [n, arr[i]!])) as Record<T, number | bigint>;
  return { ...names(layout.numNames, a.nums), ...names(layout.ptrNames, a.ptrs) } as Record<string, number | bigint>;
}
const slice = (a: Arrays, at: number, n: number) => [...a.nums.slice(at, at + n)];
const NUM = FORWARD_ABI.num;

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
    const args = forwardArgs(p, out, lse, 7n, 'auto');
    const a = read(args);
    expect(a).toMatchObject({
      dtype: DTYPE_CODE.float16,
      path: PATH_CODE.auto,
      batch: 2,
      headsQ: 4,
      headsKv: 2,
      seqQ: 5,
      seqK: 7,
      headDim: 8,
      headDimV: 16,
    });
    expect(slice(args, NUM.qBatchStride, 3)).toEqual([4 * 5 * 8, 5 * 8, 8]);
    expect(slice(args, NUM.vBatchStride, 3)).toEqual([2 * 7 * 16, 7 * 16, 16]);
    expect(a.q).toBe(p.query.dataPointer());
    expect(a.out).toBe(out.dataPointer());
    expect(a.lse).toBe(lse.dataPointer());
    expect(a.stream).toBe(7n);
    expect(a.scale).toBeCloseTo(1 / Math.sqrt(8));
    expect(a).toMatchObject({
      mask: 0n,
      maskKind: MASK_KIND.none,
      dropout: 0,
      seed: 0n,
      causal: 0,
      lowerRight: 0,
      windowLeft: -1,
      windowRight: -1,
      softcap: 0,
      alibi: 0n,
      cuSeqlensQ: 0n,
      cuSeqlensK: 0n,
      sequsedK: 0n,
    });
  });

  it('passes causal, the alignment and the window (a side reaching every key unbounded)', () => {
    const out = zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' });
    const lse = zeros([2, 4, 5], { dtype: 'float32', device: 'cuda' });
    const call = (opts: SdpaOptions) => read(forwardArgs(params(opts), out, lse, 0n, 'auto'));
    expect(call({ isCausal: true })).toMatchObject({ causal: 1, lowerRight: 0 });
    expect(call({ isCausal: true, alignment: 'lowerRight' })).toMatchObject({ causal: 1, lowerRight: 1 });
    expect(call({ window: [3, 0], alignment: 'lowerRight' })).toMatchObject({
      lowerRight: 1,
      windowLeft: 3,
      windowRight: 0,
    });
    expect(call({ window: [2 ** 40, 2] })).toMatchObject({ windowLeft: -1, windowRight: 2 });
  });

  it('passes softcap, and ALiBi slopes with their (batch, head) strides', () => {
    const out = zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' });
    const lse = zeros([2, 4, 5], { dtype: 'float32', device: 'cuda' });
    const perHead = randn([4], { device: 'cuda' });
    const a = forwardArgs(params({ softcap: 30, alibiSlopes: perHead }), out, lse, 0n, 'auto');
    expect(read(a)).toMatchObject({ softcap: 30, alibi: perHead.dataPointer() });
    expect(slice(a, NUM.alibiBatchStride, 2)).toEqual([0, 1]);
    const perBatch = randn([2, 4], { device: 'cuda' });
    const b = forwardArgs(params({ alibiSlopes: perBatch }), out, lse, 0n, 'auto');
    expect(read(b).alibi).toBe(perBatch.dataPointer());
    expect(slice(b, NUM.alibiBatchStride, 2)).toEqual([4, 1]);
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
    expect(read(a)).toMatchObject({
      batch: 3,
      seqQ: 5,
      seqK: 5,
      cuSeqlensQ: cuQ.dataPointer(),
      cuSeqlensK: cuK.dataPointer(),
      totalQ: 9,
      totalK: 12,
    });
    expect(slice(a, NUM.qBatchStride, 3)).toEqual([0, 8, 4 * 8]);
    expect(slice(a, NUM.vBatchStride, 3)).toEqual([0, 16, 2 * 16]);
    expect(slice(a, NUM.oBatchStride, 3)).toEqual([0, 16, 4 * 16]);
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
    expect(read(a).sequsedK).toBe(used.dataPointer());
  });

  it('passes a transposed (BSHD) view with its strides', () => {
    const dev = { dtype: 'float32' as const, device: 'cuda' as const };
    const q = randn([2, 5, 3, 8], dev).transpose(1, 2);
    const k = randn([2, 7, 3, 8], dev).transpose(1, 2);
    const v = randn([2, 7, 3, 8], dev).transpose(1, 2);
    const p = normalizeParams(q, k, v);
    const a = forwardArgs(p, zeros([2, 3, 5, 8], dev), zeros([2, 3, 5], dev), 0n, 'simt');
    expect(slice(a, NUM.qBatchStride, 3)).toEqual([5 * 3 * 8, 8, 3 * 8]);
    expect(read(a).path).toBe(PATH_CODE.simt);
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
    expect(read(a)).toMatchObject({
      maskKind: MASK_KIND.additive,
      maskDtype: DTYPE_CODE.float32,
      mask: bias.dataPointer(),
    });
    expect(slice(a, NUM.maskBatchStride, 4)).toEqual([0, 0, 7, 1]);
    const keep = zeros([2, 1, 1, 7], { dtype: 'bool', device: 'cuda' });
    const b = forwardArgs(
      params({ attnMask: keep }),
      zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' }),
      zeros([2, 4, 5], { device: 'cuda' }),
      0n,
      'auto',
    );
    expect(read(b)).toMatchObject({ maskKind: MASK_KIND.bool, maskDtype: DTYPE_CODE.bool });
    expect(slice(b, NUM.maskBatchStride, 4)).toEqual([7, 0, 0, 1]);
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
    expect(read(a)).toMatchObject({
      dropout: 1,
      dropoutThreshold: 2 ** 30,
      seed: 0x1234_5678_9abcn,
      dropoutOffset: 3,
      dropoutKeepScale: 1 / 0.75,
    });
  });
});

describe('reused arrays', () => {
  it('refill every slot: a call leaves nothing of the one before', () => {
    const out = zeros([2, 4, 5, 16], { dtype: 'float16', device: 'cuda' });
    const lse = zeros([2, 4, 5], { device: 'cuda' });
    const into = scratchArrays();
    const masked = forwardArgs(
      params({ attnMask: randn([5, 7], { device: 'cuda' }), dropoutP: 0.5, softcap: 3 }),
      out,
      lse,
      1n,
      'mma',
      into,
    );
    expect(masked.nums).toBe(into.nums);
    const plain = params();
    const again = forwardArgs(plain, out, lse, 2n, 'auto', into);
    const fresh = forwardArgs(plain, out, lse, 2n, 'auto');
    expect([...again.nums]).toEqual([...fresh.nums]);
    expect([...again.ptrs]).toEqual([...fresh.ptrs]);
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
    const b = read({ ptrs: a.bptrs, nums: a.bnums }, BACKWARD_ABI);
    const bslice = (at: number, n: number) => [...a.bnums.slice(at, at + n)];
    expect(b).toMatchObject({ dbias: dbias.dataPointer(), deterministic: 1, workspace: 64n, workspaceBytes: 256 });
    expect(bslice(BACKWARD_ABI.num.dbiasBatches, 4)).toEqual([1, 4, 5, 7]);
    expect(bslice(BACKWARD_ABI.num.dbiasBatchStride, 4)).toEqual([0, 35, 7, 1]);
    expect(bslice(BACKWARD_ABI.num.dkBatchStride, 3)).toEqual([2 * 7 * 8, 7 * 8, 8]);
    expect(read(a).mask).toBe(bias.dataPointer());
  });
});
