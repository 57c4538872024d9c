// Which calls 'memeff-cuda' declines, and that it declines nothing PyTorch's mem-eff alignment rule
// would (odd head dims run on the FMA path) nor any of the seeds' features (windows, ALiBi, softcap, varlen).
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import {
  normalizeParams,
  normalizeVarlenParams,
  randn,
  registerDeviceRuntime,
  tensor,
  type DeviceProperties,
  type FloatDType,
  type RuleContext,
  type SdpaOptions,
} from '@attn/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { memeffRules } from './rules.js';

beforeAll(() => registerDeviceRuntime(makeFakeDeviceRuntime({ type: 'cuda' })));

const sm = (major: number, minor: number): RuleContext => ({
  device: { type: 'cuda', major, minor } as DeviceProperties,
});

function failing(
  opts: SdpaOptions,
  s: Partial<{ dtype: FloatDType; D: number; Dv: number; Hk: number }> = {},
  ctx = sm(9, 0),
): string[] {
  const dev = { dtype: s.dtype ?? 'float32', device: 'cuda' as const };
  const q = randn([2, 4, 5, s.D ?? 8], dev);
  const k = randn([2, s.Hk ?? 4, 7, s.D ?? 8], dev);
  const v = randn([2, s.Hk ?? 4, 7, s.Dv ?? s.D ?? 8], dev);
  const p = normalizeParams(q, k, v, opts);
  // builtForDevice asks the addon and the driver: the GPU tests cover it.
  return memeffRules.filter((r) => r.name !== 'builtForDevice' && r.check(p, ctx) !== null).map((r) => r.name);
}

