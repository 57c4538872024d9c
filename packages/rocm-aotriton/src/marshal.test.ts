import { tensor } from '@attn/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { installFakeRocmRuntime, params, qkv, rocmTensor, varlenParams } from '@attn/rocm/testing';
import { backwardArgs } from './marshal/backward.js';
import { forwardArgs } from './marshal/forward.js';
import { FULLY_MASKED_BELOW, lseConvertArgs } from './marshal/lse.js';
import { planForward } from './marshal/plan.js';
import { AOT_DTYPE } from './marshal/tensor-view.js';
import { WINDOW_TOP_LEFT_ALIGNED } from './window.js';

beforeAll(() => installFakeRocmRuntime());

describe('forwardArgs, dense', () => {
  it('passes q/k/v as BHSD views with their strides and offsets, and L aliasing attn logsumexp', () => {
    const t = qkv(2, 4, 16, 32, 64);
    // A transposed key (BSHD storage viewed as BHSD) keeps its strides: no copy.
    const kStore = rocmTensor([2, 32, 4, 64]);
    t.k = kStore.transpose(1, 2);
    const p = params(t, { scale: 0.125 });
    const plan = planForward(p);
    expect(plan).toMatchObject({
      outShape: [2, 4, 16, 64],
      lseShape: [2, 4, 16],
      aotLse: 'alias',
      aotLseShape: [8, 16],
      atomicCounter: false,
    });
    const out = rocmTensor([2, 4, 16, 64]);
    const lse = rocmTensor([8, 16], { dtype: 'float32' });
    const a = forwardArgs(p, { out, aotLse: lse, atomicCounter: null });
    expect(a.Q).toEqual({
      ptr: t.q.dataPointer(),
      sizes: [2, 4, 16, 64],
      strides: [4096, 1024, 64, 1],
      dtype: AOT_DTYPE.float16,
    });
    expect(a.K.strides).toEqual([32 * 4 * 64, 64, 4 * 64, 1]);
    expect(a.K.ptr).toBe(kStore.dataPointer());
    expect(a.L).toEqual({ ptr: lse.dataPointer(), sizes: [8, 16], strides: [16, 1], dtype: AOT_DTYPE.float32 });
    expect(a.Out.ptr).toBe(out.dataPointer());
    expect(a.Sm_scale).toBe(0.125);
    expect([a.Max_seqlen_q, a.Max_seqlen_k, a.varlen_type, a.causal_type]).toEqual([16, 32, 0, 0]);
    expect(a.B.ptr).toBe(0n);
    expect(a.A.ptr).toBe(0n);
    expect(a.cu_seqlens_q.ptr).toBe(0n);
    expect(a.dropout_p).toBe(0);
    expect(a.philox_seed_ptr.ptr).toBe(0n);
    expect(a.persistent_atomic_counter.ptr).toBe(0n);
  });

  it('applies a view offset to the pointer', () => {
    const base = rocmTensor([3, 4, 8, 64]);
    const q = base.narrow(0, 1, 2);
    const t = qkv(2, 4, 8, 8, 64);
    t.q = q;
    const a = forwardArgs(params(t), {
      out: rocmTensor([2, 4, 8, 64]),
      aotLse: rocmTensor([8, 8], { dtype: 'float32' }),
      atomicCounter: null,
    });
    expect(a.Q.ptr).toBe(base.dataPointer() + BigInt(4 * 8 * 64 * 2));
  });

  it('causal needs and gets the atomic counter; the window goes in as sentinels', () => {
    const p = params(qkv(1, 2, 8, 8, 64), { isCausal: true });
    expect(planForward(p).atomicCounter).toBe(true);
    const buf = { out: rocmTensor([1, 2, 8, 64]), aotLse: rocmTensor([2, 8], { dtype: 'float32' }) };
    expect(() => forwardArgs(p, { ...buf, atomicCounter: null })).toThrow(/atomic counter/);
    const a = forwardArgs(p, { ...buf, atomicCounter: 0xabcn });
    expect(a.persistent_atomic_counter).toEqual({ ptr: 0xabcn, sizes: [], strides: [], dtype: AOT_DTYPE.int32 });
    expect([a.causal_type, a.window_left, a.window_right]).toEqual([
      3,
      WINDOW_TOP_LEFT_ALIGNED,
      WINDOW_TOP_LEFT_ALIGNED,
    ]);
  });

  it('an additive bias becomes B with zero strides on broadcast dims', () => {
    const t = qkv(2, 4, 8, 16, 64, { dtype: 'float32' });
    const mask = rocmTensor([8, 16], { dtype: 'float32' });
    const p = params(t, { attnMask: mask });
    const a = forwardArgs(p, {
      out: rocmTensor([2, 4, 8, 64], { dtype: 'float32' }),
      aotLse: rocmTensor([8, 8], { dtype: 'float32' }),
      atomicCounter: null,
    });
    expect(a.B).toEqual({
      ptr: mask.dataPointer(),
      sizes: [2, 4, 8, 16],
      strides: [0, 0, 16, 1],
      dtype: AOT_DTYPE.float32,
    });
  });

  it('dropout, if it ever reaches the marshaller, needs the seed/offset words and passes them as uint64 scalars', () => {
    const p = params(qkv(1, 1, 4, 4, 64), { dropoutP: 0.25, dropoutSeed: 7n, dropoutOffset: 3 });
    const buf = {
      out: rocmTensor([1, 1, 4, 64]),
      aotLse: rocmTensor([1, 4], { dtype: 'float32' }),
      atomicCounter: null,
    };
    expect(() => forwardArgs(p, buf)).toThrow(/Philox seed and offset/);
    const a = forwardArgs(p, { ...buf, philox: { seedPtr: 0x100n, offsetPtr: 0x108n } });
    expect(a.dropout_p).toBe(0.25);
    expect(a.philox_seed_ptr).toEqual({ ptr: 0x100n, sizes: [], strides: [], dtype: AOT_DTYPE.uint64 });
    expect(a.philox_offset1.ptr).toBe(0x108n);
    expect(a.philox_offset2).toBe(0n);
  });
});

