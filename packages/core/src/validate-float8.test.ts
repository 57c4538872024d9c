// float8_e4m3 inputs (SdpaOptions.descale): validation (ATTN_DESCALE, ATTN_FLOAT8 and the mask and out
// checks), the params backends see, the float8Inputs rule selection adds to every backend that does not
// take them (on the call path and in explain), and the call cache keeping fp8 and bf16 calls apart.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Rule } from './backend.js';
import { sdpaBackwardFrom } from './backward-from.js';
import { callCacheSize, clearCallCache } from './call-cache.js';
import type { DType, QkvDType } from './dtype.js';
import { AttnInputError } from './errors.js';
import { empty, tensor, zeros } from './factory.js';
import { normalizeKvCacheParams } from './kv-cache.js';
import type { Descale, SdpaOptions, SdpaParams } from './params.js';
import { registerBackend } from './registry.js';
import { NoBackendError } from './report.js';
import { dtypeIn } from './rules.js';
import { explain, sdpa, sdpaBackward, sdpaForward, sdpaForwardAsync } from './sdpa.js';
import { describeCall } from './select.js';
import type { Tensor } from './tensor.js';
import { isolateRegistry, makeFakeBackend, nanOutputs } from './testing.js';
import { normalizeParams } from './validate.js';
import { normalizeVarlenParams } from './varlen.js';

const ONE: Descale = { q: 1, k: 1, v: 1 };

function qkv(dtype: QkvDType = 'float8_e4m3', Sq = 3, Sk = 5): [Tensor, Tensor, Tensor] {
  return [zeros([1, 2, Sq, 8], { dtype }), zeros([1, 2, Sk, 8], { dtype }), zeros([1, 2, Sk, 8], { dtype })];
}

function codeOf(call: () => unknown): { code: string; message: string } {
  try {
    call();
  } catch (e) {
    expect(e).toBeInstanceOf(AttnInputError);
    return { code: (e as AttnInputError).code, message: (e as Error).message };
  }
  throw new Error('expected the call to throw');
}

const fp8 = (opts: SdpaOptions = {}) => normalizeParams(...qkv(), { descale: ONE, ...opts });

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry();
  clearCallCache();
});
afterEach(() => restore());

