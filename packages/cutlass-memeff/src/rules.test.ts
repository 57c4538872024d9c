// Which calls 'memeff-cuda' declines, and that it declines nothing PyTorch's mem-eff alignment rule
// would (odd head dims run on the FMA path).
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import { normalizeParams, randn, registerDeviceRuntime, type DeviceProperties, type FloatDType, type RuleContext, type SdpaOptions } from '@attn/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { memeffRules } from './rules.js';

beforeAll(() => registerDeviceRuntime(makeFakeDeviceRuntime({ type: 'cuda' })));

const sm = (major: number, minor: number): RuleContext => ({ device: { type: 'cuda', major, minor } as DeviceProperties });

function failing(opts: SdpaOptions, s: Partial<{ dtype: FloatDType; D: number; Dv: number; Hk: number }> = {}, ctx = sm(9, 0)): string[] {
  const dev = { dtype: s.dtype ?? 'float32', device: 'cuda' as const };
  const q = randn([2, 4, 5, s.D ?? 8], dev);
  const k = randn([2, s.Hk ?? 4, 7, s.D ?? 8], dev);
  const v = randn([2, s.Hk ?? 4, 7, s.Dv ?? s.D ?? 8], dev);
  const p = normalizeParams(q, k, v, opts);
  // builtForDevice asks the addon and the driver: the GPU tests cover it.
  return memeffRules.filter((r) => r.name !== 'builtForDevice' && r.check(p, ctx) !== null).map((r) => r.name);
}

describe('memeff-cuda rules', () => {
  it('accept every dtype, odd and unequal head dims, GQA, masks, causal both ways, dropout', () => {
    for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
      expect(failing({}, { dtype, D: 7, Dv: 13 })).toEqual([]);
    }
    expect(failing({ enableGqa: true }, { Hk: 2 })).toEqual([]);
    expect(failing({ enableGqa: true }, { Hk: 1 })).toEqual([]);
    expect(failing({ isCausal: true, alignment: 'lowerRight', dropoutP: 0.3, attnMask: randn([5, 7], { device: 'cuda' }) })).toEqual([]);
    expect(failing({}, { dtype: 'bfloat16' }, sm(5, 0))).toEqual([]);
  });

  it('decline float64, pre-sm50 GPUs, windows, ALiBi, softcap and a strided mask', () => {
    expect(failing({}, { dtype: 'float64' })).toEqual(['dtypeIn(float32, float16, bfloat16)']);
    expect(failing({}, {}, sm(3, 7))).toEqual(['smRange(50, 121)']);
    expect(failing({ window: [2, 0] })).toEqual(['noWindow']);
    expect(failing({ softcap: 30 })).toEqual(['noSoftcap']);
    expect(failing({ alibiSlopes: randn([4], { device: 'cuda' }) })).toEqual(['noAlibi']);
    const strided = randn([7, 5], { device: 'cuda' }).transpose(0, 1);
    expect(failing({ attnMask: strided })).toEqual(['lastDimContiguous(mask)']);
  });

  it('decline what the kernels cannot compute: an empty value head dim, a scale infinite in float32', () => {
    expect(failing({}, { Dv: 0 })).toEqual(['nonzeroHeadDims']);
    // 1e39 is a finite double and +Inf in float32: the kernels would compute NaN.
    expect(failing({ scale: 1e39 })).toEqual(['float32Scalars']);
    expect(failing({ scale: 3e38 })).toEqual([]);
  });
});