describe('forwardArgs, varlen', () => {
  it('packed [T, H, D] becomes (1, H, T, D); cu_seqlens are int32 views; L is a scratch', () => {
    const p = varlenParams([3, 5], 4, 64);
    const plan = planForward(p);
    expect(plan).toMatchObject({ outShape: [8, 4, 64], lseShape: [4, 8], aotLse: 'scratch', aotLseShape: [8, 5] });
    const out = rocmTensor([8, 4, 64]);
    const a = forwardArgs(p, { out, aotLse: rocmTensor([8, 5], { dtype: 'float32' }), atomicCounter: null });
    expect(a.Q.sizes).toEqual([1, 4, 8, 64]);
    expect(a.Q.strides).toEqual([8 * 256, 64, 256, 1]);
    expect(a.Out.ptr).toBe(out.dataPointer());
    expect(a.cu_seqlens_q).toMatchObject({
      ptr: p.varlen!.cuSeqlensQ.dataPointer(),
      sizes: [3],
      dtype: AOT_DTYPE.int32,
    });
    expect([a.Max_seqlen_q, a.Max_seqlen_k, a.varlen_type]).toEqual([5, 5, 1]);
  });

  it('lse conversion arguments carry the varlen geometry', () => {
    const p = varlenParams([3, 5], 4, 64);
    const aot = rocmTensor([8, 5], { dtype: 'float32' });
    const attn = rocmTensor([4, 8], { dtype: 'float32' });
    expect(lseConvertArgs(p, 'toAttn', aot, attn)).toEqual({
      direction: 'toAttn',
      aot: aot.dataPointer(),
      attn: attn.dataPointer(),
      headsQ: 4,
      sequences: 2,
      maxSeqlenQ: 5,
      totalQ: 8,
      cuSeqlensQ: p.varlen!.cuSeqlensQ.dataPointer(),
      fullyMaskedBelow: FULLY_MASKED_BELOW,
    });
  });
});

describe('backwardArgs', () => {
  it('wires outputs, gradients, scratch and the bias gradient', () => {
    const t = qkv(1, 2, 4, 4, 64, { dtype: 'float32' });
    const mask = tensor(new Array(1 * 2 * 4 * 4).fill(0), [1, 2, 4, 4], { dtype: 'float32', device: 'rocm' });
    const p = params(t, { attnMask: mask, requiresGrad: true, isCausal: true });
    const f32 = { dtype: 'float32' as const };
    const buf = {
      out: rocmTensor([1, 2, 4, 64], f32),
      gradOut: rocmTensor([1, 2, 4, 64], f32),
      dq: rocmTensor([1, 2, 4, 64], f32),
      dk: rocmTensor([1, 2, 4, 64], f32),
      dv: rocmTensor([1, 2, 4, 64], f32),
      dbias: rocmTensor([1, 2, 4, 4], f32),
      aotLse: rocmTensor([2, 4], f32),
      delta: rocmTensor([2, 4], f32),
      dqAcc: rocmTensor([1, 2, 4, 64], f32),
    };
    const a = backwardArgs(p, buf);
    expect(a.DO.ptr).toBe(buf.gradOut.dataPointer());
    expect(a.DQ.ptr).toBe(buf.dq.dataPointer());
    expect(a.DB).toEqual({
      ptr: buf.dbias.dataPointer(),
      sizes: [1, 2, 4, 4],
      strides: [32, 16, 4, 1],
      dtype: AOT_DTYPE.float32,
    });
    expect(a.B.ptr).toBe(mask.dataPointer());
    expect(a.L.ptr).toBe(buf.aotLse.dataPointer());
    expect(a.D.ptr).toBe(buf.delta.dataPointer());
    expect(a.DQ_ACC.ptr).toBe(buf.dqAcc.dataPointer());
    expect(a.causal_type).toBe(3);
    expect(() => backwardArgs(p, { ...buf, dbias: null })).toThrow(/dbias buffer/);
  });
});