describe('float8_e4m3 validation', () => {
  it('gives bfloat16 params.dtype, the frozen factors, and inputs that keep their dtype', () => {
    const p = fp8({ descale: { q: 0.25, k: 3, v: 1.5 } });
    expect(p.dtype).toBe('bfloat16');
    expect(p.descale).toEqual({ q: 0.25, k: 3, v: 1.5 });
    expect(Object.isFrozen(p.descale)).toBe(true);
    expect([p.query.dtype, p.key.dtype, p.value.dtype]).toEqual(['float8_e4m3', 'float8_e4m3', 'float8_e4m3']);
    const plain = normalizeParams(...qkv('bfloat16'));
    expect(plain.descale).toBeNull();
    expect(normalizeParams(...qkv('bfloat16'), { descale: null }).descale).toBeNull();
  });

  it('refuses a mix of float8_e4m3 and other dtypes (ATTN_DTYPE_MISMATCH)', () => {
    const [q, k, v] = qkv();
    const k16 = zeros(k.shape, { dtype: 'bfloat16' });
    expect(codeOf(() => normalizeParams(q, k16, v, { descale: ONE })).code).toBe('ATTN_DTYPE_MISMATCH');
    expect(codeOf(() => normalizeParams(q, k, zeros(v.shape), { descale: ONE })).code).toBe('ATTN_DTYPE_MISMATCH');
  });

  it('requires descale exactly with float8_e4m3 inputs (ATTN_DESCALE)', () => {
    const missing = codeOf(() => normalizeParams(...qkv()));
    expect(missing.code).toBe('ATTN_DESCALE');
    expect(missing.message).toMatch(/need descale/);
    expect(codeOf(() => fp8({ descale: null })).code).toBe('ATTN_DESCALE');
    for (const dtype of ['float32', 'bfloat16', 'float16', 'float64'] as const) {
      const given = codeOf(() => normalizeParams(...qkv(dtype), { descale: ONE }));
      expect(given.code).toBe('ATTN_DESCALE');
      expect(given.message).toMatch(new RegExp(`float8_e4m3 inputs only; query, key and value are ${dtype}`));
    }
  });

  it('refuses every factor that is not a finite number > 0, naming it (ATTN_DESCALE)', () => {
    const bad: unknown[] = [0, -0, -1, Number.NaN, Infinity, -Infinity, '1', null, undefined, 1n];
    for (const key of ['q', 'k', 'v'] as const) {
      for (const x of bad) {
        const e = codeOf(() => fp8({ descale: { ...ONE, [key]: x } as never }));
        expect(e.code, `${key} = ${String(x)}`).toBe('ATTN_DESCALE');
        expect(e.message).toMatch(new RegExp(`descale\\.${key} must be a finite number > 0`));
      }
    }
    expect(codeOf(() => fp8({ descale: [1, 1, 1] as never })).code).toBe('ATTN_DESCALE');
    expect(codeOf(() => fp8({ descale: 2 as never })).code).toBe('ATTN_DESCALE');
    expect(codeOf(() => fp8({ descale: { ...ONE, o: 1 } as never })).message).toMatch(/keys q, k and v only; got o/);
    expect(fp8({ descale: { q: Number.MIN_VALUE, k: 1e300, v: 448 } }).descale).toEqual({
      q: Number.MIN_VALUE,
      k: 1e300,
      v: 448,
    });
  });

  it('refuses requiresGrad (ATTN_FLOAT8): the fp8 forward has no backward', () => {
    const e = codeOf(() => fp8({ requiresGrad: true }));
    expect(e.code).toBe('ATTN_FLOAT8');
    expect(e.message).toMatch(/no backward/);
    expect(fp8({ requiresGrad: false }).requiresGrad).toBe(false);
  });

  it('refuses sdpaVarlen and sdpaKvCache (ATTN_FLOAT8), which have no fp8 forward yet', () => {
    const t = zeros([4, 2, 8], { dtype: 'float8_e4m3' });
    const offs = tensor([0, 2, 4], [3], { dtype: 'int32' });
    const varlen = codeOf(() =>
      normalizeVarlenParams(t, t, t, { cuSeqlensQ: offs, cuSeqlensK: offs, maxSeqlenQ: 2, maxSeqlenK: 2 }),
    );
    expect(varlen).toMatchObject({ code: 'ATTN_FLOAT8' });
    expect(varlen.message).toMatch(/sdpaVarlen does not take float8_e4m3 inputs/);
    // descale is no sdpaVarlen option at all.
    expect(
      codeOf(() =>
        normalizeVarlenParams(t, t, t, {
          cuSeqlensQ: offs,
          cuSeqlensK: offs,
          maxSeqlenQ: 2,
          maxSeqlenK: 2,
          descale: ONE,
        } as never),
      ).code,
    ).toBe('ATTN_OPTION');
    const q = zeros([1, 1, 2, 8], { dtype: 'float8_e4m3' });
    const cache = zeros([1, 4, 2, 8], { dtype: 'float8_e4m3' });
    const kv = codeOf(() => normalizeKvCacheParams(q, cache, cache));
    expect(kv.code).toBe('ATTN_FLOAT8');
    expect(kv.message).toMatch(/sdpaKvCache does not take float8_e4m3 inputs/);
  });

  it('takes a bool mask and refuses an additive one, float32 or float8_e4m3 (ATTN_MASK_DTYPE)', () => {
    expect(fp8({ attnMask: zeros([3, 5], { dtype: 'bool' }) }).mask?.kind).toBe('bool');
    for (const dtype of ['float32', 'float8_e4m3'] as DType[]) {
      const e = codeOf(() => fp8({ attnMask: zeros([3, 5], { dtype }) }));
      expect(e.code).toBe('ATTN_MASK_DTYPE');
      expect(e.message).toMatch(/attnMask must be bool/);
    }
  });

  it('wants a bfloat16 out (ATTN_OUT)', () => {
    expect(fp8({ out: empty([1, 2, 3, 8], { dtype: 'bfloat16' }) }).out?.dtype).toBe('bfloat16');
    for (const dtype of ['float32', 'float8_e4m3'] as DType[]) {
      const e = codeOf(() => fp8({ out: empty([1, 2, 3, 8], { dtype }) }));
      expect(e.code).toBe('ATTN_OUT');
      expect(e.message).toMatch(/out must be bfloat16 \[1, 2, 3, 8\]/);
    }
  });

  it('refuses sdpaBackward of an fp8 forward and sdpaBackwardFrom on fp8 inputs (ATTN_FLOAT8)', () => {
    const grads = (p: SdpaParams) => ({
      dq: zeros(p.query.shape, { dtype: p.dtype }),
      dk: zeros(p.key.shape, { dtype: p.dtype }),
      dv: zeros(p.value.shape, { dtype: p.dtype }),
    });
    registerBackend(makeFakeBackend('fp8', { float8Inputs: true, backward: grads, backwardFrom: { run: grads } }));
    const fwd = sdpaForward(...qkv(), { descale: ONE });
    const e = codeOf(() => sdpaBackward(zeros([1, 2, 3, 8], { dtype: 'bfloat16' }), fwd));
    expect(e.code).toBe('ATTN_FLOAT8');
    expect(e.message).toMatch(/^sdpaBackward: the float8_e4m3 forward has no backward/);
    const saved = { out: zeros([1, 2, 3, 8], { dtype: 'bfloat16' }), logsumexp: zeros([1, 2, 3]) };
    const from = codeOf(() =>
      sdpaBackwardFrom(...qkv(), saved, zeros([1, 2, 3, 8], { dtype: 'bfloat16' }), { descale: ONE }),
    );
    expect(from.code).toBe('ATTN_FLOAT8');
    expect(from.message).toMatch(/^sdpaBackwardFrom: the float8_e4m3 forward has no backward/);
  });

  it('describes the call with the inputs dtype, the factors and the output dtype', () => {
    const text = describeCall(fp8({ descale: { q: 0.5, k: 2, v: 4 }, isCausal: true }));
    expect(text).toMatch(
      /^float8_e4m3 q\[1, 2, 3, 8\] k\[1, 2, 5, 8\] v\[1, 2, 5, 8\], descale q 0.5, k 2, v 4, bfloat16 out/,
    );
  });
});