describe('memeff-cuda rules', () => {
  it('decline unchecked index values (graph capture, indexValuesOnDevice) only with device-read index tensors (its kernels do not clamp them)', () => {
    const rule = memeffRules.find((r) => r.name === 'noUncheckedIndexValues')!;
    const dev = { device: 'cuda' as const };
    const dense = normalizeParams(randn([1, 2, 5, 8], dev), randn([1, 2, 7, 8], dev), randn([1, 2, 7, 8], dev), {});
    const used = normalizeParams(randn([1, 2, 5, 8], dev), randn([1, 2, 7, 8], dev), randn([1, 2, 7, 8], dev), {
      sequsedK: tensor([3], [1], { dtype: 'int32', device: 'cuda' }),
    });
    expect(rule.check({ ...dense, capturing: true }, sm(9, 0))).toBeNull();
    expect(rule.check(used, sm(9, 0))).toBeNull();
    expect(rule.check({ ...dense, capturing: true, indexValuesOnDevice: true }, sm(9, 0))).toBeNull();
    expect(rule.check({ ...used, capturing: true, indexValuesOnDevice: true }, sm(9, 0))).toMatch(
      /capture this call with flash-cuda/,
    );
    expect(rule.check({ ...used, indexValuesOnDevice: true }, sm(9, 0))).toMatch(/indexValuesOnDevice/);
  });

  it('accept every dtype, odd and unequal head dims, GQA, masks, causal both ways, dropout', () => {
    for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
      expect(failing({}, { dtype, D: 7, Dv: 13 })).toEqual([]);
    }
    expect(failing({ enableGqa: true }, { Hk: 2 })).toEqual([]);
    expect(failing({ enableGqa: true }, { Hk: 1 })).toEqual([]);
    expect(
      failing({ isCausal: true, alignment: 'lowerRight', dropoutP: 0.3, attnMask: randn([5, 7], { device: 'cuda' }) }),
    ).toEqual([]);
    expect(failing({}, { dtype: 'bfloat16' }, sm(5, 0))).toEqual([]);
  });

  it("accept the seeds' features: windows both ways, ALiBi, softcap, mask with causal and window, dropout, empty sequences", () => {
    expect(failing({ window: [2, 0] })).toEqual([]);
    expect(failing({ window: [3, -1], alignment: 'lowerRight' })).toEqual([]);
    expect(
      failing({ window: [-1, 2], isCausal: true, attnMask: randn([5, 7], { device: 'cuda' }), dropoutP: 0.2 }),
    ).toEqual([]);
    expect(failing({ softcap: 30, alibiSlopes: randn([4], { device: 'cuda' }) })).toEqual([]);
    expect(
      failing({ alibiSlopes: randn([2, 4], { device: 'cuda' }), isCausal: true, alignment: 'lowerRight' }),
    ).toEqual([]);
    for (const dtype of ['float32', 'float16', 'bfloat16'] as const)
      expect(failing({ window: [4, 4], softcap: 5 }, { dtype })).toEqual([]);
    const dev = { device: 'cuda' as const };
    const empty = normalizeParams(randn([2, 4, 5, 8], dev), randn([2, 4, 0, 8], dev), randn([2, 4, 0, 8], dev));
    expect(
      memeffRules.filter((r) => r.name !== 'builtForDevice' && r.check(empty, sm(9, 0)) !== null).map((r) => r.name),
    ).toEqual([]);
  });

  it('accept varlen', () => {
    const dev = { device: 'cuda' as const };
    const q = randn([9, 4, 8], dev);
    const kv = randn([12, 2, 8], dev);
    const cu = (xs: number[]) => tensor(xs, [xs.length], { dtype: 'int32', device: 'cuda' });
    const opts = {
      cuSeqlensQ: cu([0, 4, 4, 9]),
      cuSeqlensK: cu([0, 5, 7, 12]),
      maxSeqlenQ: 5,
      maxSeqlenK: 5,
      enableGqa: true,
      window: [2, 1] as const,
    };
    const p = normalizeVarlenParams(q, kv, kv, opts);
    const names = (x: typeof p) =>
      memeffRules.filter((r) => r.name !== 'builtForDevice' && r.check(x, sm(9, 0)) !== null).map((r) => r.name);
    expect(names(p)).toEqual([]);
    expect(names(normalizeVarlenParams(q, kv, kv, { ...opts, sequsedK: cu([5, 0, 3]) }))).toEqual([]);
  });

  it('accept sequsedK on dense calls', () => {
    expect(
      failing({
        sequsedK: tensor([7, 0], [2], { dtype: 'int32', device: 'cuda' }),
        isCausal: true,
        alignment: 'lowerRight',
      }),
    ).toEqual([]);
  });

  it('decline float64, pre-sm50 GPUs, a strided mask and a softcap float32 cannot hold', () => {
    expect(failing({}, { dtype: 'float64' })).toEqual(['dtypeIn(float32, float16, bfloat16)']);
    expect(failing({}, {}, sm(3, 7))).toEqual(['smRange(50, 121)']);
    const strided = randn([7, 5], { device: 'cuda' }).transpose(0, 1);
    expect(failing({ attnMask: strided })).toEqual(['lastDimContiguous(mask)']);
    expect(failing({ softcap: 1e-40 })).toEqual(['softcapInFloat32']);
    expect(failing({ softcap: 1e-30, scale: 1e10 })).toEqual(['softcapInFloat32']);
    expect(failing({ softcap: 1e-30, scale: 1e-20 })).toEqual([]);
  });

  it('decline what the kernels cannot compute: an empty value head dim, a scale infinite in float32', () => {
    expect(failing({}, { Dv: 0 })).toEqual(['nonzeroHeadDims']);
    // 1e39 is a finite double and +Inf in float32: the kernels would compute NaN.
    expect(failing({ scale: 1e39 })).toEqual(['float32Scalars']);
    expect(failing({ scale: 3e38 })).toEqual([]);
  });

  it('decline a backward above head dim 256 (its FMA gradients exceed the accuracy rule there), not the forward', () => {
    expect(failing({ requiresGrad: true }, { dtype: 'bfloat16', D: 512 })).toEqual(['backwardHeadDimAtMost(256)']);
    expect(failing({ requiresGrad: true }, { D: 8, Dv: 264 })).toEqual(['backwardHeadDimAtMost(256)']);
    expect(failing({}, { D: 512 })).toEqual([]);
    expect(failing({ requiresGrad: true }, { dtype: 'bfloat16', D: 256 })).toEqual([]);
  });
});
