import {
  explain,
  registerBackend,
  tensor,
  type RuleContext,
  type SdpaOptions,
  type SdpaParams,
  type SelectionReport,
} from '@attn/core';
import { withIsolatedRegistry } from '@attn/core/testing';
import { preferredRocmFaLibrary, resetRocmFaPreference, resetWarnOnce, type FaLibraryDeps } from '@attn/rocm';
import fc from 'fast-check';
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { installFakeRocmRuntime, params, qkv, rocmTensor, varlenParams, type Qkv } from '@attn/rocm/testing';
import { makeCkBackend } from './backend.js';
import { ckNoKvCache, ckNoPagedKv, ckNoSoftcap, ckSequsedK } from './declines.js';
import { encodeCkMask, MASK_BOTTOM_RIGHT, MASK_NONE, MASK_TOP_LEFT, type CkMask } from './mask.js';
import { forwardArgs, forwardTraits } from './marshal/args.js';
import { backwardArgs, dqAccSplits } from './marshal/backward.js';

let device: { setArch(a: string): void };
beforeAll(() => {
  device = installFakeRocmRuntime('gfx942');
});
beforeEach(() => {
  resetRocmFaPreference();
  resetWarnOnce();
  device.setArch('gfx942');
  vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
});

/** CK's generic mask from an FA-style (left, right) window, per sequence. */
function ckVisible(m: CkMask, sq: number, sk: number, i: number, j: number): boolean {
  if (m.maskType === MASK_NONE) return true;
  const d = m.maskType === MASK_BOTTOM_RIGHT ? sk - sq : 0;
  return (m.left < 0 || j >= i + d - m.left) && (m.right < 0 || j <= i + d + m.right);
}
function attnVisible(
  c: { causal: boolean; window: { left: number | null; right: number | null } | null; alignment: string },
  sq: number,
  sk: number,
  i: number,
  j: number,
): boolean {
  const d = c.alignment === 'lowerRight' ? sk - sq : 0;
  if (c.causal && j > i + d) return false;
  if (c.window?.left != null && j < i + d - c.window.left) return false;
  if (c.window?.right != null && j > i + d + c.window.right) return false;
  return true;
}

describe('encodeCkMask', () => {
  const side = fc.option(fc.integer({ min: 0, max: 10 }), { nil: null });
  it('matches attn element by element in every sequence, with and without ALiBi', () => {
    fc.assert(
      fc.property(
        fc.record({
          causal: fc.boolean(),
          window: fc.option(fc.record({ left: side, right: side }), { nil: null }),
          alignment: fc.constantFrom('upperLeft', 'lowerRight') as fc.Arbitrary<'upperLeft' | 'lowerRight'>,
        }),
        fc.boolean(),
        fc.array(fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 })), {
          minLength: 1,
          maxLength: 3,
        }),
        (c, alibi, seqs) => {
          const m = encodeCkMask({
            ...c,
            seqQ: Math.max(...seqs.map((s) => s[0])),
            seqK: Math.max(...seqs.map((s) => s[1])),
            alibiSlopes: alibi ? ({} as never) : null,
          });
          if (alibi && m.left < 0 && m.right === 0) return false; // would switch CK's ALiBi to its vertical variant
          return seqs.every(([sq, sk]) => {
            for (let i = 0; i < sq; i++)
              for (let j = 0; j < sk; j++)
                if (ckVisible(m, sq, sk, i, j) !== attnVisible(c, sq, sk, i, j)) return false;
            return true;
          });
        },
      ),
      { numRuns: 300 },
    );
  });
  it('anchors by attn alignment (PyTorch always anchors bottom-right)', () => {
    expect(
      encodeCkMask({ causal: true, window: null, alignment: 'upperLeft', seqQ: 4, seqK: 8, alibiSlopes: null }),
    ).toEqual({ maskType: MASK_TOP_LEFT, left: -1, right: 0 });
    expect(
      encodeCkMask({ causal: true, window: null, alignment: 'lowerRight', seqQ: 4, seqK: 8, alibiSlopes: null }),
    ).toEqual({ maskType: MASK_BOTTOM_RIGHT, left: -1, right: 0 });
  });
  it('upperLeft ALiBi without a mask gets an open top-left mask (CK anchors unmasked ALiBi bottom-right)', () => {
    expect(
      encodeCkMask({ causal: false, window: null, alignment: 'upperLeft', seqQ: 4, seqK: 8, alibiSlopes: {} as never })
        .maskType,
    ).toBe(MASK_TOP_LEFT);
    expect(
      encodeCkMask({ causal: false, window: null, alignment: 'lowerRight', seqQ: 4, seqK: 8, alibiSlopes: {} as never })
        .maskType,
    ).toBe(MASK_NONE);
    expect(
      encodeCkMask({ causal: false, window: null, alignment: 'upperLeft', seqQ: 8, seqK: 8, alibiSlopes: {} as never })
        .maskType,
    ).toBe(MASK_NONE);
  });
  it('varlen upperLeft ALiBi always gets the open top-left mask: a sequence may have Sq != Sk (or fewer used keys) where the maxima agree', () => {
    const p = varlenParams([3, 8], 2, 64, { kLens: [8, 3], alibiSlopes: rocmTensor([2], { dtype: 'float32' }) });
    expect([p.seqQ, p.seqK]).toEqual([8, 8]);
    expect(encodeCkMask(p)).toEqual({ maskType: MASK_TOP_LEFT, left: -1, right: -1 });
  });
});