describe('float8Inputs selection rule', () => {
  it('declines fp8 calls for every backend without float8Inputs, naming its dtypes and who takes fp8', () => {
    registerBackend(makeFakeBackend('plain', { priority: 10, rules: [dtypeIn(['float16', 'bfloat16'])] }));
    registerBackend(makeFakeBackend('bare', { priority: 5 }));
    registerBackend(makeFakeBackend('fp8', { priority: 0, float8Inputs: true }));
    const report = explain(...qkv(), { descale: ONE });
    expect(report.selected).toBe('fp8');
    const byName = Object.fromEntries(report.candidates.map((c) => [c.backend, c]));
    // dtypeIn passes (params.dtype is bfloat16): the core rule alone declines.
    expect(byName.plain!.reasons.map((r) => r.rule)).toEqual(['float8Inputs']);
    expect(byName.plain!.reasons[0]!.message).toMatch(
      /^Takes query, key and value of dtype dtypeIn\(float16, bfloat16\), not float8_e4m3: dequantize .* \(fp8\)\.$/,
    );
    expect(byName.bare!.reasons[0]!.message).toMatch(/of dtype float64, float32, float16, bfloat16, not float8_e4m3/);
    expect(byName.fp8!.reasons).toEqual([]);
    expect(sdpaForward(...qkv(), { descale: ONE }).backend).toBe('fp8');
    // bf16 calls never meet the rule.
    expect(explain(...qkv('bfloat16')).candidates.every((c) => c.reasons.length === 0)).toBe(true);
  });

  it('throws NoBackendError listing float8Inputs when no backend takes fp8 (no fallback to another dtype)', () => {
    const plain = makeFakeBackend('plain');
    registerBackend(plain);
    let error: unknown;
    try {
      sdpa(...qkv(), { descale: ONE });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(NoBackendError);
    const report = (error as NoBackendError).report;
    expect(report.candidates[0]!.reasons[0]!.rule).toBe('float8Inputs');
    expect(report.candidates[0]!.reasons[0]!.message).toMatch(/none is registered for cpu/);
    expect((error as Error).message).toMatch(/float8Inputs/);
    expect(plain.calls).toHaveLength(0);
  });

  it('is asked on the async entry point and with a kernel option too', async () => {
    const kernelRules: Rule[] = [];
    registerBackend(
      makeFakeBackend('plain', {
        kernels: [{ name: 'k1', description: 'test kernel' }],
        rules: kernelRules,
        forwardAsync: async (p) => nanOutputs(p),
      }),
    );
    await expect(sdpaForwardAsync(...qkv(), { descale: ONE })).rejects.toBeInstanceOf(NoBackendError);
    const report = explain(...qkv(), { descale: ONE, kernel: 'k1' });
    expect(report.candidates[0]!.reasons.map((r) => r.rule)).toEqual(['float8Inputs']);
  });
});

describe('call cache with float8_e4m3', () => {
  it('never shares a selection between an fp8 call and a bf16 call of one shape', () => {
    const plain = makeFakeBackend('plain', { priority: 10 });
    const f8 = makeFakeBackend('fp8', { priority: 0, float8Inputs: true });
    registerBackend(plain);
    registerBackend(f8);
    for (let round = 0; round < 2; round++) {
      expect(sdpaForward(...qkv('bfloat16')).backend).toBe('plain');
      expect(sdpaForward(...qkv(), { descale: ONE }).backend).toBe('fp8');
    }
    expect(callCacheSize()).toBe(2);
    expect(plain.calls.every((p) => p.descale === null && p.query.dtype === 'bfloat16')).toBe(true);
    expect(f8.calls.every((p) => p.descale !== null && p.query.dtype === 'float8_e4m3')).toBe(true);
  });

  it('declines a cached-shape fp8 call when only a bf16 backend is registered, in either order', () => {
    registerBackend(makeFakeBackend('plain'));
    expect(sdpaForward(...qkv('bfloat16')).backend).toBe('plain');
    expect(() => sdpaForward(...qkv(), { descale: ONE })).toThrow(NoBackendError);
    expect(() => sdpaForward(...qkv(), { descale: ONE })).toThrow(NoBackendError);
    expect(sdpaForward(...qkv('bfloat16')).backend).toBe('plain');
  });

  it('checks and passes each call its own factors on a cached signature', () => {
    const f8 = makeFakeBackend('fp8', { float8Inputs: true });
    registerBackend(f8);
    sdpaForward(...qkv(), { descale: { q: 1, k: 2, v: 3 } });
    sdpaForward(...qkv(), { descale: { q: 4, k: 5, v: 6 } });
    expect(callCacheSize()).toBe(1);
    expect(f8.calls.map((p) => p.descale)).toEqual([
      { q: 1, k: 2, v: 3 },
      { q: 4, k: 5, v: 6 },
    ]);
    expect(Object.isFrozen(f8.calls[1]!.descale)).toBe(true);
    expect(codeOf(() => sdpaForward(...qkv(), { descale: { q: 1, k: -2, v: 3 } })).code).toBe('ATTN_DESCALE');
    expect(codeOf(() => sdpaForward(...qkv())).code).toBe('ATTN_DESCALE');
    registerBackend(makeFakeBackend('plain', { priority: 10 }));
    sdpaForward(...qkv('bfloat16'));
    expect(codeOf(() => sdpaForward(...qkv('bfloat16'), { descale: ONE })).code).toBe('ATTN_DESCALE');
  });
});
