// The rules decline exactly what the addon refuses: limits.ts against the addon's mathLimits(), and
// each limit driven through the rules and through the addon at the limit and one past it. The addon's
// own checks (shapes, dtypes, byte ranges against the allocator) refuse a wrong argument object with
// a coded error instead of reading or writing outside a buffer. Needs the built addon and a device.
import { AttnInputError, normalizeParams, randn, type SdpaParams } from '@attn/core';
import { describe, expect, it } from 'vitest';
import '../index.js';
import { mathLoad, type MathForwardArgs } from './binding.js';
import { forwardArgs } from './launch-args.js';
import { CUDA_MATH_LIMITS } from './limits.js';
import { cudaMathRules } from './rules.js';
import { runForward } from './run.js';

const load = mathLoad();
if (!load.ok) console.log(`[@attn/cuda] cuda-math limits suite skipped: ${load.reason}`);

function rulesAccept(p: SdpaParams): boolean {
  return cudaMathRules.every((r) => r.check(p, { device: null, deviceUnknownReason: 'not needed' }) === null);
}

function call(D: number, Dv = D): SdpaParams {
  const dev = { device: 'cuda' as const, dtype: 'float32' as const };
  return normalizeParams(
    randn([1, 2, 3, D], { ...dev, seed: 1 }),
    randn([1, 2, 5, D], { ...dev, seed: 2 }),
    randn([1, 2, 5, Dv], { ...dev, seed: 3 }),
  );
}

/** The addon's verdict: null when it ran, else its error (message and code). */
function addonVerdict(args: MathForwardArgs): { code: string; message: string } | null {
  if (!load.ok) throw new Error(load.reason);
  try {
    load.addon.mathForward(args);
    return null;
  } catch (e) {
    return { code: String((e as { code?: unknown }).code), message: (e as Error).message };
  }
}

/** The arguments of p with outputs of the right size (made by running it once). */
function argsOf(p: SdpaParams): MathForwardArgs {
  const { out, logsumexp } = runForward(p).outputs;
  return forwardArgs(p, out, logsumexp);
}

describe.skipIf(!load.ok)('cuda-math limits, against the addon', () => {
  it('limits.ts states the addon limits', () => {
    if (!load.ok) return;
    const native = load.addon.mathLimits();
    expect({ maxHeadDim: native.maxHeadDim, maxSeq: native.maxSeq }).toEqual({ ...CUDA_MATH_LIMITS });
  });

  it('head dims: maxHeadDim runs; one more is declined by the rules and refused by the addon', () => {
    const { maxHeadDim } = CUDA_MATH_LIMITS;
    const ok = call(maxHeadDim);
    expect(rulesAccept(ok)).toBe(true);
    expect(addonVerdict(argsOf(ok))).toBeNull();
    for (const [D, Dv, field] of [
      [maxHeadDim + 1, maxHeadDim + 1, 'headDim'],
      [8, maxHeadDim + 1, 'headDimV'],
    ] as const) {
      const p = call(D, Dv);
      expect(rulesAccept(p)).toBe(false);
      // The arguments of a valid call with the head dims changed: the addon checks them first.
      const args = { ...argsOf(call(8)), headDim: D, headDimV: Dv };
      expect(addonVerdict(args)).toMatchObject({
        code: 'ATTN_BAD_ARGUMENT',
        message: expect.stringContaining(`'${field}' must be an integer in [`) as string,
      });
    }
  });

  it('lengths: maxSeq is the addon bound too (one more is refused before any tensor is read)', () => {
    const args = argsOf(call(8));
    expect(addonVerdict({ ...args, seqQ: CUDA_MATH_LIMITS.maxSeq + 1 })?.message).toContain(
      `'seqQ' must be an integer in [0, ${CUDA_MATH_LIMITS.maxSeq}]`,
    );
    expect(addonVerdict({ ...args, seqK: CUDA_MATH_LIMITS.maxSeq + 1 })?.message).toContain(
      `'seqK' must be an integer in [0, ${CUDA_MATH_LIMITS.maxSeq}]`,
    );
    const p = call(8);
    expect(rulesAccept({ ...p, seqK: CUDA_MATH_LIMITS.maxSeq })).toBe(true);
    expect(rulesAccept({ ...p, seqK: CUDA_MATH_LIMITS.maxSeq + 1 })).toBe(false);
  });

  it('the key kernel tile shrinks with the head dims to fit its shared memory, down to one key at 1024 in float64', () => {
    if (!load.ok) return;
    expect(load.addon.mathKeyTile(64, 64, false)).toBe(32);
    expect(load.addon.mathKeyTile(1024, 1024, true)).toBe(1);
    expect(load.addon.mathKeyTile(512, 512, true)).toBe(4); // (4 * 1026 + 1024) * 8 bytes fit 48 KiB, 8 keys would not
  });

  it('refuses an argument object whose tensors do not fit the call or their buffers', () => {
    const args = argsOf(call(8));
    // Inside its buffer but not the call's shape or dtype: refused by the shape check.
    expect(addonVerdict({ ...args, q: { ...args.q, shape: [1, 2, 2, 8] } })).toMatchObject({
      code: 'ATTN_BAD_ARGUMENT',
    });
    expect(addonVerdict({ ...args, q: { ...args.q, dtype: 2 } })).toMatchObject({ code: 'ATTN_BAD_ARGUMENT' });
    // Past its buffer: refused by the range check.
    expect(addonVerdict({ ...args, q: { ...args.q, shape: [1, 2, 4, 8] } })).toMatchObject({
      code: 'ATTN_OUT_OF_BOUNDS',
    });
    expect(addonVerdict({ ...args, k: { ...args.k, strides: [80, 1e6, 8, 1] } })).toMatchObject({
      code: 'ATTN_OUT_OF_BOUNDS',
    });
    expect(addonVerdict({ ...args, out: { ...args.out, ptr: args.out.ptr + 4n } })).toMatchObject({
      code: 'ATTN_OUT_OF_BOUNDS',
    });
    expect(addonVerdict({ ...args, cuSeqlensQ: Int32Array.of(0, 3), cuSeqlensK: null })?.message).toContain(
      'come together',
    );
    // Through the backend, such an error is core's AttnInputError with the addon's message.
    expect(() => runForward({ ...call(8), headDim: CUDA_MATH_LIMITS.maxHeadDim + 1 })).toThrow(AttnInputError);
  });
});