describe('CK args', () => {
  it('BHSD strides become row / nhead / batch strides; lse is [B, Hq, Sq]', () => {
    const t = qkv(2, 4, 16, 32, 64);
    const kStore = rocmTensor([2, 32, 4, 64]);
    t.k = kStore.transpose(1, 2);
    const p = params(t, { isCausal: true, alignment: 'lowerRight' });
    const out = rocmTensor([2, 4, 16, 64]);
    const lse = rocmTensor([2, 4, 16], { dtype: 'float32' });
    const a = forwardArgs(p, { out, lse });
    expect([a.stride_q, a.nhead_stride_q, a.batch_stride_q]).toEqual([64, 1024, 4096]);
    expect([a.stride_k, a.nhead_stride_k, a.batch_stride_k]).toEqual([256, 64, 32 * 256]);
    expect(a.k_ptr).toBe(kStore.dataPointer());
    expect([a.nhead_stride_lse, a.batch_stride_lse]).toEqual([16, 64]);
    expect([a.mask_type, a.window_size_left, a.window_size_right]).toEqual([MASK_BOTTOM_RIGHT, -1, 0]);
    expect([a.seqlen_q, a.seqlen_k, a.nhead_q, a.nhead_k, a.seqstart_q_ptr]).toEqual([16, 32, 4, 4, 0n]);
    expect(forwardTraits(p)).toMatchObject({
      hdim_q: 64,
      data_type: 'fp16',
      is_group_mode: false,
      mask_type: MASK_BOTTOM_RIGHT,
      bias_type: 0,
      has_lse: true,
    });
  });
  it('group mode (varlen): row = stride(0), nhead = stride(1), batch 0, seqstart pointers, lse [Hq, T]', () => {
    const p = varlenParams([3, 5], 4, 64);
    const a = forwardArgs(p, { out: rocmTensor([8, 4, 64]), lse: rocmTensor([4, 8], { dtype: 'float32' }) });
    expect([a.stride_q, a.nhead_stride_q, a.batch_stride_q]).toEqual([256, 64, 0]);
    expect([a.nhead_stride_lse, a.batch_stride_lse]).toEqual([8, 0]);
    expect(a.seqstart_q_ptr).toBe(p.varlen!.cuSeqlensQ.dataPointer());
    expect(forwardTraits(p).is_group_mode).toBe(true);
  });
  it('elementwise bias strides and ALiBi slopes strides', () => {
    const t = qkv(2, 4, 8, 8, 64);
    const bias = rocmTensor([4, 8, 8]);
    const pb = params(t, { attnMask: bias });
    const ab = forwardArgs(pb, { out: rocmTensor([2, 4, 8, 64]), lse: rocmTensor([2, 4, 8], { dtype: 'float32' }) });
    expect([ab.bias_ptr, ab.stride_bias, ab.nhead_stride_bias, ab.batch_stride_bias]).toEqual([
      bias.dataPointer(),
      8,
      64,
      0,
    ]);
    expect(forwardTraits(pb).bias_type).toBe(1);
    const slopes = rocmTensor([2, 4], { dtype: 'float32' });
    const pa = params(t, { alibiSlopes: slopes });
    const aa = forwardArgs(pa, { out: rocmTensor([2, 4, 8, 64]), lse: rocmTensor([2, 4, 8], { dtype: 'float32' }) });
    expect([aa.bias_ptr, aa.stride_bias]).toEqual([slopes.dataPointer(), 4]);
    expect(forwardTraits(pa).bias_type).toBe(2);
  });
  it('backward: dq_acc splits when deterministic, lse/d strides, dbias strides', () => {
    const t = qkv(1, 2, 8, 300, 64);
    expect(dqAccSplits(params(t, { requiresGrad: true }))).toBe(1);
    expect(dqAccSplits(params(t, { requiresGrad: true, deterministic: true }))).toBe(3);
    const p = params(qkv(1, 2, 8, 8, 64), { requiresGrad: true });
    const f32 = { dtype: 'float32' as const };
    const a = backwardArgs(p, {
      out: rocmTensor([1, 2, 8, 64]),
      lse: rocmTensor([1, 2, 8], f32),
      gradOut: rocmTensor([1, 2, 8, 64]),
      d: rocmTensor([1, 2, 8], f32),
      dq: rocmTensor([1, 2, 8, 64]),
      dk: rocmTensor([1, 2, 8, 64]),
      dv: rocmTensor([1, 2, 8, 64]),
      dbias: null,
      dqAcc: rocmTensor([1, 1, 2, 8, 64], f32),
    });
    expect([
      a.nhead_stride_lsed,
      a.batch_stride_lsed,
      a.stride_dq_acc,
      a.nhead_stride_dq_acc,
      a.split_stride_dq_acc,
    ]).toEqual([8, 16, 64, 512, 1024]);
    expect(a.dbias_ptr).toBe(0n);
  });
});

