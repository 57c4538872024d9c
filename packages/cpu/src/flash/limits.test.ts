// The rules decline exactly what the addon refuses: each limit of limits.ts is driven through the
// addon at the limit and one past it, and through the rules, and the two verdicts must agree.
// Selection then falls back to cpu-math for what cpu-flash cannot run, and explain says so.
import { explain, normalizeParams, randn, registerBackend, sdpa, zeros } from '@attn/core';
import { kernelWindow } from '@attn/core';
import type { SdpaOptions, SdpaParams } from '@attn/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cpuMathBackend } from '../math/backend.js';
import { createCpuFlashBackend } from './backend.js';
import { CPU_FLASH_LIMITS } from './limits.js';
import { forwardDesc, forwardOutputs } from './marshal.js';
import { addon } from './native.js';
import type { NativeForwardDesc } from './native.js';
import { cpuFlashRules } from './rules.js';
import { maxAbsDiff, TOL } from './testing.js';
import { isolateRegistry } from '@attn/core/testing';

const load = addon();

function rulesAccept(p: SdpaParams): boolean {
  return cpuFlashRules.every((r) => r.check(p, { device: null }) === null);
}

/** The addon's verdict on a descriptor: null when it ran, else its error message. */
function addonVerdict(desc: NativeForwardDesc): string | null {
  if (!load.ok) throw new Error(load.reason);
  try {
    load.addon.forward(desc);
    return null;
  } catch (e) {
    expect((e as { code?: string }).code).toBe('ATTN_CPU_FLASH_ARGS');
    return (e as Error).message;
  }
}

function call(dims: { Sq?: number; Sk?: number; D?: number; Dv?: number } = {}, opts: SdpaOptions = {}): SdpaParams {
  const { Sq = 3, Sk = 5, D = 8, Dv = D } = dims;
  return normalizeParams(
    randn([1, 2, Sq, D], { seed: 1 }),
    randn([1, 2, Sk, D], { seed: 2 }),
    randn([1, 2, Sk, Dv], { seed: 3 }),
    opts,
  );
}

function descOf(p: SdpaParams): NativeForwardDesc {
  const o = forwardOutputs(p);
  return forwardDesc(p, o.out, o.logsumexp, 'auto', 1);
}

describe.skipIf(!load.ok)('cpu-flash limits, against the addon', () => {
  it('head dims: 1 .. maxHeadDim run; 0 and maxHeadDim + 1 are declined by the rules and refused by the addon', () => {
    const { minHeadDim, maxHeadDim } = CPU_FLASH_LIMITS;
    for (const [dims, ok] of [
      [{ Dv: minHeadDim }, true],
      [{ Dv: minHeadDim - 1 }, false],
      [{ Sq: 1, Sk: 1, D: maxHeadDim }, true],
      [{ Sq: 1, Sk: 1, D: maxHeadDim + 1 }, false],
      [{ Sq: 1, Sk: 1, D: 8, Dv: maxHeadDim + 1 }, false],
    ] as const) {
      const p = call(dims);
      expect(rulesAccept(p), JSON.stringify(dims)).toBe(ok);
      expect(addonVerdict(descOf(p)) === null, JSON.stringify(dims)).toBe(ok);
    }
  });

  it('scale and softcap: finite in float32 runs, finite only as a double is declined and refused', () => {
    for (const [opts, ok] of [
      [{ scale: 3.4e38 }, true],
      [{ scale: 1e39 }, false],
      [{ scale: -1e39 }, false],
      [{ softcap: 3.4e38 }, true],
      [{ softcap: 1e39 }, false],
    ] as const) {
      const p = call({}, opts);
      expect(rulesAccept(p), JSON.stringify(opts)).toBe(ok);
      expect(addonVerdict(descOf(p)) === null, JSON.stringify(opts)).toBe(ok);
    }
  });

  it('window sides: maxWindow runs, one more is refused; a side reaching every key is sent as unbounded', () => {
    const base = descOf(call());
    expect(addonVerdict({ ...base, windowLeft: CPU_FLASH_LIMITS.maxWindow })).toBeNull();
    expect(addonVerdict({ ...base, windowLeft: CPU_FLASH_LIMITS.maxWindow + 1 })).toMatch(
      `windowLeft must be an integer in [-1, ${CPU_FLASH_LIMITS.maxWindow}]`,
    );
    expect(addonVerdict({ ...base, windowRight: CPU_FLASH_LIMITS.maxWindow + 1 })).toMatch(
      `windowRight must be an integer in [-1, ${CPU_FLASH_LIMITS.maxWindow}]`,
    );
    const huge = call({}, { window: [2 ** 40, 0] });
    expect(kernelWindow(huge)).toEqual({ left: -1, right: 0 });
    expect(rulesAccept(huge)).toBe(true);
  });

  it('sizes past maxDim: the addon names the same limit the rules use', () => {
    const base = descOf(call());
    for (const key of ['B', 'Hq', 'Hk', 'Sq', 'Sk'] as const) {
      expect(addonVerdict({ ...base, [key]: CPU_FLASH_LIMITS.maxDim + 1 })).toMatch(
        `${key} must be an integer in [1, ${CPU_FLASH_LIMITS.maxDim}]`,
      );
    }
  });
});

describe.skipIf(!load.ok)('selection falls back where cpu-flash declines, and explain agrees', () => {
  let restore: () => void;
  beforeEach(() => {
    restore = isolateRegistry();
    registerBackend(cpuMathBackend);
    registerBackend(createCpuFlashBackend({ threads: 1 }));
  });
  afterEach(() => restore());

  it.each([
    ['Dv = 0', { Dv: 0 }, {}],
    ['scale 1e39', {}, { scale: 1e39 }],
    ['softcap 1e39', {}, { softcap: 1e39 }],
  ] as const)('%s runs on cpu-math', (_what, dims, opts) => {
    const { Sq = 3, Sk = 5, D = 8, Dv = D } = dims as { Sq?: number; Sk?: number; D?: number; Dv?: number };
    const q = randn([1, 2, Sq, D], { seed: 1 });
    const k = randn([1, 2, Sk, D], { seed: 2 });
    const v = Dv === 0 ? zeros([1, 2, Sk, 0]) : randn([1, 2, Sk, Dv], { seed: 3 });
    const report = explain(q, k, v, opts);
    expect(report.selected).toBe('cpu-math');
    expect(() => sdpa(q, k, v, opts)).not.toThrow();
  });

  it('window [2**40, 0] runs on cpu-flash, equal to an unbounded left side', () => {
    const q = randn([1, 2, 9, 8], { seed: 1 });
    const k = randn([1, 2, 9, 8], { seed: 2 });
    const v = randn([1, 2, 9, 8], { seed: 3 });
    expect(explain(q, k, v, { window: [2 ** 40, 0] }).selected).toBe('cpu-flash');
    const got = sdpa(q, k, v, { window: [2 ** 40, 0] });
    const want = sdpa(q, k, v, { window: [-1, 0], backends: ['cpu-math'] });
    expect(maxAbsDiff(got, want)).toBeLessThan(TOL.float32);
  });
});