function report(t: Qkv, opts: SdpaOptions, preferCk = true, bwdDqAccLayout: boolean | null = null): SelectionReport {
  const fa = (): FaLibraryDeps => ({
    probe: (lib) =>
      lib === 'ck'
        ? { library: 'ck', availability: () => ({ ok: true }), archs: ['gfx90a', 'gfx942', 'gfx950'] }
        : undefined,
    visibleArchs: () => ({ ok: true, archs: ['gfx942'] }),
  });
  if (preferCk) preferredRocmFaLibrary('ck', fa());
  else resetRocmFaPreference();
  return withIsolatedRegistry(() => {
    registerBackend(makeCkBackend('flash', fa, () => bwdDqAccLayout));
    registerBackend(makeCkBackend('efficient', fa, () => bwdDqAccLayout));
    return explain(t.q, t.k, t.v, opts);
  });
}
const failing = (r: SelectionReport, b: string) =>
  r.candidates.find((c) => c.backend === b)!.reasons.map((x) => x.rule);
const message = (r: SelectionReport, b: string, rule: string) =>
  r.candidates.find((c) => c.backend === b)!.reasons.find((x) => x.rule === rule)?.message ?? '';

describe('CK rules', () => {
  it('with CK preferred: fp16 attention passes; ALiBi and windows too', () => {
    expect(failing(report(qkv(1, 2, 16, 16, 128), {}), 'ck-flash')).toEqual([]);
    expect(
      failing(
        report(qkv(1, 2, 16, 16, 64), { alibiSlopes: rocmTensor([2], { dtype: 'float32' }), window: [4, 0] }),
        'ck-flash',
      ),
    ).toEqual([]);
  });
  it('AOTriton by default: CK declines and says how to prefer it', () => {
    expect(message(report(qkv(1, 2, 16, 16, 64), {}, false), 'ck-flash', 'rocmFaLibrary')).toMatch(
      /AOTriton is the preferred.*call preferredRocmFaLibrary\('ck'\)/,
    );
  });
  it('head dims 32..256, multiples of 8; fp16/bf16 only; archs gfx90a/942/950', () => {
    expect(message(report(qkv(1, 1, 8, 8, 512), {}), 'ck-flash', 'ckHeadDim')).toMatch(/32 to 256/);
    expect(message(report(qkv(1, 1, 8, 8, 16), {}), 'ck-flash', 'ckHeadDim')).toMatch(/32 to 256/);
    expect(failing(report(qkv(1, 1, 8, 8, 100), {}), 'ck-flash')).toContain('headDimMultipleOf(8)');
    expect(failing(report(qkv(1, 1, 8, 8, 64, { dtype: 'float32' }), {}), 'ck-efficient')).toContain(
      'dtypeIn(float16, bfloat16)',
    );
    device.setArch('gfx1100');
    expect(message(report(qkv(1, 1, 8, 8, 64), {}), 'ck-flash', 'ckArch')).toMatch(
      /gfx90a, gfx942, gfx950 only; this GPU is gfx1100/,
    );
  });
  it('GQA on flash, forward and backward; not on efficient', () => {
    const t = qkv(1, 8, 16, 16, 64, { hk: 2 });
    expect(failing(report(t, { enableGqa: true }), 'ck-flash')).toEqual([]);
    expect(failing(report(t, { enableGqa: true, requiresGrad: true }), 'ck-flash')).toEqual([]);
    expect(failing(report(t, { enableGqa: true }), 'ck-efficient')).toContain(
      'batchAndHeads(gqa=false, sameKvHeads=true, mqa=false)',
    );
  });
  it('backward is declined on a CK whose fmha_bwd_args has the workspace layout; forward still runs', () => {
    const t = qkv(1, 2, 16, 16, 64);
    for (const b of ['ck-flash', 'ck-efficient']) {
      expect(message(report(t, { requiresGrad: true }, true, false), b, 'ckBackwardLayout')).toMatch(
        /workspace_ptr, sized by fmha_bwd_launcher/,
      );
      expect(failing(report(t, {}, true, false), b)).toEqual([]);
      expect(failing(report(t, { requiresGrad: true }, true, true), b)).toEqual([]);
    }
  });
  it('bias on efficient only; dropout declined', () => {
    const t = qkv(1, 2, 16, 16, 64);
    const r = report(t, { attnMask: rocmTensor([16, 16]) });
    expect(failing(r, 'ck-flash')).toContain('noAttnMask');
    expect(failing(r, 'ck-efficient')).toEqual([]);
    expect(message(report(t, { dropoutP: 0.2 }), 'ck-flash', 'noDropout')).toMatch(
      /checked at 8e22e1ae\) with its own Philox counter layout \(8-bit random values per warp tile, kept when <= floor\(\(1 - p\) \* 255\)/,
    );
  });
  it("takes the call's out (fmha_fwd_args writes o_ptr with its strides)", () => {
    for (const b of ['ck-flash', 'ck-efficient'])
      expect(failing(report(qkv(1, 2, 16, 16, 64), { out: rocmTensor([1, 2, 16, 64]) }), b)).toEqual([]);
  });
  it("declines softcap, sequsedK, paged K/V and sdpaKvCache with CK's reason", () => {
    const ctx = {} as RuleContext;
    const p = (fields: Partial<Record<keyof SdpaParams, unknown>>): SdpaParams =>
      ({ softcap: 0, sequsedK: null, paged: null, kvCache: null, varlen: null, ...fields }) as unknown as SdpaParams;
    expect(ckNoSoftcap.check(p({ softcap: 30 }), ctx)).toMatch(
      /fmha_bwd has no logits soft cap .*only after 8e22e1ae \(logits_soft_cap\)/,
    );
    expect(ckSequsedK.check(p({ sequsedK: {} }), ctx)).toMatch(
      /seqlen_k_ptr\) only in group \(varlen\) mode, never for dense/,
    );
    expect(ckSequsedK.check(p({ sequsedK: {}, varlen: {}, indexValuesOnDevice: true }), ctx)).toMatch(
      /without clamping it .* leave indexValuesOnDevice unset/,
    );
    expect(ckSequsedK.check(p({ sequsedK: {}, varlen: {}, indexValuesOnDevice: false }), ctx)).toBeNull();
    expect(ckNoPagedKv.check(p({ paged: {} }), ctx)).toMatch(
      /no block table \(paged K\/V is only in CK's fmha_fwd_splitkv/,
    );
    expect(ckNoKvCache.check(p({ kvCache: {} }), ctx)).toMatch(/fmha_fwd_appendkv and fmha_fwd_splitkv/);
    for (const r of [ckNoSoftcap, ckSequsedK, ckNoPagedKv, ckNoKvCache]) expect(r.check(p({}), ctx)).toBeNull();
  });
  it('varlen sequsedK becomes seqlen_k_ptr in the forward and backward args (dense passes none)', () => {
    const used = tensor([2, 0], [2], { dtype: 'int32', device: 'rocm' });
    const p = varlenParams([3, 5], 2, 64, { kLens: [4, 6], sequsedK: used });
    const f32 = { dtype: 'float32' as const };
    const fwd = forwardArgs(p, { out: rocmTensor([8, 2, 64]), lse: rocmTensor([2, 8], f32) });
    expect(fwd.seqlen_k_ptr).toBe(used.dataPointer());
    const bwd = backwardArgs(p, {
      out: rocmTensor([8, 2, 64]),
      lse: rocmTensor([2, 8], f32),
      gradOut: rocmTensor([8, 2, 64]),
      d: rocmTensor([2, 8], f32),
      dq: rocmTensor([8, 2, 64]),
      dk: rocmTensor([10, 2, 64]),
      dv: rocmTensor([10, 2, 64]),
      dbias: null,
      dqAcc: rocmTensor([1, 2, 8, 64], f32),
    });
    expect(bwd.seqlen_k_ptr).toBe(used.dataPointer());
    expect(
      forwardArgs(params(qkv(1, 2, 8, 8, 64)), { out: rocmTensor([1, 2, 8, 64]), lse: rocmTensor([1, 2, 8], f32) })
        .seqlen_k_ptr,
    ).toBe(0n);
    expect(
      failing(
        report(qkv(1, 2, 8, 8, 64), { sequsedK: tensor([4], [1], { dtype: 'int32', device: 'rocm' }) }),
        'ck-flash',
      ),
    ).toContain('ckSequsedK');
  });
});
